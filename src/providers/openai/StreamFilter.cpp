#include "providers/openai/StreamFilter.hpp"

#include <cstring>

#include "core/JsonOutline.hpp"
#include "core/JsonText.hpp"
#include "providers/CodecUtil.hpp"

namespace sluice::providers::openai {

namespace {

using detail::findBytes;

// End of the event starting at pos (just past its blank line), or the region's end.
std::size_t nextEventEnd(std::string_view s, std::size_t pos) {
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

// End of the last complete SSE event in s (just past its blank line), or 0.
std::size_t lastEventEnd(std::string_view s) {
  for (std::size_t i = s.size(); i >= 2; --i) {
    if (s[i - 1] == '\n' && (s[i - 2] == '\n' || (i >= 3 && s[i - 2] == '\r' && s[i - 3] == '\n'))) return i;
  }
  return 0;
}

using K = JsonOutline::Kind;

// An integer member, or -1 when it is absent, not an integer, or past INT64_MAX (a uint64).
std::int64_t intField(const JsonOutline& o, JsonOutline::Node obj, std::string_view k) {
  const auto n = o.member(obj, k);
  return o.is(n, K::Int) ? o.integer(n) : -1;
}

// How deep usageFromOutline reads: {"response":{"usage":{"input_tokens_details":{"cached_tokens":1}}}}.
constexpr int kUsageDepth = 4;

bool usageFromOutline(const JsonOutline& o, Usage& usage) {
  constexpr auto kRoot = JsonOutline::kRoot;
  if (!o.is(kRoot, K::Object)) return false;
  auto u = o.member(kRoot, "usage");
  // Responses API streams carry it in response.completed: {"response":{"usage":{...}}}.
  if (!o.is(u, K::Object) && o.has(o.member(kRoot, "response"))) u = o.member(o.member(kRoot, "response"), "usage");
  if (!o.is(u, K::Object)) return false;
  auto p = intField(o, u, "prompt_tokens");
  if (p < 0) p = intField(o, u, "input_tokens");  // Responses API
  auto c = intField(o, u, "completion_tokens");
  if (c < 0) c = intField(o, u, "output_tokens");
  if (p < 0 && c < 0) return false;
  usage.prompt_tokens = p < 0 ? 0 : p;
  usage.completion_tokens = c < 0 ? 0 : c;
  for (const char* details : {"prompt_tokens_details", "input_tokens_details"}) {
    if (const auto d = o.member(u, details); o.is(d, K::Object)) {
      auto ct = intField(o, d, "cached_tokens");
      if (ct >= 0) usage.cached_tokens = ct;
      auto cw = intField(o, d, "cache_write_tokens");  // OpenAI-compatible routers
      if (cw >= 0) usage.cache_write_tokens = cw;
    }
  }
  for (const char* details : {"completion_tokens_details", "output_tokens_details"}) {
    if (const auto d = o.member(u, details); o.is(d, K::Object)) {
      auto rt = intField(o, d, "reasoning_tokens");
      if (rt >= 0) usage.reasoning_tokens = rt;
    }
  }
  return true;
}

// Removes every `"usage":null` member (and its separating comma) from a JSON text.
std::string stripNullUsage(std::string_view ev) {
  static constexpr std::string_view kNull = "\"usage\":null";
  std::string out;
  out.reserve(ev.size());
  std::size_t pos = 0;
  for (;;) {
    auto at = findBytes(ev, kNull, pos);
    if (at == std::string_view::npos) break;
    std::size_t from = at, to = at + kNull.size();
    if (from > 0 && ev[from - 1] == ',') {
      --from;
    } else if (to < ev.size() && ev[to] == ',') {
      ++to;
    }
    out.append(ev.substr(pos, from - pos));
    pos = to;
  }
  out.append(ev.substr(pos));
  return out;
}

}  // namespace

bool parseUsageFromBody(std::string_view body, Usage& usage) {
  boost::system::error_code ec;
  JsonOutline o;  // not the thread's scratch: a caller may be reading that one
  if (!o.parse(body, kUsageDepth, ec)) return false;
  return usageFromOutline(o, usage);
}

bool StreamFilter::feed(std::string_view in, std::string& out) {
  if (carry_.empty()) {
    auto end = lastEventEnd(in);
    processRegion(in.substr(0, end), out);
    carry_.assign(in.substr(end));
  } else {
    // Only the new bytes (and the 2 before them) can complete an event: scanning the whole
    // carry each time would be quadratic for a large event arriving in small reads.
    std::size_t from = carry_.size() > 2 ? carry_.size() - 2 : 0;
    carry_.append(in);
    auto end = lastEventEnd(std::string_view(carry_).substr(from));
    if (end != 0) end += from;
    if (end != 0) {
      processRegion(std::string_view(carry_).substr(0, end), out);
      carry_.erase(0, end);
    }
  }
  return carry_.size() <= kMaxEvent;
}

void StreamFilter::processRegion(std::string_view region, std::string& out) {
  std::size_t pos = 0;
  while (pos < region.size()) {
    auto end = nextEventEnd(region, pos);
    processEvent(region.substr(pos, end - pos), out);
    pos = end;
  }
}

void StreamFilter::processEvent(std::string_view ev, std::string& out) {
  if (ev.starts_with("data: [DONE]") || ev.starts_with("data:[DONE]")) saw_done_ = true;
  // Fast path: OpenAI puts "usage" last, so the gateway-caused null sits at the very end.
  static constexpr std::string_view kNullTail = ",\"usage\":null}";
  auto body = ev;
  while (!body.empty() && (body.back() == '\n' || body.back() == '\r')) body.remove_suffix(1);
  if (body.ends_with(kNullTail)) {
    if (strip_usage_) {
      out.append(body.substr(0, body.size() - kNullTail.size())).push_back('}');
      out.append(ev.substr(body.size()));
    } else {
      out.append(ev);
    }
    return;
  }
  auto at = findBytes(ev, "\"usage\"");
  if (at == std::string_view::npos) {
    out.append(ev);
    return;
  }
  // What the "usage" key holds: an object to read, or the null the gateway caused.
  std::size_t i = at + 7;
  while (i < ev.size() && (ev[i] == ' ' || ev[i] == ':')) ++i;
  bool isObject = i < ev.size() && ev[i] == '{';
  if (isObject) {
    auto dataAt = findBytes(ev, "data:");
    if (dataAt != std::string_view::npos) {
      auto json = ev.substr(dataAt + 5);
      while (!json.empty() && json.front() == ' ') json.remove_prefix(1);
      while (!json.empty() && (json.back() == '\n' || json.back() == '\r')) json.remove_suffix(1);
      boost::system::error_code ec;
      JsonOutline& o = JsonOutline::scratch();
      if (o.parse(json, kUsageDepth, ec) && usageFromOutline(o, usage_) && strip_usage_) {
        const auto choices = o.member(JsonOutline::kRoot, "choices");
        if (o.is(choices, K::Array) && o.size(choices) == 0) return;  // the added chunk
      }
    }
  }
  if (strip_usage_ && !isObject) {
    out.append(stripNullUsage(ev));
  } else {
    out.append(ev);
  }
}

}  // namespace sluice::providers::openai
