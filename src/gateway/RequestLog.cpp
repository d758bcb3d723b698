#include "gateway/RequestLog.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <chrono>

#include "core/JsonText.hpp"

namespace sluice::gateway {

namespace bhttp = boost::beast::http;

store::LogRecord logRecord(const http::Request& req, RequestContext& ctx, RequestRecord& rec) {
  store::LogRecord l;
  l.time_ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
                  .count() -
              static_cast<std::int64_t>(rec.duration_ms);
  l.request_id = std::move(ctx.id);
  l.channel = std::move(rec.channel);
  l.upstream_key = std::move(rec.key_id);
  l.model = std::move(rec.model);
  l.status = rec.status;
  l.attempts = std::move(rec.attempts_json);
  l.ttfb_ms = rec.ttfb_ms < 0 ? 0 : static_cast<std::int64_t>(rec.ttfb_ms);
  l.duration_ms = static_cast<std::int64_t>(rec.duration_ms);
  l.input_tokens = std::max<std::int64_t>(rec.input_tokens, 0);
  l.output_tokens = std::max<std::int64_t>(rec.output_tokens, 0);
  l.cached_tokens = std::max<std::int64_t>(rec.cached_tokens, 0);
  l.cache_write_tokens = std::max<std::int64_t>(rec.cache_write_tokens, 0);
  l.reasoning_tokens = std::max<std::int64_t>(rec.reasoning_tokens, 0);
  l.virtual_key_id = rec.virtual_key_id;
  l.cost_usd = rec.cost_usd;
  if (!rec.request_body.empty()) l.request_body = std::move(rec.request_body);
  if (!rec.response_body.empty()) l.response_body = std::move(rec.response_body);
  l.client_addr = std::move(ctx.remote);
  l.user_agent = std::string(req[bhttp::field::user_agent].substr(0, 512));
  l.stream = rec.stream;
  l.screening = std::move(rec.screening);  // the access line is written first (Gateway.cpp)
  return l;
}

std::string accessLogLine(const http::Request& req, const RequestContext& ctx, const RequestRecord& rec) {
  // Hand-built: one buffer, no JSON tree (this runs for every request).
  std::string line;
  line.reserve(384);
  auto key = [&](std::string_view k) { line.append(",\"").append(k).append("\":"); };
  auto str = [&](std::string_view k, std::string_view v) {
    key(k);
    appendJsonString(line, v);
  };
  // Numbers straight into the line (std::to_chars: the digits printf's %.3f gives, no string
  // made per field).
  auto fixed = [&](double v, int decimals) {
    std::array<char, 64> buf{};
    const auto r = std::to_chars(buf.data(), buf.data() + buf.size(), v, std::chars_format::fixed, decimals);
    line.append(buf.data(), r.ec == std::errc{} ? r.ptr : buf.data());
  };
  auto num = [&](std::string_view k, double v) {
    key(k);
    if (v < 0)
      line.append("null");
    else
      fixed(v, 3);
  };
  auto integer = [&](std::string_view k, std::int64_t v) {
    key(k);
    if (v < 0) {
      line.append("null");
      return;
    }
    std::array<char, 24> buf{};
    const auto r = std::to_chars(buf.data(), buf.data() + buf.size(), v);
    line.append(buf.data(), r.ptr);
  };
  auto ts = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch());
  line.append("{\"ts\":");
  {
    std::array<char, 24> buf{};
    const auto r = std::to_chars(buf.data(), buf.data() + buf.size(), ts.count());
    line.append(buf.data(), r.ptr);
  }
  str("request_id", ctx.id);
  str("method", req.method_string());
  str("path", ctx.path);
  integer("status", rec.status);
  str("model", rec.model);
  str("channel", rec.channel);
  str("key", rec.key_id);
  integer("attempts", rec.attempts);
  key("stream");
  line.append(rec.stream ? "true" : "false");
  num("ttfb_ms", rec.ttfb_ms);
  num("duration_ms", rec.duration_ms);
  integer("input_tokens", rec.input_tokens);
  integer("output_tokens", rec.output_tokens);
  integer("cached_tokens", rec.cached_tokens);
  if (rec.cache_write_tokens > 0) integer("cache_write_tokens", rec.cache_write_tokens);
  if (rec.reasoning_tokens > 0) integer("reasoning_tokens", rec.reasoning_tokens);
  if (rec.cost_usd > 0) {
    key("cost_usd");
    fixed(rec.cost_usd, 6);
  }
  if (rec.virtual_key_id) integer("virtual_key", *rec.virtual_key_id);
  if (!rec.error.empty()) str("error", rec.error);
  if (!rec.screening.empty()) {
    key("screening");
    line.append(rec.screening);
  }
  str("remote", ctx.remote);
  line.push_back('}');
  return line;
}

}  // namespace sluice::gateway
