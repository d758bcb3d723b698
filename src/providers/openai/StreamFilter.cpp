#include "providers/openai/StreamFilter.hpp"

#include <boost/json/parse.hpp>
#include <boost/json/value.hpp>

#include <cstring>

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

std::int64_t intField(const boost::json::object& o, std::string_view k) {
  auto* v = o.if_contains(k);
  if (!v) return -1;
  if (v->is_int64()) return v->as_int64();
  if (v->is_uint64()) return static_cast<std::int64_t>(v->as_uint64());
  return -1;
}

bool usageFromObject(const boost::json::value& root, Usage& usage) {
  const auto* obj = root.if_object();
  if (!obj) return false;
  const auto* u = obj->if_contains("usage");
  // Responses API streams carry it in response.completed: {"response":{"usage":{...}}}.
  if ((!u || !u->is_object()) && obj->contains("response")) {
    if (const auto* resp = obj->at("response").if_object()) u = resp->if_contains("usage");
  }
  if (!u || !u->is_object()) return false;
  const auto& uo = u->as_object();
  auto p = intField(uo, "prompt_tokens");
  if (p < 0) p = intField(uo, "input_tokens");  // Responses API
  auto c = intField(uo, "completion_tokens");
  if (c < 0) c = intField(uo, "output_tokens");
  if (p < 0 && c < 0) return false;
  usage.prompt_tokens = p < 0 ? 0 : p;
  usage.completion_tokens = c < 0 ? 0 : c;
  for (const char* details : {"prompt_tokens_details", "input_tokens_details"}) {
    if (const auto* d = uo.if_contains(details); d && d->is_object()) {
      auto ct = intField(d->as_object(), "cached_tokens");
      if (ct >= 0) usage.cached_tokens = ct;
      auto cw = intField(d->as_object(), "cache_write_tokens");  // OpenAI-compatible routers
      if (cw >= 0) usage.cache_write_tokens = cw;
    }
  }
  for (const char* details : {"completion_tokens_details", "output_tokens_details"}) {
    if (const auto* d = uo.if_contains(details); d && d->is_object()) {
      auto rt = intField(d->as_object(), "reasoning_tokens");
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
  auto v = sluice::parseJson(body, ec);
  if (ec) return false;
  return usageFromObject(v, usage);
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
      sluice::ScratchJson scratch;
      auto v = scratch.parse(json, ec);
      if (!ec && usageFromObject(v, usage_) && strip_usage_) {
        const auto* choices = v.as_object().if_contains("choices");
        if (choices && choices->is_array() && choices->as_array().empty()) return;  // the added chunk
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
