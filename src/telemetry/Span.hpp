// A finished span as the exporter sends it, and the OTLP/HTTP JSON encoding of a batch
// (opentelemetry-proto's JSON mapping: trace and span ids as lower-case hex, times and 64-bit
// integers as decimal strings, enums as their numbers, attributes as {key, value: {xValue}}).
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "telemetry/TraceContext.hpp"

namespace sluice::telemetry {

enum class SpanKind : int { Internal = 1, Server = 2, Client = 3 };
enum class StatusCode : int { Unset = 0, Ok = 1, Error = 2 };

using AttrValue = std::variant<std::string, std::int64_t, double, bool>;
struct Attribute {
  std::string_view key;  // a literal: attribute names are the code's, never a client's
  AttrValue value;
};

struct SpanRecord {
  TraceId trace;
  SpanId id;
  SpanId parent;  // all zero: the trace's root here
  std::string name;
  SpanKind kind = SpanKind::Internal;
  std::int64_t start_ns = 0;  // Unix time
  std::int64_t end_ns = 0;
  StatusCode status = StatusCode::Unset;
  std::string status_message;
  std::vector<Attribute> attrs;

  // One overload per value type, so that no integer is narrowed on the way in.
  void set(std::string_view key, std::string v) { put(key, std::move(v)); }
  void set(std::string_view key, std::string_view v) { put(key, std::string(v)); }
  void set(std::string_view key, const char* v) { put(key, std::string(v)); }
  void set(std::string_view key, std::int64_t v) { put(key, v); }
  void set(std::string_view key, int v) { put(key, static_cast<std::int64_t>(v)); }
  void set(std::string_view key, double v) { put(key, v); }
  void set(std::string_view key, bool v) { put(key, v); }

 private:
  // The value emplaced into the attribute in place: moving a whole variant in (push_back of an
  // Attribute{key, v}) has GCC 12 warn -Wmaybe-uninitialized about the alternatives not taken.
  template <class T>
  void put(std::string_view key, T&& v) {
    Attribute& a = attrs.emplace_back();
    a.key = key;
    a.value.emplace<std::decay_t<T>>(std::forward<T>(v));
  }
};

// Who sends the spans (the OTLP resource).
struct Resource {
  std::string service_name;
  std::string service_version;
  std::string instance_id;
};

// {"resourceSpans":[{"resource":{...},"scopeSpans":[{"scope":{...},"spans":[...]}]}]}
std::string encodeTraces(const Resource& r, std::span<const SpanRecord> spans);

}  // namespace sluice::telemetry
