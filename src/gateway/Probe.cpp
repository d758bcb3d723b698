#include "gateway/Probe.hpp"

#include <spdlog/spdlog.h>

#include <fmt/format.h>
#include <boost/json/parse.hpp>
#include <boost/json/value.hpp>

#include "core/JsonText.hpp"

namespace sluice::gateway {

namespace json = boost::json;
using Clock = std::chrono::steady_clock;

namespace {

std::string probeHead(const routing::Channel& ch, const routing::UpstreamKey& key) {
  using config::ChannelType;
  std::string path = ch.endpoint.base_path;
  std::string auth;
  switch (ch.cfg.type) {
    case ChannelType::Anthropic:
      path += "/v1/models?limit=1";
      auth = "x-api-key: " + key.secret + "\r\nanthropic-version: 2023-06-01\r\n";
      break;
    case ChannelType::Gemini:
      path += "/v1beta/models?pageSize=1";
      auth = "x-goog-api-key: " + key.secret + "\r\n";
      break;
    case ChannelType::Azure:
      path += "/openai/models?api-version=" +
              (ch.cfg.api_version.empty() ? std::string(config::kAzureApiVersion) : ch.cfg.api_version);
      auth = "api-key: " + key.secret + "\r\n";
      break;
    default:
      path += "/models";
      if (!key.secret.empty()) auth = "Authorization: Bearer " + key.secret + "\r\n";
      break;
  }
  std::string h = "GET " + path + " HTTP/1.1\r\nHost: " + ch.endpoint.host_header + "\r\n" + auth;
  for (const auto& [k, v] : ch.cfg.headers) h.append(k).append(": ").append(v).append("\r\n");
  h.append("Accept: application/json\r\n\r\n");
  return h;
}

std::string messageOf(std::string_view body) {
  boost::system::error_code ec;
  auto v = sluice::parseJson(body, ec);
  if (!ec && v.is_object()) {
    if (const auto* e = v.as_object().if_contains("error")) {
      if (e->is_object())
        if (const auto* m = e->as_object().if_contains("message"); m && m->is_string())
          return std::string(m->as_string());
      if (e->is_string()) return std::string(e->as_string());
    }
  }
  return std::string(body.substr(0, 200));
}

}  // namespace

boost::asio::awaitable<ProbeResult> probeKey(upstream::Pool& pool, const routing::Channel& ch,
                                             const routing::UpstreamKey& key, std::chrono::milliseconds timeout,
                                             const pipeline::SecretScrubber& scrubber) {
  ProbeResult out;
  const auto start = Clock::now();
  const std::string head = probeHead(ch, key);
  auto [cec, conn] = co_await pool.acquire(ch.endpoint, timeout, false);
  if (cec) {
    out.message = "connect failed: " + cec.message();
    co_return out;
  }
  auto ec = co_await conn->writeRaw(head, {}, timeout);
  upstream::ResponseParser parser;
  parser.body_limit(64 * 1024);
  if (!ec) ec = co_await conn->readHeader(parser, timeout);
  if (ec) {
    conn->close();
    out.message = "no answer: " + ec.message();
    co_return out;
  }
  out.status = static_cast<int>(parser.get().result_int());
  std::string body;
  while (!parser.is_done() && body.size() < 64 * 1024) {
    auto [rec, got] = co_await conn->readBody(parser, timeout);
    body.append(got);
    if (rec) break;
  }
  conn->close();
  scrubber.scrub(body);
  out.latency_ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
  out.ok = out.status >= 200 && out.status < 300;
  out.message = out.ok ? "the key works" : fmt::format("upstream answered {}: {}", out.status, messageOf(body));
  co_return out;
}

void applyProbe(const routing::Channel& ch, const routing::UpstreamKey& k, const ProbeResult& pr) {
  auto& h = *k.health;
  if (h.manual.load()) return;
  if (pr.ok) {
    if (h.disabled.load() || h.cooldown_until_ms.load() > routing::nowMs()) {
      spdlog::info("upstream key {} of channel {}: probe succeeded; back in rotation", k.id, ch.cfg.name);
      h.enable();
    }
  } else if (pr.key_rejected() && !h.disabled.load()) {
    h.disable("probe: " + pr.message);
  }
}

}  // namespace sluice::gateway
