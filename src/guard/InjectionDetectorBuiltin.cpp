// InjectionDetector::builtin(), apart from the rest so that the trainer (sluice_train_screen),
// which writes the model file, does not need one to build.
#include "guard/InjectionDetector.hpp"

// The bytes of models/injection.model, generated at build time (tools/embed_file.cmake).
namespace sluice::guard::embedded {
extern const unsigned char kInjectionModel[];
extern const std::size_t kInjectionModelSize;
}  // namespace sluice::guard::embedded

namespace sluice::guard {

InjectionDetector InjectionDetector::builtin() {
  // Parsed once, on first use; every copy shares the weights.
  static const InjectionDetector detector{parseInjectionModel(
      std::string_view(reinterpret_cast<const char*>(embedded::kInjectionModel), embedded::kInjectionModelSize),
      "(built in)")};
  return detector;
}

}  // namespace sluice::guard
