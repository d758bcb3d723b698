#include "providers/CodecUtil.hpp"

#include <cmath>

#include <boost/json/parser.hpp>

#include <fmt/format.h>
#include <boost/json/parse.hpp>
#include <boost/json/value.hpp>

#include <array>
#include <charconv>
#include <cstring>

#include "core/JsonText.hpp"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace sluice::providers {

std::string_view formatName(Format f) {
  switch (f) {
    case Format::OpenAIChat:
      return "OpenAI Chat Completions";
    case Format::AnthropicMessages:
      return "Anthropic Messages";
    case Format::GeminiGenerate:
      return "Gemini generateContent";
    case Format::OpenAIResponses:
      return "OpenAI Responses";
    case Format::BedrockConverse:
      return "Bedrock Converse";
  }
  return "?";
}

ErrorKind errorKindForStatus(int status) {
  switch (status) {
    case 400:
      return ErrorKind::InvalidRequest;
    case 401:
      return ErrorKind::Authentication;
    case 402:
      return ErrorKind::Billing;
    case 403:
      return ErrorKind::Permission;
    case 404:
      return ErrorKind::NotFound;
    case 413:
      return ErrorKind::RequestTooLarge;
    case 429:
      return ErrorKind::RateLimit;
    case 503:
    case 529:
      return ErrorKind::Overloaded;
    case 504:
      return ErrorKind::Timeout;
    default:
      return status >= 500 ? ErrorKind::Api : ErrorKind::InvalidRequest;
  }
}

int statusForErrorKind(ErrorKind k) {
  switch (k) {
    case ErrorKind::InvalidRequest:
      return 400;
    case ErrorKind::Authentication:
      return 401;
    case ErrorKind::Billing:
      return 402;
    case ErrorKind::Permission:
      return 403;
    case ErrorKind::NotFound:
      return 404;
    case ErrorKind::RequestTooLarge:
      return 413;
    case ErrorKind::RateLimit:
      return 429;
    case ErrorKind::Api:
      return 500;
    case ErrorKind::Timeout:
      return 504;
    case ErrorKind::Overloaded:
      return 529;
  }
  return 500;
}

}  // namespace sluice::providers

namespace sluice::providers::detail {

namespace json = boost::json;

std::size_t findBytes(std::string_view hay, std::string_view needle, std::size_t pos) {
  constexpr auto npos = std::string_view::npos;
  if (pos > hay.size()) return npos;
  const std::size_t n = needle.size();
  if (n == 0) return pos;
  const char* const s = hay.data() + pos;
  const std::size_t len = hay.size() - pos;
  if (len < n) return npos;
  if (n == 1) {
    const void* p = std::memchr(s, needle[0], len);
    return p ? static_cast<std::size_t>(static_cast<const char*>(p) - hay.data()) : npos;
  }
  // The two bytes checked first: the second and the last (a needle here often starts with '"',
  // the most common byte in JSON), or both bytes of a two-byte needle.
  const std::size_t k1 = n >= 3 ? 1 : 0;
  const std::size_t k2 = n - 1;
  const char* const nd = needle.data();
  std::size_t i = 0;
#if defined(__SSE2__)
  const __m128i b1 = _mm_set1_epi8(nd[k1]);
  const __m128i b2 = _mm_set1_epi8(nd[k2]);
  for (; i + k2 + 16 <= len; i += 16) {
    const __m128i v1 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i + k1));
    const __m128i v2 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i + k2));
    auto mask = static_cast<unsigned>(_mm_movemask_epi8(_mm_and_si128(_mm_cmpeq_epi8(v1, b1), _mm_cmpeq_epi8(v2, b2))));
    for (; mask != 0; mask &= mask - 1) {
      const std::size_t at = i + static_cast<std::size_t>(__builtin_ctz(mask));
      if (std::memcmp(s + at, nd, n) == 0) return pos + at;
    }
  }
#endif
  for (; i + n <= len; ++i)
    if (s[i + k1] == nd[k1] && s[i + k2] == nd[k2] && std::memcmp(s + i, nd, n) == 0) return pos + i;
  return npos;
}

void appendInt(std::string& out, std::int64_t v) {
  char buf[24];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, r.ptr);
}

bool SseSplitter::parseEvent(std::string_view ev, std::string_view& name, std::string_view& data) {
  int dataLines = 0;
  std::size_t pos = 0;
  while (pos < ev.size()) {
    auto nl = ev.find('\n', pos);
    std::string_view line = ev.substr(pos, nl == std::string_view::npos ? std::string_view::npos : nl - pos);
    pos = nl == std::string_view::npos ? ev.size() : nl + 1;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty() || line.front() == ':') continue;
    auto colon = line.find(':');
    std::string_view field = line.substr(0, colon);
    std::string_view value = colon == std::string_view::npos ? std::string_view{} : line.substr(colon + 1);
    if (!value.empty() && value.front() == ' ') value.remove_prefix(1);
    if (field == "event") {
      name = value;
    } else if (field == "data") {
      if (dataLines == 0) {
        data = value;
      } else {
        if (dataLines == 1) joined_.assign(data);
        joined_.push_back('\n');
        joined_.append(value);
        data = joined_;
      }
      ++dataLines;
    }
  }
  return dataLines > 0 || !name.empty();
}

std::size_t SseSplitter::nextEventEnd(std::string_view s, std::size_t pos) {
  while (pos < s.size()) {
    const void* nl = std::memchr(s.data() + pos, '\n', s.size() - pos);
    if (!nl) break;
    std::size_t i = static_cast<std::size_t>(static_cast<const char*>(nl) - s.data());
    if (i + 1 < s.size() && s[i + 1] == '\n') return i + 2;
    if (i + 2 < s.size() && s[i + 1] == '\r' && s[i + 2] == '\n') return i + 3;
    pos = i + 1;
  }
  return s.size();
}

std::size_t SseSplitter::lastEventEnd(std::string_view s) {
  for (std::size_t i = s.size(); i >= 2; --i) {
    if (s[i - 1] == '\n' && (s[i - 2] == '\n' || (i >= 3 && s[i - 2] == '\r' && s[i - 3] == '\n'))) return i;
  }
  return 0;
}

const json::value* Fields::get(std::string_view key) const {
  auto* v = obj.if_contains(key);
  return v && !v->is_null() ? v : nullptr;
}

std::string Fields::sub(std::string_view key) const {
  return path.empty() ? std::string(key) : fmt::format("{}.{}", path, key);
}

std::optional<ApiError> Fields::str(std::string_view key, std::string& out, bool required) const {
  auto* v = get(key);
  if (!v) {
    if (required) return ApiError::invalid(sub(key), fmt::format("{} is required", sub(key)));
    return std::nullopt;
  }
  if (!v->is_string()) return ApiError::invalid(sub(key), fmt::format("{} must be a string", sub(key)));
  out.assign(v->as_string().data(), v->as_string().size());
  return std::nullopt;
}

std::optional<ApiError> Fields::num(std::string_view key, std::optional<double>& out) const {
  auto* v = get(key);
  if (!v) return std::nullopt;
  if (v->is_double()) {
    out = v->as_double();
  } else if (v->is_int64()) {
    out = static_cast<double>(v->as_int64());
  } else if (v->is_uint64()) {
    out = static_cast<double>(v->as_uint64());
  } else {
    return ApiError::invalid(sub(key), fmt::format("{} must be a number", sub(key)));
  }
  return std::nullopt;
}

std::optional<ApiError> Fields::integer(std::string_view key, std::optional<std::int64_t>& out) const {
  auto* v = get(key);
  if (!v) return std::nullopt;
  if (auto i = asInt(v)) {
    out = *i;
    return std::nullopt;
  }
  if (v->is_double()) {
    // A whole number written as a double (1e3, 4096.0). Range first: casting a double outside
    // int64 is undefined behaviour (found by the translate_request fuzzer with 1e19).
    double d = v->as_double();
    if (std::isfinite(d) && d >= -9.2e18 && d <= 9.2e18 && d == std::trunc(d)) {
      out = static_cast<std::int64_t>(d);
      return std::nullopt;
    }
  }
  return ApiError::invalid(sub(key), fmt::format("{} must be an integer", sub(key)));
}

std::optional<ApiError> Fields::boolean(std::string_view key, std::optional<bool>& out) const {
  auto* v = get(key);
  if (!v) return std::nullopt;
  if (!v->is_bool()) return ApiError::invalid(sub(key), fmt::format("{} must be a boolean", sub(key)));
  out = v->as_bool();
  return std::nullopt;
}

std::string indexPath(std::string_view base, std::size_t i) {
  return fmt::format("{}[{}]", base, i);
}

std::optional<std::int64_t> asInt(const json::value* v) {
  if (!v) return std::nullopt;
  if (v->is_int64()) return v->as_int64();
  if (v->is_uint64()) return static_cast<std::int64_t>(v->as_uint64());
  return std::nullopt;
}

std::string_view asStr(const json::value* v) {
  if (!v || !v->is_string()) return {};
  return std::string_view(v->as_string().data(), v->as_string().size());
}

void appendTurn(json::array& turns, std::string_view role, std::string_view items_key, json::array items) {
  if (!turns.empty() && asStr(turns.back().as_object().if_contains("role")) == role) {
    auto& prev = turns.back().as_object()[items_key].as_array();
    for (auto& i : items) prev.push_back(std::move(i));
    return;
  }
  turns.push_back(json::object{{"role", role}, {items_key, std::move(items)}});
}

EventParser::EventParser() : p_(std::make_unique<json::parser>(json::storage_ptr(), jsonParseOptions())) {}
EventParser::~EventParser() = default;

json::value EventParser::parse(std::string_view text, boost::system::error_code& ec, json::storage_ptr sp) {
  p_->reset(std::move(sp));
  p_->write(text.data(), text.size(), ec);
  if (ec) {
    // Drop the partial value now, while its arena (the caller's, per event) still exists;
    // left for the next reset or the destructor it would be freed into a dead arena (found by
    // the translate_stream fuzzer).
    p_->reset();
    return nullptr;
  }
  return p_->release();
}

std::optional<ApiError> parseJson(std::string_view text, json::value& out, std::string_view what) {
  boost::system::error_code ec;
  out = sluice::parseJson(text, ec);
  if (isTooDeep(ec)) return ApiError::invalid("", tooDeepMessage(what));
  if (ec) return ApiError::invalid("", fmt::format("{} is not valid JSON: {}", what, ec.message()));
  return std::nullopt;
}

bool parseDataUrl(std::string_view url, std::string& media_type, std::string& data) {
  if (!url.starts_with("data:")) return false;
  auto comma = url.find(',');
  if (comma == std::string_view::npos) return false;
  auto meta = url.substr(5, comma - 5);
  static constexpr std::string_view kB64 = ";base64";
  if (!meta.ends_with(kB64)) return false;
  media_type.assign(meta.substr(0, meta.size() - kB64.size()));
  data.assign(url.substr(comma + 1));
  return true;
}

ApiError upstreamStreamError(std::string message) {
  return ApiError{502, ErrorKind::Api, std::move(message), {}, {}};
}

std::string fallbackErrorMessage(std::string_view body, int status) {
  if (body.empty()) return fmt::format("upstream error (HTTP {})", status);
  std::size_t n = std::min<std::size_t>(body.size(), 500);
  // Back off continuation bytes so the cut does not split a UTF-8 character.
  while (n > 0 && n < body.size() && (static_cast<unsigned char>(body[n]) & 0xC0) == 0x80) --n;
  return std::string(body.substr(0, n));
}

const json::object* JsonEventDecoder::parseObject(std::string_view data, json::memory_resource& arena,
                                                  json::value& holder, StreamEventSink& sink) {
  boost::system::error_code ec;
  holder = parser_.parse(data, ec, json::storage_ptr(&arena));
  if (ec || !holder.is_object()) {
    emitError(upstreamStreamError("the upstream sent a malformed stream event"), sink);
    return nullptr;
  }
  return &holder.as_object();
}

void JsonEventDecoder::emitError(ApiError err, StreamEventSink& sink) {
  error_ = std::move(err);
  StreamEvent ev;
  ev.kind = StreamEvent::Kind::Error;
  ev.error = &error_;
  sink.onEvent(ev);
}

}  // namespace sluice::providers::detail
