#include "gateway/Proxy.hpp"

#include <fmt/format.h>
#include <boost/beast/http/field.hpp>

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "core/JsonText.hpp"
#include "gateway/Chain.hpp"
#include "gateway/LimitRefusal.hpp"
#include "gateway/Relay.hpp"
#include "gateway/Tracing.hpp"
#include "gateway/stages/Stages.hpp"
#include "metrics/Metrics.hpp"

namespace sluice::gateway {

namespace bhttp = boost::beast::http;
using relay::Attempt;
using relay::Clock;
using relay::msSince;
using relay::Relay;

namespace {

// Adds one attempt to the JSON array kept for the request log.
void appendAttempt(std::string& json_array, const routing::Pick& p, std::string_view model, const Attempt& a) {
  json_array.pop_back();  // ']'
  if (json_array.size() > 1) json_array.push_back(',');
  json_array.append("{\"channel\":");
  appendJsonString(json_array, p.channel->cfg.name);
  json_array.append(",\"model\":");
  appendJsonString(json_array, model);
  json_array.append(",\"key\":");
  appendJsonString(json_array, p.key->id);
  json_array.append(",\"status\":").append(std::to_string(a.status));
  json_array.append(",\"duration_ms\":").append(fmt::format("{:.3f}", a.duration_ms));
  json_array.append(",\"error\":");
  if (a.why.empty())
    json_array.append("null");
  else
    appendJsonString(json_array, a.why);
  json_array.append("}]");
}

}  // namespace

void scrubRecord(const Snapshot& snap, RequestRecord& rec) {
  const auto& s = snap.scrubber;
  if (s.empty()) return;
  // The error and the attempts were made from upstream text already masked where it came in
  // (attempt()); a logged body may hold a key the client sent or the provider quoted.
  s.scrub(rec.request_body);
  s.scrub(rec.response_body);
}

namespace {

// The failover loop: picks (channel, key) pairs in the router's order, charges the channels'
// and keys' own quotas, and makes attempts until one is delivered to the client or none is left;
// then the model's fallbacks (routing.fallbacks) get the same, in order; then the client hears
// why in its format. Each model has max_retries + 1 attempts; the total timeout bounds them all.
boost::asio::awaitable<void> relayWithFailover(Relay& relay, const std::vector<const routing::Channel*>& candidates,
                                               std::int64_t estTokens) {
  const auto& snap = relay.snap;
  auto& ex = relay.ex;
  auto& rec = relay.rec;
  auto& r = relay.r;
  const auto& ctx = relay.ctx;
  const auto& call = relay.call;
  const auto& cfg = *snap.cfg;
  auto fail = [&](int status, std::string_view type, std::string_view code, const std::string& msg) {
    return failure(call.wire, ctx, rec, status, type, code, msg);
  };
  const std::vector<std::string>& fallbacks = snap.router->fallbacks(relay.facts.model, ex.route.routed_model);
  std::size_t nextFallback = 0;
  std::vector<const routing::Channel*> modelCandidates = candidates;
  std::vector<std::string> summary;
  bool allTimeouts = true, all429 = true;
  std::int64_t retryAfter = 0;
  std::int64_t quotaRetry = -1;  // channels/keys skipped for their own quotas: soonest retry
  std::string quotaWhy;
  const int maxAttempts = cfg.routing.max_retries + 1;
  int n = 1;  // the request's attempt number, across its models
  for (;;) {
    relay.fallback_left = nextFallback < fallbacks.size();
    routing::Attempts attempts(*snap.router, std::move(modelCandidates));
    for (int tries = 0; tries < maxAttempts;) {
      std::int64_t coolingFor = 0;
      auto pick = attempts.next(coolingFor);
      if (!pick.channel) {
        if (tries == 0 && coolingFor > 0) {
          retryAfter = retryAfter > 0 ? std::min(retryAfter, coolingFor) : coolingFor;
          summary.push_back(fmt::format("every key of the channels of {} is cooling down for {} ms",
                                        ex.route.routed_model, coolingFor));
          allTimeouts = false;
        }
        break;
      }
      if (relay.deadline.passed()) {
        summary.push_back("total timeout reached");
        break;
      }
      const auto& ch = *pick.channel;
      // The stages' say in this attempt, on the body made for its channel (one the channel cannot
      // take is answered by the attempt itself): the limits stage passes over a channel or key at
      // its own quota (it is not tried; its channel's other keys, or the next channel, are); a
      // stage may rewrite what this attempt sends.
      std::optional<UpstreamAttempt> ua;
      std::string_view made;
      if (wayback::takes(ex, Stage::kAttempt) && !relay.prepareBody(pick, made)) {
        ua.emplace(pick, estTokens, made);
        co_await wayback::attempt(ex, *ua);
        if (ua->skip != UpstreamAttempt::Skip::None) {
          if (quotaRetry < 0 || (ua->retry_after_ms > 0 && ua->retry_after_ms < quotaRetry))
            quotaRetry = ua->retry_after_ms;
          quotaWhy += (quotaWhy.empty() ? "" : "; ") + ua->why;
          if (ua->skip == UpstreamAttempt::Skip::Channel) {
            attempts.skipChannel(pick);
          } else if (pick.probe) {
            ch.health->probing.store(false);  // the key stays in the tried set; the channel's other keys are next
          }
          continue;
        }
      }
      rec.attempts = n;
      rec.channel = ch.cfg.name;
      rec.key_id = pick.key->id;
      const auto attemptStart = Clock::now();
      beginAttemptSpan(ex, pick, n);
      auto a = co_await relay.attempt(pick, n, ua ? &*ua : nullptr);
      a.duration_ms = msSince(attemptStart);
      endAttemptSpan(ex, a);
      snap.router->report(pick, a.outcome, a.status, a.retry_after_ms, a.why, a.first_byte_ms);
      appendAttempt(rec.attempts_json, pick, ex.route.upstream_model, a);
      if (a.delivered) {
        // A success settled before its last bytes went out (the limits stage's commit hook); any
        // other answer (an error the client must fix, a stream that broke after it started)
        // settles with what is known when the request completes, charged to this attempt.
        ex.settle.served = pick;
        co_return;
      }
      // What the stages took for the attempt goes back (a key's request, none of its tokens).
      if (wayback::takes(ex, Stage::kAttempt)) co_await wayback::attemptFailed(ex, pick);
      summary.push_back(fmt::format("#{} {} key {}: {}", n, ch.cfg.name, pick.key->id, a.why));
      allTimeouts = allTimeouts && a.timeout;
      all429 = all429 && a.status == 429;
      if (a.status == 429) retryAfter = std::max(retryAfter, a.retry_after_ms);
      ++n;
      ++tries;
      if (a.outcome == routing::Outcome::Fallback) break;  // a rule: this model's channels won't do
      attempts.failed(pick, a.outcome);
      if (tries < maxAttempts)
        metrics::registry().retry(ch.cfg.name, a.timeout ? "timeout" : a.status ? std::to_string(a.status) : "connect");
    }
    if (relay.deadline.passed()) break;
    // This model is spent: the next fallback model that has a channel for this request.
    bool moved = false;
    while (!moved && nextFallback < fallbacks.size()) {
      const std::string& model = fallbacks[nextFallback++];
      std::string routed, why;
      modelCandidates = fallbackCandidates(ex, model, routed, why);
      if (modelCandidates.empty()) {
        summary.push_back(fmt::format("fallback {}: {}", model, why));
        continue;
      }
      summary.push_back(fmt::format("falling back to {}", model));
      metrics::registry().fallback(ex.route.routed_model, routed);
      ex.route.routed_model = std::move(routed);
      ex.settle.price = snap.prices->find(ex.route.routed_model);
      moved = true;
    }
    if (!moved) break;
  }

  std::string joined;
  for (const auto& s : summary) joined += (joined.empty() ? "" : "; ") + s;
  http::Response res;
  if (rec.attempts == 0 && quotaRetry >= 0) {
    LimitRefusal why;
    why.type = "rate_limit_error";
    why.code = "rate_limit_exceeded";
    why.message = "every channel that serves this model is at its rate limit: " + quotaWhy;
    why.retry_after_ms = quotaRetry;
    res = refusalResponse(call.wire, ctx, rec, why, relay.plan.rate_headers);
  } else if (!summary.empty() && all429 && rec.attempts > 0) {
    res = fail(429, "rate_limit_error", "upstream_rate_limited", "every upstream key is rate limited: " + joined);
  } else if (rec.attempts == 0 && retryAfter > 0) {
    res = fail(429, "rate_limit_error", "upstream_rate_limited", joined);
  } else if (allTimeouts && rec.attempts > 0) {
    res = fail(504, "server_error", "upstream_timeout", "every upstream attempt timed out: " + joined);
  } else if (rec.attempts == 0 && summary.empty()) {
    // Nothing was tried: every key of every candidate channel is disabled (or has no key).
    std::string why;
    for (const auto* c : candidates) {
      std::size_t disabled = 0;
      for (const auto& k : c->keys) disabled += k.health->disabled.load(std::memory_order_relaxed) ? 1 : 0;
      why += fmt::format("{}channel {}: {} of {} keys disabled", why.empty() ? "" : "; ", c->cfg.name, disabled,
                         c->keys.size());
    }
    res = fail(503, "server_error", "no_upstream_key",
               "no upstream key is available for this model (" + why +
                   "); enable one with POST /admin/api/upstream-keys/{ref}/enable or add a key");
  } else {
    res = fail(502, "server_error", "upstream_unavailable",
               fmt::format("all {} upstream attempts failed: {}", rec.attempts,
                           joined.empty() ? "no channel available" : joined));
  }
  if (retryAfter > 0 && res.find(bhttp::field::retry_after) == res.end())
    res.set(bhttp::field::retry_after, std::to_string((retryAfter + 999) / 1000));
  res.set("x-sluice-attempts", std::to_string(rec.attempts));
  for (const auto& [k, v] : relay.plan.rate_headers) res.set(k, v);
  co_await r.send(std::move(res));
}

// relay: the last stage. Routing and failover over the route's channels, each attempt's body
// and head made for its channel, translation both ways, and the answer's way back as the plan
// says (restore, record, review), with usage read on the way; it always answers.
class RelayStage final : public Stage {
 public:
  static bool applies(const Exchange&) { return true; }

  boost::asio::awaitable<Step> onRequest(Exchange& ex) override {
    Relay relay(ex);
    co_await relayWithFailover(relay, ex.route.candidates, ex.route.est_tokens);
    co_return Step::Answered;
  }
};

}  // namespace

std::unique_ptr<const StageConfig> makeRelayStage(const Snapshot&) {
  return std::make_unique<SimpleStageConfig<RelayStage>>("relay");
}

}  // namespace sluice::gateway
