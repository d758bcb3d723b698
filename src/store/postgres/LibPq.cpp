#include "store/postgres/LibPq.hpp"

#include <dlfcn.h>

#include <string>

#include "store/Store.hpp"

namespace sluice::store {

namespace {

struct Loaded {
  LibPq lib;
  std::string error;  // empty when every function was found
};

Loaded load() {
  Loaded l;
  // Debian's libpq5; the package depends on it.
  void* h = ::dlopen("libpq.so.5", RTLD_NOW | RTLD_LOCAL);
  if (h == nullptr) {
    const char* e = ::dlerror();
    l.error = std::string("postgres: cannot load libpq (install libpq5): ") + (e ? e : "dlopen failed");
    return l;
  }
#define SLUICE_LIBPQ_RESOLVE(name)                                     \
  l.lib.name = reinterpret_cast<decltype(&::name)>(::dlsym(h, #name)); \
  if (l.lib.name == nullptr && l.error.empty()) l.error = "postgres: libpq lacks " #name;
  SLUICE_LIBPQ_FUNCTIONS(SLUICE_LIBPQ_RESOLVE)
#undef SLUICE_LIBPQ_RESOLVE
  return l;  // the handle stays open for the life of the process
}

}  // namespace

const LibPq& libpq() {
  static const Loaded loaded = load();
  if (!loaded.error.empty()) throw StoreError(StoreErrc::Unavailable, loaded.error);
  return loaded.lib;
}

}  // namespace sluice::store
