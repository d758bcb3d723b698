#include "admin/Fields.hpp"

#include <fmt/format.h>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

#include <algorithm>
#include <cmath>
#include <limits>

#include "config/Config.hpp"
#include "core/JsonText.hpp"

namespace sluice::admin {
namespace json = boost::json;

namespace {

bool hasAnyControlChar(std::string_view s) {
  return std::any_of(s.begin(), s.end(), [](char c) {
    const auto u = static_cast<unsigned char>(c);
    return u < 0x20 || u == 0x7f;
  });
}

// The integer a JSON number holds exactly, if any (5 and 5.0 both count; 5.5 does not).
std::optional<std::int64_t> exactInteger(const json::value& v) {
  if (v.is_int64()) return v.get_int64();
  if (v.is_uint64()) {
    if (v.get_uint64() > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) return std::nullopt;
    return static_cast<std::int64_t>(v.get_uint64());
  }
  if (v.is_double()) {
    const double d = v.get_double();
    if (std::isfinite(d) && std::trunc(d) == d && std::fabs(d) < 9.0e15) return static_cast<std::int64_t>(d);
  }
  return std::nullopt;
}

std::string join(std::initializer_list<std::string_view> names) {
  std::string out;
  for (auto n : names) {
    if (!out.empty()) out += ", ";
    out += n;
  }
  return out;
}

}  // namespace

json::object parseBodyObject(std::string_view body) {
  boost::system::error_code ec;
  json::value v = sluice::parseJson(body, ec);
  if (ec)
    throw FieldError("", fmt::format("the request body is not valid JSON ({}); send a JSON object", ec.message()));
  if (!v.is_object()) throw FieldError("", "the request body must be a JSON object, got " + describeJson(v));
  return std::move(v.as_object());
}

void rejectUnknownFields(const json::object& body, std::initializer_list<std::string_view> writable,
                         std::initializer_list<std::string_view> read_only) {
  for (const auto& [k, v] : body) {
    if (std::find(writable.begin(), writable.end(), k) != writable.end()) continue;
    const std::string name(k);
    if (std::find(read_only.begin(), read_only.end(), k) != read_only.end())
      throw FieldError(name, fmt::format("{} is read-only; writable fields: {}", name, join(writable)));
    throw FieldError(name, fmt::format("unknown field \"{}\"; writable fields: {}", name, join(writable)));
  }
}

std::string describeJson(const json::value& v) {
  switch (v.kind()) {
    case json::kind::null:
      return "null";
    case json::kind::object:
      return "an object";
    case json::kind::array:
      return "an array";
    case json::kind::string: {
      std::string s = json::serialize(v);
      if (s.size() > 40) {
        std::size_t cut = 36;  // not inside a UTF-8 sequence
        while (cut > 1 && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80) --cut;
        s.resize(cut);
        s += "...\"";
      }
      return s;
    }
    default:
      return json::serialize(v);
  }
}

std::string textField(const json::value& v, std::string_view param, std::size_t min, std::size_t max) {
  if (!v.is_string() || v.get_string().size() < min || v.get_string().size() > max || hasAnyControlChar(v.get_string()))
    throw FieldError(std::string(param),
                     fmt::format("{} must be a string of {} to {} characters without control characters; got {}", param,
                                 min, max, describeJson(v)));
  return std::string(v.get_string());
}

std::int64_t integerField(const json::value& v, std::string_view param, std::int64_t lo, std::int64_t hi) {
  const auto n = exactInteger(v);
  if (!n || *n < lo || *n > hi)
    throw FieldError(std::string(param),
                     fmt::format("{} must be an integer from {} to {}; got {}", param, lo, hi, describeJson(v)));
  return *n;
}

std::optional<std::int64_t> limitField(const json::value& v, std::string_view param) {
  if (v.is_null()) return std::nullopt;
  const auto n = exactInteger(v);
  if (!n || *n <= 0)
    throw FieldError(
        std::string(param),
        fmt::format("{} must be a positive integer, or null to remove the limit; got {}", param, describeJson(v)));
  return n;
}

std::optional<double> budgetField(const json::value& v, std::string_view param) {
  if (v.is_null()) return std::nullopt;
  const bool number = v.is_int64() || v.is_uint64() || v.is_double();
  const double d = number ? v.to_number<double>() : -1;
  if (!number || !std::isfinite(d) || d < 0)
    throw FieldError(std::string(param),
                     fmt::format("{} must be a non-negative number of US dollars, or null to remove the budget; got {}",
                                 param, describeJson(v)));
  return d;
}

std::string nameListField(const json::value& v, std::string_view param, bool allow_empty) {
  if (!v.is_array())
    throw FieldError(std::string(param), fmt::format("{} must be an array of strings; got {}", param, describeJson(v)));
  const auto& arr = v.get_array();
  if (arr.empty() && !allow_empty)
    throw FieldError(std::string(param), fmt::format("{} must list at least one entry", param));
  for (std::size_t i = 0; i < arr.size(); ++i) {
    const auto& e = arr[i];
    if (!e.is_string() || e.get_string().empty() || e.get_string().size() > 256 || hasAnyControlChar(e.get_string()))
      throw FieldError(fmt::format("{}[{}]", param, i),
                       fmt::format("{}[{}] must be a non-empty string of at most 256 characters without control "
                                   "characters; got {}",
                                   param, i, describeJson(e)));
  }
  return json::serialize(arr);
}

bool applyProtectOverrides(json::object& settings, const json::object& body, std::string_view inherits) {
  bool named = false;
  if (const auto* v = body.if_contains("screening")) {
    if (v->is_null()) {
      settings.erase("screening");
    } else if (!v->is_string() || !config::parseScreenAction(v->as_string())) {
      throw FieldError("screening", fmt::format("screening must be \"off\", \"log\", \"warn\", \"block\" or null "
                                                "(inherit {}); got {}",
                                                inherits, describeJson(*v)));
    } else {
      settings["screening"] = v->as_string();
    }
    named = true;
  }
  if (const auto* v = body.if_contains("cache")) {
    if (v->is_null()) settings.erase("cache");
    else if (v->is_bool()) settings["cache"] = v->as_bool();
    else throw FieldError("cache", fmt::format("cache must be true, false or null (inherit {}); got {}", inherits, describeJson(*v)));
    named = true;
  }
  if (const auto* v = body.if_contains("cache_ttl_ms")) {
    constexpr std::int64_t kYearMs = 365LL * 24 * 3600 * 1000;
    if (v->is_null()) {
      settings.erase("cache_ttl_ms");
    } else if (v->is_int64() && v->as_int64() > 0 && v->as_int64() <= kYearMs) {
      settings["cache_ttl_ms"] = v->as_int64();
    } else {
      throw FieldError("cache_ttl_ms", fmt::format("cache_ttl_ms must be a number of milliseconds from 1 to a year "
                                                   "({}) or null (inherit {}); got {}",
                                                   kYearMs, inherits, describeJson(*v)));
    }
    named = true;
  }
  return named;
}

}  // namespace sluice::admin
