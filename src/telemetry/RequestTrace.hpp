// One request's spans as they happen: the request's own (index 0, a SERVER span) and its
// children (attempts, connects, first bytes, the guardrail, the cache). Owned by the trace stage
// for the request's life and handed whole to the exporter when it completes; one worker thread
// touches it. A trace that is not sampled still carries the context an upstream is given (its
// traceparent says "not sampled") but records no span.
#pragma once
#include <chrono>
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "telemetry/Span.hpp"
#include "telemetry/TraceContext.hpp"

namespace sluice::telemetry {

class RequestTrace {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr std::size_t kNone = static_cast<std::size_t>(-1);
  static constexpr std::size_t kMaxSpans = 64;  // a request's bound (attempts x their children)

  // `trace`: the client's trace, or a new one; `parent`: the client's span (all zero: none).
  // `start`: when the request arrived.
  RequestTrace(const TraceId& trace, const SpanId& parent, bool sampled, Clock::time_point start);

  bool sampled() const { return sampled_; }
  const TraceId& traceId() const { return trace_; }

  // A child of `parent` (a span index) started at `at`; kNone when not sampled or past the bound.
  std::size_t begin(std::string_view name, SpanKind kind, std::size_t parent = 0, Clock::time_point at = Clock::now());
  void end(std::size_t span, Clock::time_point at = Clock::now());
  // The span (nullptr for kNone), to set attributes and status on.
  SpanRecord* at(std::size_t span) { return span < spans_.size() ? &spans_[span] : nullptr; }
  // A finished child in one call (a wait measured by the caller).
  std::size_t add(std::string_view name, std::size_t parent, Clock::time_point from, Clock::time_point to);

  // The upstream attempt under way (its span is the parent of its connect and first byte).
  std::size_t attempt = kNone;
  // What an upstream is sent: "traceparent: ...\r\n" (and the client's tracestate, when valid),
  // naming the attempt's span, or the request's when not sampled.
  void appendUpstreamHeaders(std::string& head) const;
  std::string tracestate;  // checked (checkTracestate); empty: none to pass on

  // Content capture (telemetry.capture_content): the answer's first bytes, as the log sees them.
  bool capture = false;
  std::string output;
  static constexpr std::size_t kCaptureMax = 16 * 1024;
  void captureOutput(std::string_view bytes);

  // Ends the request's span now and hands over every span.
  std::vector<SpanRecord> finish();

 private:
  std::int64_t unixNanos(Clock::time_point t) const;

  TraceId trace_;
  SpanId root_id_;  // the request's span (also when not sampled: the upstream's parent then)
  bool sampled_;
  Clock::time_point steady0_;
  std::int64_t wall0_ns_;  // Unix time of steady0_
  std::vector<SpanRecord> spans_;
};

// A child span for a scope (a stage's wait): ends when it goes out of scope. Costs a branch when
// `t` is null (tracing off) or the trace is not sampled.
class ScopedSpan {
 public:
  ScopedSpan(RequestTrace* t, std::string_view name, std::size_t parent = 0)
      : t_(t), i_(t ? t->begin(name, SpanKind::Internal, parent) : RequestTrace::kNone) {}
  ~ScopedSpan() { end(); }
  // Ends it now (the scope goes on); a second end is a no-op.
  void end() {
    if (t_ && i_ != RequestTrace::kNone) t_->end(i_);
  }
  ScopedSpan(const ScopedSpan&) = delete;
  ScopedSpan& operator=(const ScopedSpan&) = delete;
  SpanRecord* operator->() { return t_ ? t_->at(i_) : nullptr; }
  explicit operator bool() const { return t_ && i_ != RequestTrace::kNone; }

 private:
  RequestTrace* t_;
  std::size_t i_;
};

}  // namespace sluice::telemetry
