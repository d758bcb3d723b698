// W3C trace context and the OTLP JSON encoding (telemetry/TraceContext, telemetry/Span): the
// input is read as a client's traceparent, as its tracestate, and is put whole into a span's
// name and attribute, then encoded.
// Checks: no crash; an accepted traceparent names valid ids, and the one Sluice would send for it
// reads back to the same ids; an accepted tracestate is at
// most 512 bytes of printable ASCII (nothing that could end a header line), its members joined by
// bare commas, and reads back as itself; the encoded batch is
// always valid JSON and carries the ids as lower-case hex.
#include <boost/json/parse.hpp>

#include <string>
#include <string_view>
#include <vector>

#include "FuzzUtil.hpp"
#include "telemetry/Span.hpp"
#include "telemetry/TraceContext.hpp"

using namespace sluice;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view in(reinterpret_cast<const char*>(data), size);

  if (auto tp = telemetry::parseTraceparent(in)) {
    if (!tp->trace.valid() || !tp->parent.valid()) fuzz::fail("a traceparent with a zero id was accepted", in);
    if (in.size() < 55 || (in.substr(0, 2) == "00" && in.size() != 55))
      fuzz::fail("a traceparent of the wrong length was accepted", in);
    const std::string again = telemetry::formatTraceparent(tp->trace, tp->parent, tp->sampled());
    auto back = telemetry::parseTraceparent(again);
    if (!back || !(back->trace == tp->trace) || !(back->parent == tp->parent) || back->sampled() != tp->sampled())
      fuzz::fail("the traceparent Sluice sends does not read back", again);
    if (in.substr(0, 2) == "00" && (in.substr(53) == "00" || in.substr(53) == "01") && again != in)
      fuzz::fail("a canonical traceparent does not print back to itself", in);
  }

  if (auto ts = telemetry::checkTracestate(in)) {
    if (ts->size() > 512 || ts->empty()) fuzz::fail("an accepted tracestate is empty or too long", in);
    for (char c : *ts)
      if (c < 0x20 || c > 0x7e) fuzz::fail("an accepted tracestate holds a byte outside printable ASCII", in);
    if (ts->front() == ' ' || ts->back() == ' ' || ts->find(" ,") != std::string::npos ||
        ts->find(", ") != std::string::npos)
      fuzz::fail("an accepted tracestate keeps blanks around its members", *ts);
    auto again = telemetry::checkTracestate(*ts);
    if (!again || *again != *ts) fuzz::fail("an accepted tracestate does not read back as itself", *ts);
  }

  telemetry::SpanRecord s;
  s.trace = telemetry::newTraceId();
  s.id = telemetry::newSpanId();
  s.name = std::string(in);
  s.status = telemetry::StatusCode::Error;
  s.status_message = std::string(in);
  s.set("gen_ai.input.messages", in);
  s.set("sluice.cost_usd", static_cast<double>(size) / 7.0);
  std::vector<telemetry::SpanRecord> spans{s};
  const std::string text = telemetry::encodeTraces(telemetry::Resource{std::string(in), "0.1.0", ""}, spans);
  boost::system::error_code ec;
  auto doc = boost::json::parse(text, ec);
  if (ec) fuzz::fail("the OTLP batch is not valid JSON", text);
  const auto& span = doc.at("resourceSpans").at(0).at("scopeSpans").at(0).at("spans").at(0);
  if (span.at("traceId").as_string() != telemetry::hex(s.trace.b)) fuzz::fail("the trace id is not its hex", text);
  return 0;
}
