// W3C Trace Context (https://www.w3.org/TR/trace-context/): the `traceparent` a client sends,
// read strictly (anything that is not exactly the grammar starts a new trace; the client's bytes
// are never passed on), the `tracestate` beside it checked against its list grammar, the
// identifiers Sluice makes, and the sampling decision for the traces it starts.
#pragma once
#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace sluice::telemetry {

struct TraceId {
  std::array<std::uint8_t, 16> b{};
  bool valid() const;  // not all zero
  bool operator==(const TraceId&) const = default;
};
struct SpanId {
  std::array<std::uint8_t, 8> b{};
  bool valid() const;  // not all zero
  bool operator==(const SpanId&) const = default;
};

struct Traceparent {
  TraceId trace;
  SpanId parent;
  std::uint8_t flags = 0;
  bool sampled() const { return (flags & 1u) != 0; }
};

// The header's value as the W3C grammar has it: version 00 is exactly
// "00-<32 hex>-<16 hex>-<2 hex>" (lower-case hex, neither id all zeros); a later version starts
// the same way and may go on only after a '-'; version ff is invalid. nullopt otherwise.
std::optional<Traceparent> parseTraceparent(std::string_view v);

// A tracestate Sluice may pass on: at most 32 list members of key=value (keys and values as the
// spec's grammar allows, empty members and blanks around commas tolerated) in at most 512 bytes,
// written back as its members joined by bare commas (so what goes upstream is built from checked
// members, not the client's bytes); else nullopt.
std::optional<std::string> checkTracestate(std::string_view v);

// "00-<trace>-<span>-<flags>": what an upstream gets.
std::string formatTraceparent(const TraceId& trace, const SpanId& span, bool sampled);

void appendHex(std::string& out, std::span<const std::uint8_t> bytes);
template <std::size_t N>
std::string hex(const std::array<std::uint8_t, N>& bytes) {
  std::string s;
  appendHex(s, bytes);
  return s;
}

// Random identifiers (a per-thread generator seeded from the system's entropy), never all zero.
TraceId newTraceId();
SpanId newSpanId();

// TraceIdRatioBased: a trace Sluice starts is kept when its id's last 8 bytes, read as a number,
// fall below ratio * 2^64 (so every service that samples by ratio agrees on a trace).
bool sampledByRatio(const TraceId& id, double ratio);

}  // namespace sluice::telemetry
