#include "telemetry/RequestTrace.hpp"

namespace sluice::telemetry {

RequestTrace::RequestTrace(const TraceId& trace, const SpanId& parent, bool sampled, Clock::time_point start)
    : trace_(trace), root_id_(newSpanId()), sampled_(sampled), steady0_(start) {
  const auto wallNow = std::chrono::system_clock::now();
  const auto steadyNow = Clock::now();
  wall0_ns_ = std::chrono::duration_cast<std::chrono::nanoseconds>(wallNow.time_since_epoch()).count() -
              std::chrono::duration_cast<std::chrono::nanoseconds>(steadyNow - start).count();
  if (!sampled_) return;
  spans_.reserve(6);
  SpanRecord& root = spans_.emplace_back();
  root.trace = trace_;
  root.id = root_id_;
  root.parent = parent;
  root.kind = SpanKind::Server;
  root.start_ns = wall0_ns_;
}

std::int64_t RequestTrace::unixNanos(Clock::time_point t) const {
  return wall0_ns_ + std::chrono::duration_cast<std::chrono::nanoseconds>(t - steady0_).count();
}

std::size_t RequestTrace::begin(std::string_view name, SpanKind kind, std::size_t parent, Clock::time_point at) {
  if (!sampled_ || spans_.size() >= kMaxSpans || parent >= spans_.size()) return kNone;
  const SpanId parentId = spans_[parent].id;
  SpanRecord& s = spans_.emplace_back();
  s.trace = trace_;
  s.id = newSpanId();
  s.parent = parentId;
  s.name = std::string(name);
  s.kind = kind;
  s.start_ns = unixNanos(at);
  return spans_.size() - 1;
}

void RequestTrace::end(std::size_t span, Clock::time_point at) {
  if (span < spans_.size() && spans_[span].end_ns == 0) spans_[span].end_ns = unixNanos(at);
}

std::size_t RequestTrace::add(std::string_view name, std::size_t parent, Clock::time_point from, Clock::time_point to) {
  const std::size_t i = begin(name, SpanKind::Internal, parent, from);
  end(i, to);
  return i;
}

void RequestTrace::appendUpstreamHeaders(std::string& head) const {
  const SpanId& parent = attempt < spans_.size() ? spans_[attempt].id : root_id_;
  head.append("traceparent: ").append(formatTraceparent(trace_, parent, sampled_)).append("\r\n");
  if (!tracestate.empty()) head.append("tracestate: ").append(tracestate).append("\r\n");
}

void RequestTrace::captureOutput(std::string_view bytes) {
  if (!capture || output.size() >= kCaptureMax) return;
  output.append(bytes.substr(0, kCaptureMax - output.size()));
}

std::vector<SpanRecord> RequestTrace::finish() {
  const auto now = Clock::now();
  for (auto& s : spans_)
    if (s.end_ns == 0) s.end_ns = unixNanos(now);
  return std::move(spans_);
}

}  // namespace sluice::telemetry
