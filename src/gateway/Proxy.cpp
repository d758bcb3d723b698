#include "gateway/Proxy.hpp"

#include <fmt/format.h>
#include <boost/beast/http/field.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <algorithm>
#include <cmath>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/JsonText.hpp"
#include "gateway/Chain.hpp"
#include "gateway/CloudTokens.hpp"
#include "gateway/LimitRefusal.hpp"
#include "gateway/Relay.hpp"
#include "gateway/Snapshot.hpp"
#include "gateway/SubscriptionService.hpp"
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

// How a hedged attempt ended, for the failover loop.
enum class HedgeEnd { Delivered, Break, Continue };

// The provider answered 401 to the cached access token this attempt carried (revoked before its
// expiry): the token is dropped where it is cached and a fresh one put in its place. False when
// no other token can be had; then the 401 stands and the key fails as before.
boost::asio::awaitable<bool> renewRejectedToken(Exchange& ex, UpstreamAttempt& a) {
  if (a.bearer.empty()) co_return false;
  const routing::Channel& ch = *a.pick.channel;
  std::string fresh;
  if (!ch.cfg.subscription.empty()) {
    if (!ex.svc.subscriptions) co_return false;
    SubscriptionAccess acc = co_await ex.svc.subscriptions->access(ch, *a.pick.key, ex.svc.pool, a.bearer);
    fresh = std::move(acc.access_token);
  } else if (takesCloudToken(ch.cfg, a.pick.key->secret)) {
    CloudTokens& tokens = CloudTokens::instance();
    tokens.reject(ch.cfg, a.pick.key->secret, a.bearer);
    const auto& t = ex.snap.cfg->routing.timeouts;
    const auto timeout = std::min<std::chrono::milliseconds>(t.connect + t.first_byte, t.total);
    CloudToken tok;  // no co_await inside ?: (gcc 12 miscompiles it)
    if (ch.cfg.type == config::ChannelType::Vertex)
      tok = co_await tokens.vertex(ex.svc.pool, a.pick.key->secret, timeout);
    else
      tok = co_await tokens.entra(ex.svc.pool, ch.cfg, timeout);
    fresh = std::move(tok.token);
  }
  if (fresh.empty() || fresh == a.bearer) co_return false;
  const std::string was = "Authorization: Bearer " + a.bearer + "\r\n";
  const auto at = a.header_lines.find(was);
  if (at == std::string::npos) co_return false;
  a.header_lines.replace(at, was.size(), "Authorization: Bearer " + fresh + "\r\n");
  a.bearer = std::move(fresh);
  co_return true;
}

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

// A hedged request's two openings (Relay::open), run side by side; the first to reach its first
// meaningful byte is finished, the other cancelled. Shared with the openings' coroutines, which
// may outlive the wait for them by a step (they touch only this once cancelled).
struct Race {
  explicit Race(const boost::asio::any_io_executor& e) : wake(e) {}
  relay::Opening o[2];
  routing::Pick pick[2];
  std::optional<UpstreamAttempt> stages;  // the hedge's own (the first attempt's are the loop's)
  bool started[2] = {false, false};
  bool finished[2] = {false, false};
  bool cancelled[2] = {false, false};
  boost::asio::steady_timer wake;  // cancelled when an opening finishes

  bool allDone() const { return (!started[0] || finished[0]) && (!started[1] || finished[1]); }
  boost::asio::awaitable<void> waitUntil(Clock::time_point until) {
    wake.expires_at(until);
    boost::system::error_code ec;
    co_await wake.async_wait(boost::asio::redirect_error(boost::asio::use_awaitable, ec));
  }
};

boost::asio::awaitable<void> openIn(std::shared_ptr<Race> race, int i, Relay& relay, const UpstreamAttempt* stages) {
  try {
    co_await relay.open(race->pick[i], stages, race->o[i]);
  } catch (const std::exception& e) {
    race->o[i].done = true;
    race->o[i].a.why = std::string("internal error: ") + e.what();
  }
  race->finished[i] = true;
  race->wake.cancel();
}

// How long the attempt on `p` may go without a first byte before the next candidate is started
// too (routing.hedge_after; auto: the channel's recent p95); 0: no hedge.
relay::Millis hedgeDelay(const config::RoutingConfig& rc, const routing::Pick& p) {
  if (!rc.hedge_auto) return rc.hedge_after;
  const double p95 = p.channel->health->recent.p95();
  return p95 < 0 ? relay::Millis(0) : relay::Millis(static_cast<std::int64_t>(std::ceil(p95)) + 1);
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
  int n = 1;               // the request's attempt number, across its models
  bool hedgeUsed = false;  // at most one hedge a request
  for (;;) {
    relay.fallback_left = nextFallback < fallbacks.size();
    // This model's candidates are the walk's; the next model's are made when it is moved on to.
    routing::Attempts attempts(*snap.router, std::exchange(modelCandidates, {}));
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
        ua->target = relay.target(pick);
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
      // A failed attempt's bookkeeping: its health, its line in the log and the summary, what the
      // stages took for it given back (a key's request, none of its tokens), what is tried next.
      // False when a rule said this model's channels won't do.
      auto failed = [&](const routing::Pick& fp, Attempt& fa, bool report) -> boost::asio::awaitable<bool> {
        if (report) snap.router->report(fp, fa.outcome, fa.status, fa.retry_after_ms, fa.why, fa.first_byte_ms);
        appendAttempt(rec.attempts_json, fp, ex.route.upstream_model, fa);
        if (wayback::takes(ex, Stage::kAttempt)) co_await wayback::attemptFailed(ex, fp);
        summary.push_back(fmt::format("#{} {} key {}: {}", n, fp.channel->cfg.name, fp.key->id, fa.why));
        allTimeouts = allTimeouts && fa.timeout;
        all429 = all429 && fa.status == 429;
        if (fa.status == 429) retryAfter = std::max(retryAfter, fa.retry_after_ms);
        ++n;
        ++tries;
        if (fa.outcome == routing::Outcome::Fallback) co_return false;
        attempts.failed(fp, fa.outcome);
        if (tries < maxAttempts && report)
          metrics::registry().retry(fp.channel->cfg.name, fa.timeout         ? "timeout"
                                                          : fa.status >= 400 ? std::to_string(fa.status)
                                                          : fa.status > 0    ? "stream"
                                                                             : "connect");
        co_return true;
      };
      // The attempt the client got: its health and its line in the log; the request settles on it.
      // A success settled before its last bytes went out (the limits stage's commit hook); any
      // other answer (an error the client must fix, a stream that broke after it started)
      // settles with what is known when the request completes, charged to this attempt.
      auto delivered = [&](const routing::Pick& dp, const Attempt& da) {
        snap.router->report(dp, da.outcome, da.status, da.retry_after_ms, da.why, da.first_byte_ms);
        appendAttempt(rec.attempts_json, dp, ex.route.upstream_model, da);
        ex.settle.served = dp;
      };
      if (ua && ua->fail_status != 0) {  // a stage failed it unsent (a cloud key without a token)
        Attempt fa;
        fa.outcome = ua->fail_disables ? routing::Outcome::KeyDisable : routing::Outcome::KeyCooldown;
        fa.status = ua->fail_status;
        fa.why = ua->why;
        fa.duration_ms = msSince(attemptStart);
        endAttemptSpan(ex, fa);
        if (!co_await failed(pick, fa, true)) break;
        continue;
      }
      // No hedge for a continuation: the client is waiting on a stream already under way.
      // Nor for a streamed upload: its body can go to one provider only.
      const relay::Millis hedgeIn = hedgeUsed || tries + 1 >= maxAttempts || relay.continuing() || ex.r.body()
                                        ? relay::Millis(0)
                                        : hedgeDelay(cfg.routing, pick);
      if (hedgeIn.count() > 0) {
        // Hedged: the attempt runs on its own; with no first byte after hedgeIn the next candidate
        // is started too. The first to reach its first meaningful byte (or an answer status) is
        // given to the client; the other is cancelled, its connection closed. One hedge a request.
        // Its locals live in a frame of their own, made only for a hedged attempt: the frame every
        // stream holds for its whole life stays small (bench/BENCHMARKS.md, thousands of streams).
        const HedgeEnd end = co_await [&]() -> boost::asio::awaitable<HedgeEnd> {
          Attempt a;
          routing::Pick served = pick;
          auto race = std::make_shared<Race>(co_await boost::asio::this_coro::executor);
          race->pick[0] = pick;
          race->o[0].cancelled = &race->cancelled[0];
          race->started[0] = true;
          boost::asio::co_spawn(race->wake.get_executor(), openIn(race, 0, relay, ua ? &*ua : nullptr),
                                boost::asio::detached);
          co_await race->waitUntil(std::min(Clock::now() + hedgeIn, relay.deadline.at));
          if (!race->finished[0] && !relay.deadline.passed()) {
            std::int64_t cool = 0;
            const auto second = attempts.next(cool);
            bool go = second.channel != nullptr;
            if (go && wayback::takes(ex, Stage::kAttempt)) {
              std::string_view madeB;
              go = !relay.prepareBody(second, madeB);  // one the channel cannot take is not a hedge
              if (go) {
                race->stages.emplace(second, estTokens, madeB);
                race->stages->target = relay.target(second);
                co_await wayback::attempt(ex, *race->stages);
                if (race->stages->skip != UpstreamAttempt::Skip::None) {
                  go = false;
                  if (race->stages->skip == UpstreamAttempt::Skip::Channel)
                    attempts.skipChannel(second);
                  else if (second.probe)
                    second.channel->health->probing.store(false);
                }
              }
            }
            if (go) {
              race->pick[1] = second;
              race->o[1].cancelled = &race->cancelled[1];
              race->started[1] = true;
              boost::asio::co_spawn(race->wake.get_executor(),
                                    openIn(race, 1, relay, race->stages ? &*race->stages : nullptr),
                                    boost::asio::detached);
            } else if (second.channel && second.probe) {
              second.channel->health->probing.store(false);
            }
          }
          // The first opening that reaches an answer wins; one that failed before it is a failed
          // attempt, and the race goes on. A hedge its channel cannot take (its format) is no answer.
          auto answered = [&](int i) {
            return race->started[i] && race->finished[i] && !race->o[i].done && (i == 0 || !race->o[i].untranslatable);
          };
          // An error status while the other may still answer is judged at once (its body read, the
          // rules applied): an answer for the client (a `return`) wins, any other is a failed attempt.
          int winner = -1;
          std::optional<Attempt> judged;  // the winner's, when it was judged in the race
          for (;;) {
            for (int i = 0; i < 2 && winner < 0; ++i) {
              if (!answered(i)) continue;
              const int other = 1 - i;
              if (race->o[i].a.status >= 400 && race->started[other] && !race->finished[other]) {
                Attempt r = co_await relay.finish(race->pick[i], n + i, race->o[i]);
                if (r.delivered) {
                  judged = std::move(r);
                  winner = i;
                } else {
                  race->o[i].a = std::move(r);
                  race->o[i].done = true;
                }
                continue;
              }
              winner = i;
            }
            if (winner >= 0 || race->allDone()) break;
            co_await race->waitUntil(Clock::time_point::max());
          }
          for (int i = 0; i < 2; ++i) {
            if (!race->started[i] || i == winner || race->finished[i]) continue;
            race->cancelled[i] = true;  // the loser: it stops at its next step
            if (race->o[i].conn) race->o[i].conn->close();
          }
          hedgeUsed = race->started[1];
          if (race->started[1])
            metrics::registry().hedge(race->pick[1].channel->cfg.name, winner == 1   ? "won"
                                                                       : winner == 0 ? "lost"
                                                                                     : "failed");
          // The attempts keep the numbers they were started with: the first n, the hedge n + 1.
          const int first = n;
          const int made = race->started[1] ? 2 : 1;
          bool fallback = false;
          // The others' bookkeeping, in the order of their numbers: those before the winner now,
          // those after it once the winner is done.
          auto others = [&](int from, int to) -> boost::asio::awaitable<void> {
            for (int i = from; i < to; ++i) {
              if (i == winner) continue;
              Attempt& la = race->o[i].a;
              la.duration_ms = msSince(la.started);
              const bool own = !race->cancelled[i];  // failed on its own, not cancelled
              if (!own) {
                la.outcome = routing::Outcome::ChannelFailure;
                la.status = 0;
                la.why = fmt::format("hedge: cancelled, {} answered first", race->pick[winner].channel->cfg.name);
              } else if (race->o[i].untranslatable) {
                la.outcome = routing::Outcome::ChannelFailure;
                la.status = race->o[i].untranslatable->status;
                la.why = race->o[i].untranslatable->message;
              }
              n = first + i;
              if (!co_await failed(race->pick[i], la, own)) fallback = true;
            }
            n = first + made;
          };
          co_await others(0, winner < 0 ? made : winner);
          if (winner < 0) {
            endAttemptSpan(ex, race->o[0].a);
            co_return fallback ? HedgeEnd::Break : HedgeEnd::Continue;
          }
          served = race->pick[winner];
          rec.attempts = first + winner;
          rec.channel = served.channel->cfg.name;
          rec.key_id = served.key->id;
          if (judged) {
            a = std::move(*judged);
          } else {
            std::string_view madeW;
            if (!race->o[winner].untranslatable) relay.prepareBody(served, madeW);  // its upstream model again
            a = co_await relay.finish(served, first + winner, race->o[winner]);
          }
          // The loser stops at its next step: wait for it, so nothing of this request outlives it.
          while (!race->allDone()) co_await race->waitUntil(Clock::time_point::max());
          a.duration_ms = msSince(attemptStart);
          endAttemptSpan(ex, a);
          bool more = true;
          if (a.delivered) {
            delivered(served, a);
          } else {
            n = first + winner;
            more = co_await failed(served, a, true);
          }
          co_await others(winner + 1, made);
          if (a.delivered) co_return HedgeEnd::Delivered;
          co_return !more || fallback ? HedgeEnd::Break : HedgeEnd::Continue;
        }();
        if (end == HedgeEnd::Delivered) co_return;
        if (end == HedgeEnd::Break) break;
        continue;
      }
      Attempt a;
      routing::Pick served = pick;
      a = co_await relay.attempt(pick, n, ua ? &*ua : nullptr);
      // A 401 to a cached access token: once, the same attempt again with a fresh token (a
      // token revoked early is not a bad key). A second 401 is the key's, and fails over.
      bool resend = !a.delivered && a.status == 401 && ua && !ua->bearer.empty() && !relay.body_spent &&
                    !relay.continuing() && !relay.deadline.passed();
      if (resend) resend = co_await renewRejectedToken(ex, *ua);  // not inside the && (gcc 12)
      if (resend) {
        summary.push_back(fmt::format("#{} {} key {}: {} (its access token was refused; resent with a new one)", n,
                                      ch.cfg.name, pick.key->id, a.why));
        a = co_await relay.attempt(pick, n, &*ua);
      }
      a.duration_ms = msSince(attemptStart);
      endAttemptSpan(ex, a);
      if (a.delivered) {
        delivered(served, a);
        co_return;
      }
      if (!co_await failed(served, a, true)) break;  // a rule: this model's channels won't do
      if (relay.body_spent) break;  // a streamed upload went (partly) to this one: nothing can resend it
    }
    if (relay.deadline.passed() || relay.body_spent) break;
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

  // Nothing was delivered: the client hears why, in its format (in a frame of its own, made only
  // now, like the hedge's).
  co_await [&]() -> boost::asio::awaitable<void> {
    std::string joined;
    for (const auto& s : summary) joined += (joined.empty() ? "" : "; ") + s;
    if (relay.continuing()) {
      // The client's stream began on an attempt that broke, and nothing could continue it.
      co_await relay.failBegunStream(
          502, "upstream_stream_broken",
          fmt::format("the answer broke after it started and no candidate could continue it: {}", joined));
      co_return;
    }
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
  }();
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
