// screening: the prompt-injection screen on the last user turn, as the client sent it (before
// redaction). A flagged prompt is blocked (400), marked in a header (warn) or only noted in the
// log, as the gateway's, the key's or the channel's setting says (the scan stage decided which).
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "gateway/Exchange.hpp"
#include "gateway/Snapshot.hpp"
#include "gateway/stages/Stages.hpp"
#include "metrics/Metrics.hpp"

namespace sluice::gateway {

namespace {

class ScreeningStage final : public Stage {
 public:
  static bool applies(const Exchange& ex) {
    return ex.protect.screen != config::ScreenAction::Off && ex.protect.scan.ok && !ex.protect.scan.user_text.empty();
  }

  boost::asio::awaitable<Step> onRequest(Exchange& ex) override {
    const auto& sf = *ex.snap.safety;
    auto& counters = metrics::registry().safety;
    counters.screened_total.fetch_add(1, std::memory_order_relaxed);
    const pipeline::ScreenResult verdict = sf.screen(ex.protect.scan.user_text);
    if (!verdict.flagged) co_return Step::Continue;
    const std::string why =
        verdict.deny.empty()
            ? fmt::format("prompt-injection score {:.2f} (threshold {:.2f})", verdict.score, sf.threshold())
            : fmt::format("the prompt matches the deny-list pattern {}", verdict.deny);
    if (!verdict.deny.empty()) counters.screened("deny_hit");
    const config::ScreenAction action = ex.protect.screen;
    switch (action) {
      case config::ScreenAction::Block: {
        counters.screened("blocked");
        spdlog::info("request {}: blocked by the prompt-injection screen: {}", ex.ctx.id, why);
        http::Response reply = ex.failure(400, "invalid_request_error", "prompt_injection_detected",
                                          "the request was refused by the gateway's prompt-injection screen: " + why);
        co_await ex.r.send(std::move(reply));
        co_return Step::Answered;
      }
      case config::ScreenAction::Warn:
        counters.screened("flagged_warn");
        ex.answer.headers.emplace_back("x-sluice-screening", fmt::format("flagged; score={:.2f}", verdict.score));
        break;
      case config::ScreenAction::Log:
      case config::ScreenAction::Off:
        counters.screened("flagged_log");
        break;
    }
    spdlog::info("request {}: flagged by the prompt-injection screen ({}): {}", ex.ctx.id,
                 config::screenActionName(action), why);
    ex.rec.error = "screening: " + why;  // noted in the log even though the request goes on
    co_return Step::Continue;
  }
};

}  // namespace

std::unique_ptr<const StageConfig> makeScreeningStage(const Snapshot&) {
  return std::make_unique<SimpleStageConfig<ScreeningStage>>("screening");
}

}  // namespace sluice::gateway
