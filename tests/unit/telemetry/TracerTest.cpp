// The span model and the exporter (telemetry/Span.cpp, RequestTrace.cpp, Tracer.cpp): a batch
// encoded as OTLP/HTTP JSON is read back field by field as the protocol's JSON mapping has it;
// a request's spans nest under its own; the exporter sends batches to a collector on loopback,
// retries once when it is busy, and counts what it drops (a full queue, a collector that refuses).
#include <gtest/gtest.h>

#include <boost/json.hpp>

#include <chrono>
#include <deque>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "../core/LoopbackHttp.hpp"
#include "telemetry/RequestTrace.hpp"
#include "telemetry/Span.hpp"
#include "telemetry/Tracer.hpp"

namespace sluice::telemetry {
namespace {
namespace tracer_test {

namespace json = boost::json;

const json::value* attr(const json::array& attrs, std::string_view key) {
  for (const auto& a : attrs)
    if (a.at("key").as_string() == key) return &a.at("value");
  return nullptr;
}

TEST(OtlpJson, ABatchReadsBackAsTheMappingSays) {
  SpanRecord s;
  s.trace = newTraceId();
  s.id = newSpanId();
  s.parent = newSpanId();
  s.name = "chat gpt-4o \"quoted\"";
  s.kind = SpanKind::Client;
  s.start_ns = 1764633600123456789;
  s.end_ns = 1764633600223456789;
  s.status = StatusCode::Error;
  s.status_message = "upstream answered 503";
  s.set("gen_ai.request.model", "gpt-4o");
  s.set("gen_ai.usage.input_tokens", std::int64_t{9007199254740993});  // past a double's integers
  s.set("sluice.cost_usd", 0.25);
  s.set("sluice.stream", true);
  s.set("sluice.attempt", 2);
  SpanRecord root;
  root.trace = s.trace;
  root.id = s.parent;
  root.name = "chat";
  root.kind = SpanKind::Server;
  root.start_ns = 1;
  root.end_ns = 2;
  std::vector<SpanRecord> spans{root, s};
  const std::string text = encodeTraces(Resource{"sluice-test", "0.1.0", "host:1"}, spans);

  const json::value doc = json::parse(text);
  const auto& rs = doc.at("resourceSpans").as_array().at(0);
  const auto& resAttrs = rs.at("resource").at("attributes").as_array();
  EXPECT_EQ(attr(resAttrs, "service.name")->at("stringValue"), "sluice-test");
  EXPECT_EQ(attr(resAttrs, "service.version")->at("stringValue"), "0.1.0");
  EXPECT_EQ(attr(resAttrs, "service.instance.id")->at("stringValue"), "host:1");
  const auto& ss = rs.at("scopeSpans").as_array().at(0);
  EXPECT_EQ(ss.at("scope").at("name"), "sluice");
  const auto& out = ss.at("spans").as_array();
  ASSERT_EQ(out.size(), 2u);
  EXPECT_FALSE(out[0].as_object().contains("parentSpanId"));  // a root has none
  EXPECT_EQ(out[0].at("kind"), 2);
  EXPECT_FALSE(out[0].at("status").as_object().contains("code"));  // unset
  const auto& c = out[1];
  EXPECT_EQ(c.at("traceId").as_string(), hex(s.trace.b));  // hex, not base64 (OTLP/JSON)
  EXPECT_EQ(c.at("traceId").as_string().size(), 32u);
  EXPECT_EQ(c.at("spanId").as_string(), hex(s.id.b));
  EXPECT_EQ(c.at("parentSpanId").as_string(), hex(root.id.b));
  EXPECT_EQ(c.at("name"), "chat gpt-4o \"quoted\"");
  EXPECT_EQ(c.at("kind"), 3);
  EXPECT_EQ(c.at("startTimeUnixNano"), "1764633600123456789");  // 64-bit integers as strings
  EXPECT_EQ(c.at("endTimeUnixNano"), "1764633600223456789");
  EXPECT_EQ(c.at("status").at("code"), 2);
  EXPECT_EQ(c.at("status").at("message"), "upstream answered 503");
  const auto& a = c.at("attributes").as_array();
  EXPECT_EQ(attr(a, "gen_ai.request.model")->at("stringValue"), "gpt-4o");
  EXPECT_EQ(attr(a, "gen_ai.usage.input_tokens")->at("intValue"), "9007199254740993");
  EXPECT_EQ(attr(a, "sluice.cost_usd")->at("doubleValue").as_double(), 0.25);
  EXPECT_EQ(attr(a, "sluice.stream")->at("boolValue"), true);
  EXPECT_EQ(attr(a, "sluice.attempt")->at("intValue"), "2");
}

TEST(OtlpJson, BytesThatAreNotUtf8StayValidJson) {
  SpanRecord s;
  s.trace = newTraceId();
  s.id = newSpanId();
  s.name = std::string("cut\xe2\x82", 5);
  s.set("gen_ai.output.messages", std::string("a\0b\"\\\x01", 6));
  std::vector<SpanRecord> spans{s};
  const json::value doc = json::parse(encodeTraces(Resource{"s", "v", ""}, spans));
  const auto& span = doc.at("resourceSpans").at(0).at("scopeSpans").at(0).at("spans").at(0);
  EXPECT_EQ(
      std::string_view(attr(span.at("attributes").as_array(), "gen_ai.output.messages")->at("stringValue").as_string()),
      std::string_view("a\0b\"\\\x01", 6));
}

TEST(RequestTrace, ChildrenNestUnderTheRequestAndTheAttempt) {
  const auto start = RequestTrace::Clock::now();
  const TraceId client = newTraceId();
  const SpanId clientSpan = newSpanId();
  RequestTrace t(client, clientSpan, true, start);
  t.attempt = t.begin("chat m", SpanKind::Client);
  const std::size_t connect = t.add("connect", t.attempt, start, start + std::chrono::milliseconds(3));
  ASSERT_NE(connect, RequestTrace::kNone);
  std::string head;
  t.appendUpstreamHeaders(head);
  auto spans = t.finish();
  ASSERT_EQ(spans.size(), 3u);
  EXPECT_EQ(spans[0].trace, client);
  EXPECT_EQ(spans[0].parent, clientSpan);  // the client's span parents the request's
  EXPECT_EQ(spans[0].kind, SpanKind::Server);
  EXPECT_EQ(spans[1].parent, spans[0].id);
  EXPECT_EQ(spans[2].parent, spans[1].id);
  EXPECT_EQ(spans[2].end_ns - spans[2].start_ns, 3'000'000);
  for (const auto& s : spans) {
    EXPECT_EQ(s.trace, client);
    EXPECT_GT(s.end_ns, 0);
    EXPECT_GE(s.end_ns, s.start_ns);
  }
  // The upstream's parent is the attempt's span.
  EXPECT_EQ(head, "traceparent: 00-" + hex(client.b) + "-" + hex(spans[1].id.b) + "-01\r\n");
}

TEST(RequestTrace, NotSampledRecordsNothingButStillPropagates) {
  RequestTrace t(newTraceId(), SpanId{}, false, RequestTrace::Clock::now());
  EXPECT_EQ(t.begin("x", SpanKind::Internal), RequestTrace::kNone);
  {
    ScopedSpan s(&t, "guardrail");
    EXPECT_FALSE(s);
  }
  std::string head;
  t.appendUpstreamHeaders(head);
  EXPECT_TRUE(head.ends_with("-00\r\n"));
  EXPECT_TRUE(t.finish().empty());
}

TEST(RequestTrace, SpansAndCaptureAreBounded) {
  RequestTrace t(newTraceId(), SpanId{}, true, RequestTrace::Clock::now());
  for (int i = 0; i < 200; ++i) t.begin("x", SpanKind::Internal);
  t.capture = true;
  t.captureOutput(std::string(RequestTrace::kCaptureMax + 100, 'a'));
  t.captureOutput("more");
  EXPECT_EQ(t.output.size(), RequestTrace::kCaptureMax);
  EXPECT_EQ(t.finish().size(), RequestTrace::kMaxSpans);
}

// An OTLP/HTTP collector on loopback: answers each export with the next status queued (200 when
// none is) and keeps what it was sent.
class Collector {
 public:
  std::string url() const { return http_.url(); }
  void answer(std::deque<int> statuses) {
    std::lock_guard lk(mu_);
    statuses_ = std::move(statuses);
  }
  std::vector<loopback::Received> got() { return http_.received(); }

 private:
  std::mutex mu_;
  std::deque<int> statuses_;
  loopback::Server http_{[this](const loopback::Received&) {
    std::lock_guard lk(mu_);
    int status = 200;
    if (!statuses_.empty()) {
      status = statuses_.front();
      statuses_.pop_front();
    }
    return loopback::Reply{status, "{}"};
  }};
};

std::vector<SpanRecord> someSpans(std::size_t n) {
  RequestTrace t(newTraceId(), SpanId{}, true, RequestTrace::Clock::now());
  for (std::size_t i = 1; i < n; ++i) t.end(t.begin("child", SpanKind::Internal));
  return t.finish();
}

std::size_t spanCount(const std::vector<loopback::Received>& got) {
  std::size_t n = 0;
  for (const auto& g : got)
    n += json::parse(g.body).at("resourceSpans").at(0).at("scopeSpans").at(0).at("spans").as_array().size();
  return n;
}

config::TelemetryConfig telemetryFor(const Collector& c) {
  config::TelemetryConfig t;
  t.otlp_endpoint = c.url();
  t.service_name = "sluice-test";
  t.headers = {{"Authorization", "Bearer collector-key"}};
  return t;
}

TEST(Tracer, ExportsInBatchesToV1TracesAndDrainsAtStop) {
  Collector c;
  Tracer tr(Tracer::Options{.max_queue = 1000,
                            .batch = 8,
                            .delay = std::chrono::milliseconds(50),
                            .timeout = std::chrono::milliseconds(2000)});
  tr.configure(telemetryFor(c));
  EXPECT_TRUE(tr.enabled());
  for (int i = 0; i < 10; ++i) tr.submit(someSpans(3));
  tr.stop(std::chrono::seconds(5));  // what is queued is sent before the thread ends
  const auto got = c.got();
  ASSERT_FALSE(got.empty());
  EXPECT_EQ(spanCount(got), 30u);
  for (const auto& g : got) {
    EXPECT_EQ(g.target, "/v1/traces");
    EXPECT_EQ(g.content_type, "application/json");
    EXPECT_EQ(g.authorization, "Bearer collector-key");
    EXPECT_LE(json::parse(g.body).at("resourceSpans").at(0).at("scopeSpans").at(0).at("spans").as_array().size(), 8u);
  }
  const auto st = tr.stats();
  EXPECT_EQ(st.exported, 30u);
  EXPECT_EQ(st.dropped_full + st.dropped_failed, 0u);
  std::string metrics;
  tr.renderMetrics(metrics);
  EXPECT_NE(metrics.find("sluice_trace_spans_total{result=\"exported\"} 30"), std::string::npos);
  EXPECT_FALSE(tr.enabled());
}

TEST(Tracer, ABusyCollectorIsTriedOnceMoreAndARefusalIsCounted) {
  Collector c;
  c.answer({503, 200, 400});
  Tracer tr(Tracer::Options{.max_queue = 100,
                            .batch = 100,
                            .delay = std::chrono::milliseconds(20),
                            .timeout = std::chrono::milliseconds(2000)});
  tr.configure(telemetryFor(c));
  tr.submit(someSpans(2));  // 503 then 200: exported on the retry
  while (tr.stats().exported == 0) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  tr.submit(someSpans(4));  // 400: not retried, dropped and counted
  tr.stop(std::chrono::seconds(5));
  const auto st = tr.stats();
  EXPECT_EQ(c.got().size(), 3u);
  EXPECT_EQ(st.exported, 2u);
  EXPECT_EQ(st.dropped_failed, 4u);
  EXPECT_EQ(st.exports_failed, 1u);
}

TEST(Tracer, AFullQueueDropsWholeRequestsAndCountsThem) {
  // No collector listens (port 9 on loopback refuses), and the batch never fills: submits pile up.
  Tracer tr(Tracer::Options{.max_queue = 10,
                            .batch = 1000,
                            .delay = std::chrono::milliseconds(60'000),
                            .timeout = std::chrono::milliseconds(200)});
  config::TelemetryConfig t;
  t.otlp_endpoint = "http://127.0.0.1:9";
  tr.configure(t);
  for (int i = 0; i < 5; ++i) tr.submit(someSpans(3));  // 3 fit (9 spans), 2 requests dropped
  const auto st = tr.stats();
  EXPECT_EQ(st.queued, 9u);
  EXPECT_EQ(st.dropped_full, 6u);
  tr.stop(std::chrono::milliseconds(0));
  EXPECT_EQ(tr.stats().dropped_failed, 9u);  // left in the queue when the drain time ran out
}

TEST(Tracer, AnEmptyEndpointTurnsTracingOff) {
  Collector c;
  Tracer tr;
  tr.configure(telemetryFor(c));
  EXPECT_TRUE(tr.enabled());
  tr.configure(config::TelemetryConfig{});
  EXPECT_FALSE(tr.enabled());
  config::TelemetryConfig bad;
  bad.otlp_endpoint = "ftp://collector";
  EXPECT_THROW(tr.configure(bad), std::invalid_argument);
}

}  // namespace tracer_test
}  // namespace
}  // namespace sluice::telemetry
