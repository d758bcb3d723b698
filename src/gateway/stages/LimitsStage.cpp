// limits: the caller's own rate limits, concurrency and budgets (a virtual key's), charged up
// front on the estimate before any work is spent on the request; a refusal is a 429 (or a
// spent budget) in the caller's format with the x-ratelimit-* figures, which every answer of an
// admitted request carries too. On the way back it settles: the real usage and cost replace the
// estimate (the relay settles a success before its last bytes; this is every other path).
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

class LimitsStage final : public Stage {
 public:
  // Always: the settlement at completion also prices the request.
  static bool applies(const Exchange&) { return true; }

  boost::asio::awaitable<Step> onRequest(Exchange& ex) override {
    const auto* vk = ex.caller.vk;
    if (!vk || !vk->subject.spec.any()) co_return Step::Continue;
    const auto& facts = ex.route.facts;
    const auto& price = ex.settle.price;
    const std::string& text = ex.req.body();
    const double estCost =
        price ? pipeline::PriceTable::cost(*price, static_cast<std::int64_t>(text.size() / 4),
                                           facts.max_tokens > 0 ? facts.max_tokens : kDefaultOutputEstimate, 0)
              : 0.0;
    Held h{vk->subject, cluster::Charge{ex.ctx.id, ex.route.est_tokens, estCost}, nullptr, nullptr};
    auto d = co_await ex.settle.limiter().acquire(h.subject, h.charge);
    ex.answer.rate_headers = rateLimitHeaders(d);
    if (!d.allowed) {
      const LimitRefusal why = refusalFor(d, "key " + vk->name, ex.route.est_tokens);
      http::Response reply = refusalResponse(ex.call.wire, ex.ctx, ex.rec, why, ex.answer.rate_headers);
      co_await ex.r.send(std::move(reply));
      co_return Step::Answered;
    }
    ex.settle.hold(std::move(h));
    co_return Step::Continue;
  }

  // Every path that did not settle already (no channel answered, an early answer, an
  // exception): the caller's own charge gets what usage is known, the channels' and keys' give
  // their tokens back.
  boost::asio::awaitable<void> onComplete(Exchange& ex) override {
    if (ex.settle.begin(*ex.snap.prices, ex.rec, ex.route.routed_model, ex.route.upstream_model))
      co_await ex.settle.settleHeld(nullptr, ex.rec);
  }
};

}  // namespace

std::unique_ptr<const StageConfig> makeLimitsStage(const Snapshot&) {
  return std::make_unique<SimpleStageConfig<LimitsStage>>("limits");
}

}  // namespace sluice::gateway
