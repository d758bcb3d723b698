// redaction: secrets and personal data out of the body before any text leaves the gateway, by
// the rules of the config (mask, encrypt into tokens, or block the request with a 400). Tokens
// are sealed per caller; when any were issued, the answer is restored on its way back (this
// stage's response hooks; a cache hit is restored by the cache stage's replay), so the client
// reads its own data again.
#include <fmt/format.h>

#include "gateway/Exchange.hpp"
#include "gateway/Snapshot.hpp"
#include "gateway/StreamTaps.hpp"
#include "gateway/stages/Stages.hpp"
#include "metrics/Metrics.hpp"
#include "pipeline/Protect.hpp"
#include "redact/Restorer.hpp"

namespace sluice::gateway {

namespace {

class RedactionStage final : public Stage {
 public:
  static bool applies(const Exchange& ex) { return ex.protect.redacting; }

  boost::asio::awaitable<Step> onRequest(Exchange& ex) override {
    auto& counters = metrics::registry().safety;
    auto& protect = ex.protect;
    auto& scan = protect.scan;
    if (scan.ok) {
      if (!scan.blocked_rule.empty()) {
        counters.redacted(scan.blocked_rule, "block");
        http::Response reply =
            ex.failure(400, "invalid_request_error", "redaction_blocked",
                       fmt::format("the request contains data the gateway may not send upstream ({} in {}); "
                                   "remove it and retry",
                                   scan.blocked_rule, scan.blocked_path));
        co_await ex.r.send(std::move(reply));
        co_return Step::Answered;
      }
      for (const auto& rule : scan.rules_hit) counters.redacted(rule, "redact");
      if (scan.changed) ex.req.body() = std::move(scan.body);
      if (scan.encrypted > 0 && protect.cipher) {
        ex.answer.restore_cipher = protect.cipher;
        ex.answer.restore_stats = std::make_shared<redact::RestoreStats>();
        ex.answer.restore_memo = std::move(protect.memo);
        ex.answer.force_translate = true;
        restoring_ = true;
      }
    }
    // The log keeps the body as it went upstream, never what redaction kept from leaving.
    const auto& st = ex.snap.cfg->store;
    if (st.log_bodies) ex.rec.request_body = ex.req.body().substr(0, st.log_body_max_bytes);
    co_return Step::Continue;
  }

  // Tokens were issued: the answer is restored on its way back.
  unsigned hooks() const override { return restoring_ ? kResponseHeaders | kResponseData : 0u; }

  // How this attempt's answer is restored: a whole body at once; an OpenAI Chat stream relayed
  // as it came, event by event on the bytes; any other stream as events, inside the relay's
  // encoder (tokens split across events in any format), whose bytes the log then keeps as they
  // came from upstream (what the client reads holds the restored text).
  void onResponseHeaders(Exchange& ex, ResponseHead& h) override {
    const auto& plan = ex.answer;
    chat_.reset();
    mode_ = Mode::Whole;
    if (!h.stream) return;
    if (!h.translated && h.client_format == providers::Format::OpenAIChat) {
      mode_ = Mode::ChatBytes;
      chat_ = makeChatStreamRestorer(plan.restore_cipher, plan.restore_stats, plan.restore_memo);
      return;
    }
    mode_ = Mode::Events;
    h.wrap_encoder = [cipher = plan.restore_cipher, stats = plan.restore_stats,
                      memo = plan.restore_memo](std::unique_ptr<providers::StreamEncoder> inner) {
      return pipeline::makeRestoringEncoder(std::move(inner), cipher, stats, memo);
    };
    h.log_upstream_bytes = true;
  }

  DataStep onResponseData(Exchange& ex, ResponseData& d) override {
    const auto& plan = ex.answer;
    switch (mode_) {
      case Mode::Whole: {
        redact::RestoreStats st;
        pipeline::restoreWholeBody(d.out, *plan.restore_cipher, st, plan.restore_memo.get());
        countRestored(st);
        return DataStep::Continue;
      }
      case Mode::ChatBytes:
        chat_->restore(d.out);
        if (d.end_of_stream) chat_->finish(d.out);
        break;
      case Mode::Events:  // restored in the relay's encoder
        break;
    }
    if (d.end_of_stream) countRestored(*plan.restore_stats);
    return DataStep::Continue;
  }

 private:
  enum class Mode { Whole, ChatBytes, Events };
  bool restoring_ = false;
  Mode mode_ = Mode::Whole;
  std::unique_ptr<ChatStreamRestorer> chat_;
};

}  // namespace

void countRestored(const redact::RestoreStats& st) {
  auto& m = metrics::registry().safety;
  if (st.restored) m.restored.fetch_add(st.restored, std::memory_order_relaxed);
  if (st.tampered) m.tampered.fetch_add(st.tampered, std::memory_order_relaxed);
}

std::unique_ptr<const StageConfig> makeRedactionStage(const Snapshot&) {
  return std::make_unique<SimpleStageConfig<RedactionStage>>("redaction");
}

}  // namespace sluice::gateway
