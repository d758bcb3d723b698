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

// A feature as valid UTF-8 (a character n-gram may cut a character): stray bytes as \xNN.
std::string printable(std::string_view s) {
  std::string out;
  for (std::size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    std::size_t len = c < 0x80 ? 1 : (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : (c & 0xF8) == 0xF0 ? 4 : 0;
    bool ok = len > 0 && i + len <= s.size();
    for (std::size_t k = 1; ok && k < len; ++k) ok = (static_cast<unsigned char>(s[i + k]) & 0xC0) == 0x80;
    if (ok && len == 1 && c < 0x20) ok = false;
    if (ok) {
      out.append(s.substr(i, len));
      i += len;
    } else {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02X", c);
      out += buf;
      ++i;
    }
  }
  return out;
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
    if (options.explain > 0) {
      const Explanation e = detector->explain(std::string_view(s.data(), s.size()), options.explain);
      std::string o;
      char num[160];
      std::snprintf(num, sizeof num, "{\"score\":%.4f,\"verdict\":\"%s\",\"bias\":%.4f,\"features\":[", e.score,
                    e.score >= threshold ? "injection" : "benign", e.bias);
      o += num;
      for (std::size_t k = 0; k < e.top.size(); ++k) {
        const auto& f = e.top[k];
        o += k ? ",{\"feature\":" : "{\"feature\":";
        appendJsonString(o, printable(f.feature));
        std::snprintf(num, sizeof num, ",\"kind\":\"%s\",\"count\":%d,\"logit\":%.4f}", f.kind, f.count, f.logit);
        o += num;
      }
      o += "]}\n";
      out << o;
      if (in.rdbuf()->in_avail() <= 0) out.flush();
      continue;
    }
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
