#include "guard/Webhook.hpp"

#include <fmt/format.h>
#include <boost/json/parse.hpp>
#include <boost/json/value.hpp>

#include "core/JsonText.hpp"

namespace sluice::guard {

namespace json = boost::json;

const char* verdictName(Verdict::Action a) {
  switch (a) {
    case Verdict::Action::Allow:
      return "allow";
    case Verdict::Action::Warn:
      return "warn";
    case Verdict::Action::Block:
      return "block";
    case Verdict::Action::Failed:
      break;
  }
  return "failed";
}

WebhookTarget makeWebhookTarget(const std::string& url, const std::vector<std::pair<std::string, std::string>>& headers,
                                std::chrono::milliseconds timeout) {
  WebhookTarget t;
  static_cast<upstream::PostTarget&>(t) = upstream::makePostTarget(url, {}, timeout, "guardrail.url");
  for (const auto& [k, v] : headers) t.extra_headers.append(k).append(": ").append(v).append("\r\n");
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
  if (a == "allow")
    v.action = Verdict::Action::Allow;
  else if (a == "warn")
    v.action = Verdict::Action::Warn;
  else if (a == "block")
    v.action = Verdict::Action::Block;
  else {
    v.reason = fmt::format("the webhook answered an unknown action \"{}\"", std::string_view(a).substr(0, 40));
    return v;
  }
  if (const auto* r = obj->if_contains("reason"); r && r->is_string())
    v.reason = std::string(r->as_string().subview().substr(0, 500));
  return v;
}

boost::asio::awaitable<Verdict> review(upstream::Pool& pool, const WebhookTarget& target, const std::string& payload) {
  upstream::PostResult res = co_await upstream::post(pool, target, "application/json", payload, 64 * 1024);
  Verdict out;
  out.timed_out = res.timed_out;
  switch (res.failure) {
    case upstream::PostResult::Failure::None:
      co_return parseVerdict(res.status, res.body);
    case upstream::PostResult::Failure::Connect:
      out.reason = out.timed_out ? "the webhook did not accept a connection in time"
                                 : "cannot connect to the webhook: " + res.error;
      break;
    case upstream::PostResult::Failure::Send:
      out.reason = out.timed_out ? fmt::format("the webhook did not answer within {} ms", target.timeout.count())
                                 : "the webhook failed: " + res.error;
      break;
    case upstream::PostResult::Failure::Body:
      out.reason = out.timed_out ? fmt::format("the webhook did not answer within {} ms", target.timeout.count())
                                 : "the webhook's answer broke: " + res.error;
      break;
  }
  co_return out;
}

}  // namespace sluice::guard
