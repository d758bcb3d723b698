// trace: the request's OpenTelemetry span, first in the chain so that every request the gateway
// answers is traced, refusals included. A client's W3C traceparent continues its trace (and its
// sampled flag decides); otherwise telemetry.sample_ratio does. The other stages and the relay add
// children through ex.trace; at completion the request's span takes its attributes from the
// record and every span goes to the exporter's queue.
#include <fmt/format.h>

#include <optional>

#include "gateway/Exchange.hpp"
#include "gateway/Snapshot.hpp"
#include "gateway/Tracing.hpp"
#include "gateway/stages/Stages.hpp"
#include "telemetry/RequestTrace.hpp"
#include "telemetry/Tracer.hpp"

namespace sluice::gateway {

namespace {

// The client's header when it sent exactly one (two traceparents are no trace context at all).
std::optional<std::string_view> single(const http::Request& req, std::string_view name) {
  if (req.count(name) != 1) return std::nullopt;
  const auto v = req[name];
  return std::string_view(v.data(), v.size());
}

std::string_view cacheOutcome(const AnswerPlan& plan) {
  for (const auto& [k, v] : plan.headers)
    if (k == "x-sluice-cache") return v;
  return {};
}

class TraceStage final : public Stage {
 public:
  static bool applies(const Exchange& ex) { return ex.svc.tracer != nullptr && ex.svc.tracer->enabled(); }

  boost::asio::awaitable<Step> onRequest(Exchange& ex) override {
    const auto& cfg = ex.snap.cfg->telemetry;
    std::optional<telemetry::Traceparent> parent;
    if (auto v = single(ex.req, "traceparent")) parent = telemetry::parseTraceparent(*v);
    // ParentBased(TraceIdRatioBased): the client's decision when it sent one, else the ratio.
    const telemetry::TraceId id = parent ? parent->trace : telemetry::newTraceId();
    const bool sampled = parent ? parent->sampled() : telemetry::sampledByRatio(id, cfg.sample_ratio);
    trace_.emplace(id, parent ? parent->parent : telemetry::SpanId{}, sampled, ex.ctx.start);
    // tracestate is read only beside a valid traceparent, and passed on only when well-formed.
    if (parent)
      if (auto v = single(ex.req, "tracestate"))
        if (auto ts = telemetry::checkTracestate(*v)) trace_->tracestate = std::move(*ts);
    trace_->capture = sampled && cfg.capture_content;
    ex.trace = &*trace_;
    co_return Step::Continue;
  }

  unsigned hooks() const override { return kComplete; }

  boost::asio::awaitable<void> onComplete(Exchange& ex) override {
    ex.trace = nullptr;
    if (!trace_ || !trace_->sampled()) co_return;
    describe(ex, *trace_->at(0));
    ex.svc.tracer->submit(trace_->finish());
  }

 private:
  void describe(const Exchange& ex, telemetry::SpanRecord& s) const {
    const auto& rec = ex.rec;
    const std::string_view op = genAiOperation(ex.call);
    const std::string& model = !ex.route.facts.model.empty() ? ex.route.facts.model : ex.call.model;
    s.name = model.empty() ? std::string(op) : fmt::format("{} {}", op, model);
    s.set("http.request.method", std::string_view(ex.req.method_string()));
    s.set("url.path", std::string_view(ex.ctx.path));
    if (rec.status > 0) s.set("http.response.status_code", rec.status);
    s.set("client.address", std::string_view(ex.ctx.remote));
    s.set("gen_ai.operation.name", op);
    if (!model.empty()) s.set("gen_ai.request.model", std::string_view(model));
    if (ex.route.facts.max_tokens > 0) s.set("gen_ai.request.max_tokens", ex.route.facts.max_tokens);
    if (!rec.channel.empty()) {
      for (const auto* c : ex.route.candidates)
        if (c->cfg.name == rec.channel) s.set("gen_ai.provider.name", genAiProvider(c->cfg.type));
      if (rec.status > 0 && rec.status < 400 && !ex.route.upstream_model.empty())
        s.set("gen_ai.response.model", std::string_view(ex.route.upstream_model));
    }
    if (rec.input_tokens >= 0) s.set("gen_ai.usage.input_tokens", rec.input_tokens);
    if (rec.output_tokens >= 0) s.set("gen_ai.usage.output_tokens", rec.output_tokens);
    s.set("sluice.request_id", std::string_view(ex.ctx.id));
    s.set("sluice.stream", ex.route.facts.stream);
    if (!rec.channel.empty()) s.set("sluice.channel", std::string_view(rec.channel));
    s.set("sluice.attempts", rec.attempts);
    if (auto c = cacheOutcome(ex.answer); !c.empty()) s.set("sluice.cache", c);
    if (rec.virtual_key_id) s.set("sluice.virtual_key_id", *rec.virtual_key_id);
    if (rec.cost_usd > 0) s.set("sluice.cost_usd", rec.cost_usd);
    if (!rec.error.empty()) s.set("sluice.error", ex.snap.scrubber.scrubbed(rec.error));
    // A SERVER span's error is a 5xx; a 4xx is the client's and leaves the status unset.
    if (rec.status >= 500) {
      s.status = telemetry::StatusCode::Error;
      s.status_message = ex.snap.scrubber.scrubbed(rec.error);
      s.set("error.type", std::to_string(rec.status));
    }
    if (trace_->capture) {
      // As the log keeps them: the body as it went upstream (after redaction), the answer's first
      // bytes as they came (tokens sealed), provider keys masked in both.
      const std::string_view body = ex.req.body();
      s.set("gen_ai.input.messages", ex.snap.scrubber.scrubbed(body.substr(0, telemetry::RequestTrace::kCaptureMax)));
      if (!trace_->output.empty()) s.set("gen_ai.output.messages", ex.snap.scrubber.scrubbed(trace_->output));
    }
  }

  std::optional<telemetry::RequestTrace> trace_;
};

}  // namespace

std::unique_ptr<const StageConfig> makeTraceStage(const Snapshot&) {
  return std::make_unique<SimpleStageConfig<TraceStage>>("trace");
}

}  // namespace sluice::gateway
