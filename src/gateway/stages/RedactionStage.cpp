// redaction: secrets and personal data out of the body before any text leaves the gateway, by
// the rules of the config (mask, encrypt into tokens, or block the request with a 400). Tokens
// are sealed per caller; when any were issued, the answer goes back through a restorer (the
// relay applies the plan this stage writes), so the client reads its own data again.
#include <fmt/format.h>

#include "gateway/Exchange.hpp"
#include "gateway/Snapshot.hpp"
#include "gateway/stages/Stages.hpp"
#include "metrics/Metrics.hpp"
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
      }
    }
    // The log keeps the body as it went upstream, never what redaction kept from leaving.
    const auto& st = ex.snap.cfg->store;
    if (st.log_bodies) ex.rec.request_body = ex.req.body().substr(0, st.log_body_max_bytes);
    co_return Step::Continue;
  }
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
