// scan: one walk of the body for the three protect stages after it, so that none of them parses
// it again: the last user turn's text for screening (as the client sent it), the body redacted
// for redaction, the outgoing texts for the guardrail. Which of them apply is decided here, from
// the gateway's switches, the caller's key and the preferred channel; only chat-style requests
// are protected (the others are relayed as they are).
#include <optional>

#include "gateway/BodyFacts.hpp"
#include "gateway/Exchange.hpp"
#include "gateway/Snapshot.hpp"
#include "gateway/stages/Stages.hpp"
#include "redact/Redactor.hpp"
#include "redact/Restorer.hpp"

namespace sluice::gateway {

namespace {

struct Plan {
  config::ScreenAction screen = config::ScreenAction::Off;
  bool redacting = false;
  const guard::WebhookTarget* webhook = nullptr;
  bool any() const { return screen != config::ScreenAction::Off || redacting || webhook; }
};

Plan planFor(const Exchange& ex) {
  Plan p;
  if (!ex.call.translatable()) return p;
  const auto& snap = ex.snap;
  const auto* vk = ex.caller.vk;
  const auto& firstCh = ex.route.candidates.front()->cfg;
  // Screening: the key's and the channel's settings over the gateway's default; when both are
  // set the stricter one applies (either may be the one that must not be weakened).
  p.screen = snap.screeningDefault();
  if (firstCh.screening || (vk && vk->screening)) {
    const auto keyAction = vk && vk->screening ? *vk->screening : config::ScreenAction::Off;
    const auto chAction = firstCh.screening.value_or(config::ScreenAction::Off);
    p.screen = std::max(keyAction, chAction);
  }
  p.redacting = snap.redactionOn();
  p.webhook = snap.guardrailOn() ? snap.safety->webhook() : nullptr;
  return p;
}

// Decided once per request, in start(): the stage is made only when the plan has work in it.
class ScanStage final : public Stage {
 public:
  explicit ScanStage(const Plan& plan) : plan_(plan) {}

  boost::asio::awaitable<Step> onRequest(Exchange& ex) override {
    const Plan& plan = plan_;
    const auto& sf = *ex.snap.safety;
    auto& protect = ex.protect;
    protect.screen = plan.screen;
    protect.redacting = plan.redacting;
    protect.webhook = plan.webhook;
    // Tokens are sealed per caller: the key's limiter subject id ("vk:ID") names it already.
    static const std::string kMasterScope = "master";
    const std::string& scope = ex.caller.vk ? ex.caller.vk->subject.id : kMasterScope;
    std::optional<redact::Redactor> redactor;
    if (plan.redacting) {
      protect.cipher = sf.cipherFor(scope);
      protect.memo = std::make_shared<redact::SealMemo>();
      redactor.emplace(sf.rules(), protect.cipher.get(), protect.memo.get());
    }
    pipeline::ScanOptions so;
    so.collect_user_text = plan.screen != config::ScreenAction::Off && sf.scopeUser();
    so.collect_tool_text = plan.screen != config::ScreenAction::Off && sf.scopeTool();
    so.collect_outgoing = plan.webhook != nullptr;
    const std::unique_ptr<ParsedBody> parsed = std::move(ex.route.parsed);  // freed once scanned
    protect.scan = pipeline::scanRequest(ex.call.format(), ex.req.body(), redactor ? &*redactor : nullptr, so,
                                         parsed ? &parsed->doc : nullptr);
    co_return Step::Continue;
  }

 private:
  Plan plan_;
};

class ScanStageConfig final : public StageConfig {
 public:
  std::string_view name() const override { return "scan"; }
  Stage* start(const Exchange& ex, StageArena& arena) const override {
    const Plan plan = planFor(ex);
    return plan.any() ? arena.make<ScanStage>(plan) : nullptr;
  }
};

}  // namespace

std::unique_ptr<const StageConfig> makeScanStage(const Snapshot&) {
  return std::make_unique<ScanStageConfig>();
}

}  // namespace sluice::gateway
