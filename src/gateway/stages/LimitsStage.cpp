// limits: the caller's own rate limits, concurrency and budgets (a virtual key's), charged up
// front on the estimate before any work is spent on the request; a refusal is a 429 (or a
// spent budget) in the caller's format with the x-ratelimit-* figures, which every answer of an
// admitted request carries too. Per upstream attempt it charges the provider's own quotas (a
// channel's, a key's) and passes over a pick at its limit. On the way back it settles: the real
// usage and cost replace the estimate, right before a success's last bytes go out, or when the
// request completes on every other path.
#include <algorithm>
#include <optional>
#include <vector>

#include "cluster/Limiter.hpp"
#include "gateway/Exchange.hpp"
#include "gateway/LimitRefusal.hpp"
#include "gateway/Snapshot.hpp"
#include "gateway/stages/Stages.hpp"
#include "pipeline/Pricing.hpp"

namespace sluice::gateway {

namespace {

// Output assumed for a budget reservation when the client set no cap.
constexpr std::int64_t kDefaultOutputEstimate = 1024;

// Whether a channel has quotas of its own (on itself or on each of its keys).
bool hasQuota(const routing::Channel& ch) {
  const auto& c = ch.cfg;
  return c.rpm > 0 || c.tpm > 0 || c.max_concurrent > 0 || c.key_rpm > 0 || c.key_tpm > 0;
}

class LimitsStage final : public Stage {
 public:
  // callerLimits: a virtual key with limits of its own; quotas: a candidate channel has some.
  LimitsStage(bool callerLimits, bool quotas)
      : hooks_(kComplete | (quotas ? kAttempt : 0u) | (callerLimits || quotas ? kResponseCommit : 0u)) {}

  unsigned hooks() const override { return hooks_; }

  boost::asio::awaitable<Step> onRequest(Exchange& ex) override {
    const auto* vk = ex.caller.vk;
    const bool keyLimits = vk && vk->subject.spec.any();
    const bool teamLimits = vk && vk->team && vk->team->spec.any();
    if (!keyLimits && !teamLimits) co_return Step::Continue;
    const auto& facts = ex.route.facts;
    const auto& price = ex.settle.price;
    const std::string& text = ex.req.body();
    const double estCost =
        price ? pipeline::PriceTable::cost(*price, static_cast<std::int64_t>(text.size() / 4),
                                           facts.max_tokens > 0 ? facts.max_tokens : kDefaultOutputEstimate, 0)
              : 0.0;
    const cluster::Charge charge{ex.ctx.id, ex.route.est_tokens, estCost};
    // The key's own limits, then its team's (which bound the sum of the team's keys). A request
    // the team refuses gives the key's charge back (its request stays counted in the key's RPM
    // window, as a failed attempt's does).
    std::optional<Held> keyHold;
    std::optional<LimitRefusal> refused;
    if (keyLimits) {
      Held h{vk->subject, charge, nullptr, nullptr};
      auto d = co_await ex.settle.limiter().acquire(h.subject, h.charge);
      ex.answer.rate_headers = rateLimitHeaders(d);
      if (d.allowed)
        keyHold = std::move(h);
      else
        refused = refusalFor(d, "key " + vk->name, ex.route.est_tokens);
    }
    if (teamLimits && !refused) {
      Held h{*vk->team, charge, nullptr, nullptr};
      auto d = co_await ex.settle.limiter().acquire(h.subject, h.charge);
      if (!keyLimits || !d.allowed) ex.answer.rate_headers = rateLimitHeaders(d);
      if (d.allowed) {
        ex.settle.hold(std::move(h));
      } else {
        refused = refusalFor(d, "team " + vk->team_name, ex.route.est_tokens);
        if (keyHold) {
          co_await ex.settle.limiter().settle(keyHold->subject, keyHold->charge, 0, 0);
          keyHold.reset();
        }
      }
    }
    if (refused) {
      http::Response reply = refusalResponse(ex.call.wire, ex.ctx, ex.rec, *refused, ex.answer.rate_headers);
      co_await ex.r.send(std::move(reply));
      co_return Step::Answered;
    }
    if (keyHold) ex.settle.hold(std::move(*keyHold));
    co_return Step::Continue;
  }

  // The provider's own quotas, per attempt: a channel's (charged once per request, whichever of
  // its keys is tried) and a key's. One at its limit is passed over, not tried.
  boost::asio::awaitable<void> onAttempt(Exchange& ex, UpstreamAttempt& a) override {
    const auto& ch = *a.pick.channel;
    auto& settle = ex.settle;
    const auto& id = ex.ctx.id;
    if ((ch.cfg.rpm > 0 || ch.cfg.tpm > 0 || ch.cfg.max_concurrent > 0) &&
        std::find(charged_.begin(), charged_.end(), &ch) == charged_.end()) {
      Held h{cluster::Subject{"ch:" + ch.cfg.name, {}}, cluster::Charge{id, a.est_tokens, 0}, &ch, nullptr};
      h.subject.spec.rpm = ch.cfg.rpm;
      h.subject.spec.tpm = ch.cfg.tpm;
      h.subject.spec.max_concurrent = ch.cfg.max_concurrent;
      auto d = co_await settle.limiter().acquire(h.subject, h.charge);
      if (!d.allowed) {
        passOver(a, d, "channel " + ch.cfg.name, UpstreamAttempt::Skip::Channel);
        co_return;
      }
      charged_.push_back(&ch);
      settle.hold(std::move(h));
    }
    if (ch.cfg.key_rpm > 0 || ch.cfg.key_tpm > 0) {
      Held h{cluster::Subject{"uk:" + ch.cfg.name + ":" + a.pick.key->ref, {}}, cluster::Charge{id, a.est_tokens, 0},
             &ch, a.pick.key};
      h.subject.spec.rpm = ch.cfg.key_rpm;
      h.subject.spec.tpm = ch.cfg.key_tpm;
      auto d = co_await settle.limiter().acquire(h.subject, h.charge);
      if (!d.allowed) {
        passOver(a, d, "key " + a.pick.key->id + " of channel " + ch.cfg.name, UpstreamAttempt::Skip::Key);
        co_return;
      }
      settle.hold(std::move(h));
    }
  }

  // A failed attempt used its key's request but none of its tokens. Found by its key: a hedged
  // request holds two attempts' at once.
  boost::asio::awaitable<void> onAttemptFailed(Exchange& ex, const routing::Pick& p) override {
    if (const auto i = ex.settle.keyHold(p.key); i < ex.settle.heldCount()) co_await ex.settle.releaseAt(i);
  }

  // A success settles right before its last bytes go out: the real usage and cost replace the
  // estimate, so the client's next request finds its slot, tokens and spend counted.
  boost::asio::awaitable<void> onResponseCommit(Exchange& ex, const ResponseEnd& e) override {
    if (ex.settle.begin(*ex.snap.prices, ex.rec, ex.route.routed_model, ex.route.upstream_model))
      co_await ex.settle.settleHeld(&e.pick, ex.rec);
  }

  // Every path that did not settle already (an error answer, a stream broken after it began,
  // no channel answered, an early answer, an exception): the caller's own charge gets what usage
  // is known, the channels' and keys' give their tokens back unless their attempt was served.
  boost::asio::awaitable<void> onComplete(Exchange& ex) override {
    if (ex.settle.begin(*ex.snap.prices, ex.rec, ex.route.routed_model, ex.route.upstream_model)) {
      const auto& served = ex.settle.served;
      co_await ex.settle.settleHeld(served ? &*served : nullptr, ex.rec);
    }
  }

 private:
  static void passOver(UpstreamAttempt& a, const cluster::Decision& d, const std::string& who,
                       UpstreamAttempt::Skip skip) {
    a.skip = skip;
    a.why = refusalFor(d, who, a.est_tokens).message;
    a.retry_after_ms = d.retry_after_ms;
  }

  unsigned hooks_;
  std::vector<const routing::Channel*> charged_;  // channels this request holds a quota charge on
};

class LimitsStageConfig final : public StageConfig {
 public:
  std::string_view name() const override { return "limits"; }
  // Always started: the settlement at completion also prices the request.
  Stage* start(const Exchange& ex, StageArena& arena) const override {
    const auto* vk = ex.caller.vk;
    const bool callerLimits = vk && (vk->subject.spec.any() || (vk->team && vk->team->spec.any()));
    const auto& cands = ex.route.candidates;
    const bool quotas = std::any_of(cands.begin(), cands.end(), [](const auto* c) { return hasQuota(*c); });
    return arena.make<LimitsStage>(callerLimits, quotas);
  }
};

}  // namespace

std::unique_ptr<const StageConfig> makeLimitsStage(const Snapshot&) {
  return std::make_unique<LimitsStageConfig>();
}

}  // namespace sluice::gateway
