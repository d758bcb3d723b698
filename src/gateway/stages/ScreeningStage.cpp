// screening: the prompt-injection screen on what the client sent (before redaction), each part
// scored on its own as screening.scope says: the last user turn, and every tool result /
// function output (an injection planted in a document, a web page or an e-mail an agent read
// arrives that way). A request with a flagged part is blocked (400), marked in a header (warn)
// or only noted in the log, as the gateway's, the key's or the channel's setting says (the scan
// stage decided which). Every part's verdict goes into the request log.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "core/JsonText.hpp"
#include "gateway/Exchange.hpp"
#include "gateway/Snapshot.hpp"
#include "gateway/stages/Stages.hpp"
#include "metrics/Metrics.hpp"

namespace sluice::gateway {

namespace {

class ScreeningStage final : public Stage {
 public:
  static bool applies(const Exchange& ex) {
    const auto& scan = ex.protect.scan;
    return ex.protect.screen != config::ScreenAction::Off && scan.ok &&
           (!scan.user_text.empty() || !scan.tool_texts.empty());
  }

  boost::asio::awaitable<Step> onRequest(Exchange& ex) override {
    const auto& sf = *ex.snap.safety;
    auto& counters = metrics::registry().safety;
    counters.screened_total.fetch_add(1, std::memory_order_relaxed);
    const auto& scan = ex.protect.scan;
    // The most suspicious part decides; every part is logged.
    pipeline::ScreenResult verdict;
    std::string where;
    std::string& log = ex.rec.screening;
    log = "[";
    auto judge = [&](std::string_view part, std::string_view path, std::string_view text) {
      const pipeline::ScreenResult r = sf.screen(text);
      if (log.size() > 1) log += ',';
      log += fmt::format("{{\"part\":\"{}\"", part);
      if (!path.empty()) {
        log += ",\"path\":";
        appendJsonString(log, path);
      }
      log += fmt::format(",\"score\":{:.4f},\"flagged\":{}}}", r.score, r.flagged ? "true" : "false");
      if (r.flagged && (!verdict.flagged || r.score > verdict.score)) {
        verdict = r;
        where = path.empty() ? std::string("the user turn") : fmt::format("the tool result at {}", path);
      }
    };
    if (!scan.user_text.empty()) judge("user", {}, scan.user_text);
    for (const auto& t : scan.tool_texts) judge("tool", t.path, t.text);
    log += ']';
    if (!verdict.flagged) co_return Step::Continue;
    const std::string why = verdict.deny.empty()
                                ? fmt::format("prompt-injection score {:.2f} (threshold {:.2f}) in {}", verdict.score,
                                              sf.threshold(), where)
                                : fmt::format("{} matches the deny-list pattern {}", where, verdict.deny);
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
