#include "guard/ScreenCli.hpp"

#include <boost/json.hpp>

#include <cstdio>
#include <istream>
#include <ostream>

#include "core/JsonText.hpp"
#include "guard/InjectionDetector.hpp"

namespace sluice::guard {
namespace {

void writeError(std::ostream& out, std::size_t line, const std::string& why) {
  out << boost::json::serialize(boost::json::object{{"error", "line " + std::to_string(line) + ": " + why}}) << '\n';
}

}  // namespace

int runScreen(const ScreenCliOptions& options, std::istream& in, std::ostream& out, std::ostream& err) {
  std::optional<InjectionDetector> detector;
  try {
    detector = options.model_path.empty() ? InjectionDetector::builtin() : InjectionDetector::load(options.model_path);
  } catch (const std::exception& e) {
    err << "sluice screen: " << e.what() << "\n";
    return 2;
  }
  const double threshold = options.threshold.value_or(detector->threshold());
  if (!(threshold >= 0.0 && threshold <= 1.0)) {
    err << "sluice screen: --threshold must be between 0 and 1\n";
    return 2;
  }

  std::size_t bad = 0;
  std::string line;
  boost::json::parser parser(boost::json::storage_ptr(), jsonParseOptions());
  for (std::size_t n = 1; std::getline(in, line); ++n) {
    parser.reset();
    boost::system::error_code ec;
    parser.write(line, ec);
    if (ec) {
      ++bad;
      writeError(out, n, "not valid JSON (" + ec.message() + ")");
      continue;
    }
    const boost::json::value v = parser.release();
    const auto* obj = v.if_object();
    const auto* text = obj ? obj->if_contains("text") : nullptr;
    if (!obj) {
      ++bad;
      writeError(out, n, "expected a JSON object with a string field \"text\"");
      continue;
    }
    if (!text || !text->is_string()) {
      ++bad;
      writeError(out, n, text ? "field \"text\" is not a string" : "no field \"text\"");
      continue;
    }
    const auto& s = text->get_string();
    const double score = detector->score(std::string_view(s.data(), s.size()));
    char buf[96];
    std::snprintf(buf, sizeof buf, "{\"score\":%.4f,\"verdict\":\"%s\"}\n", score,
                  score >= threshold ? "injection" : "benign");
    out << buf;
    // Answer at once when the writer waits for it (a pipe fed line by line); batch otherwise.
    if (in.rdbuf()->in_avail() <= 0) out.flush();
  }
  out.flush();
  if (bad > 0) err << "sluice screen: " << bad << " bad input line" << (bad == 1 ? "" : "s") << "\n";
  return bad > 0 ? 1 : 0;
}

}  // namespace sluice::guard
