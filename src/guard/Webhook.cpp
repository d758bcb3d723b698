#include "guard/Webhook.hpp"

#include <boost/json/parse.hpp>
#include <boost/json/value.hpp>
#include <fmt/format.h>

#include <stdexcept>

#include "core/JsonText.hpp"

namespace sluice::guard {

namespace json = boost::json;
using Clock = std::chrono::steady_clock;

const char* verdictName(Verdict::Action a) {
  switch (a) {
    case Verdict::Action::Allow: return "allow";
    case Verdict::Action::Warn: return "warn";
    case Verdict::Action::Block: return "block";
    case Verdict::Action::Failed: break;
  }
  return "failed";
}

WebhookTarget makeWebhookTarget(const std::string& url, const std::vector<std::pair<std::string, std::string>>& headers,
                                std::chrono::milliseconds timeout) {
  WebhookTarget t;
  // parseBaseUrl keeps the path as a base path; a query is kept by the loader as part of it.
  std::string base = url;
  std::string query;
  if (auto q = base.find('?'); q != std::string::npos) {
    query = base.substr(q);
    base.resize(q);
  }
  if (auto why = upstream::parseBaseUrl(base, t.endpoint); !why.empty())
    throw std::invalid_argument("guardrail.url: " + why);
  t.path = t.endpoint.base_path.empty() ? "/" : t.endpoint.base_path;
  t.path += query;
  for (const auto& [k, v] : headers) t.extra_headers.append(k).append(": ").append(v).append("\r\n");
  t.timeout = timeout;
  return t;
}

Verdict parseVerdict(int status, std::string_view body) {
  Verdict v;
  if (status < 200 || status > 299) {
    v.reason = fmt::format("the webhook answered {}", status);
    return v;
  }
  boost::system::error_code ec;
  auto doc = sluice::parseJson(body, ec);
  const json::object* obj = !ec && doc.is_object() ? &doc.as_object() : nullptr;
  const json::value* action = obj ? obj->if_contains("action") : nullptr;
  if (!action || !action->is_string()) {
    v.reason = "the webhook's answer has no \"action\" (expected {\"action\": \"allow\" | \"warn\" | \"block\"})";
    return v;
  }
  const auto& a = action->as_string();
  if (a == "allow") v.action = Verdict::Action::Allow;
  else if (a == "warn") v.action = Verdict::Action::Warn;
  else if (a == "block") v.action = Verdict::Action::Block;
  else {
    v.reason = fmt::format("the webhook answered an unknown action \"{}\"", std::string_view(a).substr(0, 40));
    return v;
  }
  if (const auto* r = obj->if_contains("reason"); r && r->is_string()) v.reason = std::string(r->as_string().subview().substr(0, 500));
  return v;
}

boost::asio::awaitable<Verdict> review(upstream::Pool& pool, const WebhookTarget& target, const std::string& payload) {
  Verdict out;
  const auto deadline = Clock::now() + target.timeout;
  auto left = [&] {
    auto d = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    return std::max(d, std::chrono::milliseconds(1));
  };
  std::string head;
  head.reserve(256);
  head.append("POST ").append(target.path).append(" HTTP/1.1\r\nHost: ").append(target.endpoint.host_header);
  head.append("\r\nContent-Type: application/json\r\nAccept: application/json\r\n");
  head.append(target.extra_headers);
  head.append("Content-Length: ").append(std::to_string(payload.size())).append("\r\n\r\n");

  for (int fresh = 0; fresh < 2; ++fresh) {
    auto [cec, conn] = co_await pool.acquire(target.endpoint, left(), fresh == 0);
    if (cec) {
      out.timed_out = cec == boost::beast::error::timeout;
      out.reason = out.timed_out ? "the webhook did not accept a connection in time" : "cannot connect to the webhook: " + cec.message();
      co_return out;
    }
    auto ec = co_await conn->writeRaw(head, payload, left());
    upstream::ResponseParser parser;
    parser.body_limit(64 * 1024);
    if (!ec) ec = co_await conn->readHeader(parser, left());
    if (ec) {
      const bool stale = conn->reused && ec != boost::beast::error::timeout;
      conn->close();
      if (stale && fresh == 0) continue;  // a pooled connection the server had closed
      out.timed_out = ec == boost::beast::error::timeout;
      out.reason = out.timed_out ? fmt::format("the webhook did not answer within {} ms", target.timeout.count())
                                 : "the webhook failed: " + ec.message();
      co_return out;
    }
    std::string body;
    char buf[4096];
    while (!parser.is_done()) {
      auto [rec, n] = co_await conn->readBody(parser, buf, sizeof buf, left());
      body.append(buf, n);
      if (rec) {
        conn->close();
        out.timed_out = rec == boost::beast::error::timeout;
        out.reason = out.timed_out ? fmt::format("the webhook did not answer within {} ms", target.timeout.count())
                                   : "the webhook's answer broke: " + rec.message();
        co_return out;
      }
    }
    const int status = static_cast<int>(parser.get().result_int());
    if (parser.get().keep_alive()) pool.release(std::move(conn));
    else conn->close();
    co_return parseVerdict(status, body);
  }
  co_return out;
}

}  // namespace sluice::guard
