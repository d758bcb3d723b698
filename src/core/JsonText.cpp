#include "core/JsonText.hpp"

#include <boost/json/error.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/value.hpp>

#include <array>

namespace sluice {

namespace {
// 1 for bytes that need escaping in a JSON string, 2 for the lead of a multi-byte sequence
// (checked, so the output is always valid UTF-8).
constexpr auto kClass = [] {
  std::array<unsigned char, 256> t{};
  for (int i = 0; i < 0x20; ++i) t[i] = 1;
  t['"'] = 1;
  t['\\'] = 1;
  for (int i = 0x80; i < 0x100; ++i) t[i] = 2;
  return t;
}();

// Length of the well-formed UTF-8 sequence at s[i] (RFC 3629: no overlongs, no surrogates,
// nothing above U+10FFFF), or 0.
std::size_t utf8Length(std::string_view s, std::size_t i) {
  auto b = [&](std::size_t k) { return static_cast<unsigned char>(s[i + k]); };
  auto cont = [&](std::size_t k) { return i + k < s.size() && (b(k) & 0xC0) == 0x80; };
  unsigned char c = b(0);
  if (c >= 0xC2 && c <= 0xDF) return cont(1) ? 2 : 0;
  if (c >= 0xE0 && c <= 0xEF) {
    if (!cont(1) || !cont(2)) return 0;
    if (c == 0xE0 && b(1) < 0xA0) return 0;   // overlong
    if (c == 0xED && b(1) >= 0xA0) return 0;  // surrogate
    return 3;
  }
  if (c >= 0xF0 && c <= 0xF4) {
    if (!cont(1) || !cont(2) || !cont(3)) return 0;
    if (c == 0xF0 && b(1) < 0x90) return 0;   // overlong
    if (c == 0xF4 && b(1) >= 0x90) return 0;  // above U+10FFFF
    return 4;
  }
  return 0;
}
}  // namespace

void appendJsonString(std::string& out, std::string_view s) {
  static constexpr char kHex[] = "0123456789abcdef";
  out.push_back('"');
  std::size_t run = 0;
  for (std::size_t i = 0; i < s.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    unsigned char cls = kClass[c];
    if (cls == 0) continue;
    if (cls == 2) {
      if (auto n = utf8Length(s, i)) {
        i += n - 1;  // a valid character: stays in the run
        continue;
      }
      // Not UTF-8 (a body cut mid-character, a non-UTF-8 upstream): U+FFFD keeps the JSON valid.
      out.append(s.data() + run, i - run);
      run = i + 1;
      out.append("\\ufffd");
      continue;
    }
    out.append(s.data() + run, i - run);
    run = i + 1;
    switch (c) {
      case '"':
        out.append("\\\"");
        break;
      case '\\':
        out.append("\\\\");
        break;
      case '\n':
        out.append("\\n");
        break;
      case '\r':
        out.append("\\r");
        break;
      case '\t':
        out.append("\\t");
        break;
      case '\b':
        out.append("\\b");
        break;
      case '\f':
        out.append("\\f");
        break;
      default:
        out.append("\\u00");
        out.push_back(kHex[(c >> 4) & 0xf]);
        out.push_back(kHex[c & 0xf]);
    }
  }
  out.append(s.data() + run, s.size() - run);
  out.push_back('"');
}

boost::json::parse_options jsonParseOptions() {
  boost::json::parse_options o;
  o.max_depth = kMaxJsonDepth;
  return o;
}

boost::json::value parseJson(std::string_view text, boost::system::error_code& ec, boost::json::storage_ptr sp) {
  return boost::json::parse(text, ec, std::move(sp), jsonParseOptions());
}

bool isTooDeep(const boost::system::error_code& ec) { return ec == boost::json::error::too_deep; }

std::string tooDeepMessage(std::string_view what) {
  std::string out(what);
  out.append(" is nested deeper than ").append(std::to_string(kMaxJsonDepth));
  out.append(" levels of arrays and objects, the gateway's limit: flatten it");
  return out;
}

std::vector<std::string> jsonStringArray(std::string_view text) {
  std::vector<std::string> out;
  boost::system::error_code ec;
  auto v = parseJson(text, ec);
  if (ec || !v.is_array()) return out;
  for (const auto& e : v.as_array())
    if (e.is_string() && !e.as_string().empty()) out.emplace_back(e.as_string());
  return out;
}

}  // namespace sluice
