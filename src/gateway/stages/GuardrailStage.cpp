// guardrail: an external webhook reviews the request as it will go upstream (after redaction):
// allow, warn (a header on the answer), block (400), or fail (fail_open goes on with a header,
// fail_closed answers 503). With guardrail.review_response it also reviews a non-streamed
// answer before it is sent (its response hooks), and may answer a refusal instead.
#include <spdlog/spdlog.h>

#include "cache/Recorder.hpp"
#include "core/JsonText.hpp"
#include "gateway/Exchange.hpp"
#include "gateway/Snapshot.hpp"
#include "gateway/stages/Stages.hpp"
#include "guard/Webhook.hpp"
#include "metrics/Metrics.hpp"
#include "telemetry/RequestTrace.hpp"

namespace sluice::gateway {

namespace {

class GuardrailStage final : public Stage {
 public:
  static bool applies(const Exchange& ex) { return ex.protect.webhook != nullptr; }

  boost::asio::awaitable<Step> onRequest(Exchange& ex) override {
    const auto& sf = *ex.snap.safety;
    const auto* webhook = ex.protect.webhook;
    auto& outgoing = ex.protect.scan.outgoing;
    const std::string payload = reviewPayload(ex, outgoing, "request", {});
    telemetry::ScopedSpan span(ex.trace, "guardrail");
    guard::Verdict v = co_await guard::review(ex.svc.pool, *webhook, payload);
    const char* name =
        v.action == guard::Verdict::Action::Failed && v.timed_out ? "timeout" : guard::verdictName(v.action);
    if (span) span->set("sluice.guardrail.action", name);
    span.end();
    metrics::registry().safety.guardrail(name);
    switch (v.action) {
      case guard::Verdict::Action::Allow:
        break;
      case guard::Verdict::Action::Warn:
        ex.answer.headers.emplace_back("x-sluice-guardrail", "warn");
        break;
      case guard::Verdict::Action::Block: {
        http::Response reply = ex.failure(400, "invalid_request_error", "guardrail_blocked",
                                          "the request was refused by the gateway's guardrail" +
                                              (v.reason.empty() ? std::string() : ": " + v.reason));
        co_await ex.r.send(std::move(reply));
        co_return Step::Answered;
      }
      case guard::Verdict::Action::Failed:
        spdlog::warn("request {}: guardrail webhook failed ({}): {}", ex.ctx.id,
                     sf.failOpen() ? "fail_open" : "fail_closed", v.reason);
        if (!sf.failOpen()) {
          http::Response reply = ex.failure(503, "api_error", "guardrail_unavailable",
                                            "the gateway's guardrail could not review the request (" + v.reason +
                                                ") and is configured fail_closed; retry later");
          co_await ex.r.send(std::move(reply));
          co_return Step::Answered;
        }
        ex.answer.headers.emplace_back("x-sluice-guardrail", "unavailable");
        break;
    }
    if (sf.reviewResponse() && !ex.route.facts.stream) {
      review_ = webhook;
      fail_open_ = sf.failOpen();
      outgoing_ = std::move(outgoing);
    }
    co_return Step::Continue;
  }

  // guardrail.review_response: a whole answer is reviewed before it is sent.
  unsigned hooks() const override { return review_ ? kResponseHeaders | kResponseEnd : 0u; }

  // The webhook sees the answer's text as the upstream wrote it (tokens sealed, as the request
  // went); a block or (fail_closed) a failure answers the client instead.
  boost::asio::awaitable<Step> onResponseEnd(Exchange& ex, const ResponseEnd& e) override {
    std::string text;
    if (auto answer = cache::Recorder::fromAnswer(format_, e.status, e.upstream_body))
      for (const auto& part : answer->response.content)
        if (part.kind == providers::Part::Kind::Text) text += part.text;
    const std::string payload = reviewPayload(ex, outgoing_, "response", text);
    telemetry::ScopedSpan span(ex.trace, "guardrail response");
    guard::Verdict v = co_await guard::review(ex.svc.pool, *review_, payload);
    const char* verdict =
        v.action == guard::Verdict::Action::Failed && v.timed_out ? "timeout" : guard::verdictName(v.action);
    if (span) span->set("sluice.guardrail.action", verdict);
    span.end();
    metrics::registry().safety.guardrail(verdict);
    std::optional<http::Response> refusal;
    if (v.action == guard::Verdict::Action::Warn) {
      ex.answer.headers.emplace_back("x-sluice-guardrail", "warn");
    } else if (v.action == guard::Verdict::Action::Block) {
      refusal = ex.failure(
          400, "invalid_request_error", "guardrail_blocked",
          "the answer was withheld by the gateway's guardrail" + (v.reason.empty() ? std::string() : ": " + v.reason));
    } else if (v.action == guard::Verdict::Action::Failed) {
      spdlog::warn("request {}: guardrail webhook failed on the answer ({}): {}", ex.ctx.id,
                   fail_open_ ? "fail_open" : "fail_closed", v.reason);
      if (!fail_open_) {
        refusal = ex.failure(503, "api_error", "guardrail_unavailable",
                             "the gateway's guardrail could not review the answer (" + v.reason +
                                 ") and is configured fail_closed; retry later");
      } else {
        ex.answer.headers.emplace_back("x-sluice-guardrail", "unavailable");
      }
    }
    if (!refusal) co_return Step::Continue;
    co_await ex.r.send(std::move(*refusal));
    co_return Step::Answered;
  }

  void onResponseHeaders(Exchange&, ResponseHead& h) override { format_ = h.upstream_format; }

 private:
  const guard::WebhookTarget* review_ = nullptr;  // set: the answer is reviewed
  bool fail_open_ = true;
  std::vector<pipeline::OutgoingText> outgoing_;              // the request's texts, for that review
  providers::Format format_ = providers::Format::OpenAIChat;  // of the upstream's bytes
};

}  // namespace

std::string reviewPayload(const Exchange& ex, const std::vector<pipeline::OutgoingText>& texts, std::string_view phase,
                          std::string_view answer) {
  const auto* vk = ex.caller.vk;
  std::string out;
  out.reserve(256);
  out.append("{\"phase\":");
  appendJsonString(out, phase);
  out.append(",\"request_id\":");
  appendJsonString(out, ex.ctx.id);
  out.append(",\"model\":");
  appendJsonString(out, ex.route.facts.model);
  out.append(",\"key\":");
  if (vk) {
    out.append("{\"id\":").append(std::to_string(vk->id)).append(",\"name\":");
    appendJsonString(out, vk->name);
    out.append("}");
  } else {
    out.append("null");
  }
  out.append(",\"messages\":[");
  bool first = true;
  for (const auto& t : texts) {
    if (!first) out.push_back(',');
    first = false;
    out.append("{\"role\":");
    appendJsonString(out, t.role);
    out.append(",\"text\":");
    appendJsonString(out, t.text);
    out.append("}");
  }
  out.append("]");
  if (phase == "response") {
    out.append(",\"response\":");
    appendJsonString(out, answer);
  }
  out.append("}");
  return out;
}

std::unique_ptr<const StageConfig> makeGuardrailStage(const Snapshot&) {
  return std::make_unique<SimpleStageConfig<GuardrailStage>>("guardrail");
}

}  // namespace sluice::gateway
