#include "telemetry/Span.hpp"

#include <fmt/format.h>

#include <cmath>

#include "core/JsonText.hpp"

namespace sluice::telemetry {

namespace {

void appendValue(std::string& out, const AttrValue& v) {
  out.push_back('{');
  if (const auto* s = std::get_if<std::string>(&v)) {
    out.append("\"stringValue\":");
    sluice::appendJsonString(out, *s);
  } else if (const auto* i = std::get_if<std::int64_t>(&v)) {
    out.append("\"intValue\":\"").append(std::to_string(*i)).push_back('"');
  } else if (const auto* d = std::get_if<double>(&v)) {
    // JSON has no NaN or infinity; OTLP's mapping writes them as strings.
    if (std::isfinite(*d))
      out.append("\"doubleValue\":").append(fmt::format("{}", *d));
    else
      out.append("\"doubleValue\":\"")
          .append(std::isnan(*d) ? "NaN" : (*d > 0 ? "Infinity" : "-Infinity"))
          .push_back('"');
  } else {
    out.append("\"boolValue\":").append(std::get<bool>(v) ? "true" : "false");
  }
  out.push_back('}');
}

void appendAttr(std::string& out, std::string_view key, const AttrValue& v) {
  out.append("{\"key\":");
  sluice::appendJsonString(out, key);
  out.append(",\"value\":");
  appendValue(out, v);
  out.push_back('}');
}

void appendSpan(std::string& out, const SpanRecord& s) {
  out.append("{\"traceId\":\"");
  appendHex(out, s.trace.b);
  out.append("\",\"spanId\":\"");
  appendHex(out, s.id.b);
  out.push_back('"');
  if (s.parent.valid()) {
    out.append(",\"parentSpanId\":\"");
    appendHex(out, s.parent.b);
    out.push_back('"');
  }
  out.append(",\"name\":");
  sluice::appendJsonString(out, s.name);
  out.append(",\"kind\":").append(std::to_string(static_cast<int>(s.kind)));
  out.append(",\"startTimeUnixNano\":\"").append(std::to_string(s.start_ns));
  out.append("\",\"endTimeUnixNano\":\"").append(std::to_string(s.end_ns)).append("\",\"attributes\":[");
  for (std::size_t i = 0; i < s.attrs.size(); ++i) {
    if (i) out.push_back(',');
    appendAttr(out, s.attrs[i].key, s.attrs[i].value);
  }
  out.append("],\"status\":{");
  if (s.status != StatusCode::Unset) {
    out.append("\"code\":").append(std::to_string(static_cast<int>(s.status)));
    if (!s.status_message.empty()) {
      out.append(",\"message\":");
      sluice::appendJsonString(out, s.status_message);
    }
  }
  out.append("}}");
}

}  // namespace

std::string encodeTraces(const Resource& r, std::span<const SpanRecord> spans) {
  std::string out;
  out.reserve(256 + spans.size() * 700);
  out.append("{\"resourceSpans\":[{\"resource\":{\"attributes\":[");
  appendAttr(out, "service.name", r.service_name);
  out.push_back(',');
  appendAttr(out, "service.version", r.service_version);
  if (!r.instance_id.empty()) {
    out.push_back(',');
    appendAttr(out, "service.instance.id", r.instance_id);
  }
  out.push_back(',');
  appendAttr(out, "telemetry.sdk.name", std::string("sluice"));
  out.push_back(',');
  appendAttr(out, "telemetry.sdk.language", std::string("cpp"));
  out.append("]},\"scopeSpans\":[{\"scope\":{\"name\":\"sluice\",\"version\":");
  sluice::appendJsonString(out, r.service_version);
  out.append("},\"spans\":[");
  for (std::size_t i = 0; i < spans.size(); ++i) {
    if (i) out.push_back(',');
    appendSpan(out, spans[i]);
  }
  out.append("]}]}]}");
  return out;
}

}  // namespace sluice::telemetry
