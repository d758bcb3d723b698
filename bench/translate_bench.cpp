// sluice_translate_bench: what wire-format translation costs (Google Benchmark).
//
//   request/...      providers::translateRequest on a ~2 KB chat request (system prompt, 6 turns,
//                    2 tools), from tests/fixtures/providers/ plus a second tool
//   response/...     providers::translateResponse on a whole non-stream response
//   stream/...       a StreamTranslator (made per iteration, as per stream) fed an upstream stream
//                    event by event, then finish(); counters: events, ns_per_event, bytes_per_second
//                    (upstream bytes)
//   passthrough/...  the baseline: providers::openai::StreamFilter fed an OpenAI stream the same way
//   json/...         reference floor: Boost.JSON parse + serialize of the same request
//
// Streams: the fixtures (tool calls, reasoning) and bench/data/mock_text20.*.sse, the text streams
// `sluice mock --chunks 20` sends (the ones the end-to-end "translation" scenario of bench/run.sh
// translates). Inputs are read from SLUICE_SOURCE_DIR (compile-time default: this checkout;
// override with the environment variable of the same name).
//
//   build/bench/sluice_translate_bench [--benchmark_filter=stream] [--benchmark_format=json]
#include <benchmark/benchmark.h>

#include <boost/json.hpp>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "providers/Translate.hpp"
#include "providers/openai/StreamFilter.hpp"

#ifndef SLUICE_SOURCE_DIR
#define SLUICE_SOURCE_DIR "."
#endif

namespace {

namespace json = boost::json;
using sluice::providers::Format;
using sluice::providers::TranslateContext;

std::string sourceDir() {
  const char* e = std::getenv("SLUICE_SOURCE_DIR");
  return e && *e ? e : SLUICE_SOURCE_DIR;
}

std::string readFile(const std::string& rel) {
  std::string path = sourceDir() + "/" + rel;
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "sluice_translate_bench: cannot read %s (set SLUICE_SOURCE_DIR)\n", path.c_str());
    std::exit(2);
  }
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string fixture(const std::string& name) { return readFile("tests/fixtures/providers/" + name); }

// The fixture requests carry one tool; a realistic agent request carries several.
std::string withSecondTool(const std::string& body, bool anthropic) {
  json::value v = json::parse(body);
  auto& tools = v.as_object()["tools"].as_array();
  json::object params{{"type", "object"},
                      {"properties", json::object{{"timezone", json::object{{"type", "string"},
                                                                            {"description", "IANA zone, e.g. Europe/Paris"}}}}},
                      {"required", json::array{"timezone"}}};
  const char* desc = "Get the current local time in a given time zone";
  if (anthropic) {
    tools.push_back(json::object{{"name", "get_time"}, {"description", desc}, {"input_schema", params}});
  } else {
    tools.push_back(json::object{
        {"type", "function"},
        {"function", json::object{{"name", "get_time"}, {"description", desc}, {"parameters", params}}}});
  }
  return json::serialize(v);
}

// Splits an SSE stream into whole events (each with its trailing blank line), as the upstream
// sends them one per write.
std::vector<std::string> splitEvents(const std::string& s) {
  // Events end with a blank line: "\n\n" or, as Gemini sends them, "\r\n\r\n".
  std::vector<std::string> out;
  std::size_t pos = 0;
  while (pos < s.size()) {
    auto lf = s.find("\n\n", pos);
    auto crlf = s.find("\r\n\r\n", pos);
    std::size_t end = s.size();
    if (crlf != std::string::npos && (lf == std::string::npos || crlf < lf)) end = crlf + 4;
    else if (lf != std::string::npos) end = lf + 2;
    out.push_back(s.substr(pos, end - pos));
    pos = end;
  }
  return out;
}

TranslateContext context(const std::string& upstream_model) {
  TranslateContext ctx;
  ctx.upstream_model = upstream_model;
  ctx.created = 1700000000;
  ctx.include_usage = true;
  return ctx;
}

void fail(benchmark::State& state, const char* what, const std::string& msg) {
  state.SkipWithError((std::string(what) + ": " + msg).c_str());
}

// ------------------------------------------------------------------ requests / responses

void benchRequest(benchmark::State& state, Format client, Format upstream, std::string body, std::string model) {
  TranslateContext ctx = context(model);
  std::string out;
  sluice::providers::RequestInfo info;
  if (auto err = sluice::providers::translateRequest(client, upstream, body, out, ctx, &info)) {
    return fail(state, "translateRequest", err->message);
  }
  std::size_t out_bytes = out.size();
  for (auto _ : state) {
    out.clear();
    sluice::providers::RequestInfo i;
    auto err = sluice::providers::translateRequest(client, upstream, body, out, ctx, &i);
    benchmark::DoNotOptimize(err);
    benchmark::DoNotOptimize(out.data());
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * body.size()));
  state.counters["in_bytes"] = static_cast<double>(body.size());
  state.counters["out_bytes"] = static_cast<double>(out_bytes);
}

void benchJsonRoundTrip(benchmark::State& state, std::string body) {
  for (auto _ : state) {
    json::value v = json::parse(body);
    std::string s = json::serialize(v);
    benchmark::DoNotOptimize(s.data());
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * body.size()));
  state.counters["in_bytes"] = static_cast<double>(body.size());
}

void benchResponse(benchmark::State& state, Format client, Format upstream, std::string body) {
  TranslateContext ctx = context("");
  std::string out;
  if (auto err = sluice::providers::translateResponse(client, upstream, body, out, ctx)) {
    return fail(state, "translateResponse", err->message);
  }
  std::size_t out_bytes = out.size();
  for (auto _ : state) {
    out.clear();
    sluice::providers::Usage usage;
    auto err = sluice::providers::translateResponse(client, upstream, body, out, ctx, &usage);
    benchmark::DoNotOptimize(err);
    benchmark::DoNotOptimize(out.data());
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * body.size()));
  state.counters["in_bytes"] = static_cast<double>(body.size());
  state.counters["out_bytes"] = static_cast<double>(out_bytes);
}

// ------------------------------------------------------------------ streams

void streamCounters(benchmark::State& state, const std::vector<std::string>& events, std::size_t in_bytes,
                    std::size_t out_bytes) {
  auto n = static_cast<double>(events.size());
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * in_bytes));
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * events.size()));
  state.counters["events"] = n;
  state.counters["in_bytes"] = static_cast<double>(in_bytes);
  state.counters["out_bytes"] = static_cast<double>(out_bytes);
  // seconds per event (console shows it with an SI prefix, e.g. 250n = 250 ns)
  state.counters["per_event"] =
      benchmark::Counter(n, benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}

void benchStream(benchmark::State& state, Format client, Format upstream, std::string stream) {
  auto events = splitEvents(stream);
  TranslateContext ctx = context("");
  std::string out;
  out.reserve(64 * 1024);
  {  // check once that the stream translates cleanly
    auto t = sluice::providers::makeStreamTranslator(client, upstream, ctx);
    for (const auto& e : events)
      if (!t->feed(e, out)) return fail(state, "feed", "event too large");
    bool upstream_end = t->sawUpstreamEnd();  // Gemini streams have no end event: they just close
    t->finish(out);
    if (!t->ended()) return fail(state, "stream", "the client stream did not end");
    if (upstream != Format::GeminiGenerate && !upstream_end) return fail(state, "stream", "no upstream end event");
  }
  std::size_t out_bytes = out.size();
  for (auto _ : state) {
    out.clear();
    auto t = sluice::providers::makeStreamTranslator(client, upstream, ctx);
    for (const auto& e : events) t->feed(e, out);
    t->finish(out);
    benchmark::DoNotOptimize(out.data());
  }
  streamCounters(state, events, stream.size(), out_bytes);
}

void benchPassthrough(benchmark::State& state, std::string stream, bool strip_usage) {
  auto events = splitEvents(stream);
  std::string out;
  out.reserve(64 * 1024);
  {
    sluice::providers::openai::StreamFilter f(strip_usage);
    for (const auto& e : events)
      if (!f.feed(e, out)) return fail(state, "feed", "event too large");
    if (!f.sawDone()) return fail(state, "stream", "no [DONE]");
  }
  std::size_t out_bytes = out.size();
  for (auto _ : state) {
    out.clear();
    sluice::providers::openai::StreamFilter f(strip_usage);
    for (const auto& e : events) f.feed(e, out);
    out.append(f.leftover());
    benchmark::DoNotOptimize(out.data());
  }
  streamCounters(state, events, stream.size(), out_bytes);
}

void registerAll() {
  constexpr auto OA = Format::OpenAIChat;
  constexpr auto AN = Format::AnthropicMessages;
  constexpr auto GE = Format::GeminiGenerate;

  std::string oa_req = withSecondTool(fixture("openai_request_full.json"), false);
  std::string an_req = withSecondTool(fixture("anthropic_request_full.json"), true);

  benchmark::RegisterBenchmark("request/openai->anthropic", benchRequest, OA, AN, oa_req, "claude-sonnet-4-5");
  benchmark::RegisterBenchmark("request/anthropic->openai", benchRequest, AN, OA, an_req, "gpt-4o-mini");
  benchmark::RegisterBenchmark("request/openai->gemini", benchRequest, OA, GE, oa_req, "gemini-2.5-flash");
  benchmark::RegisterBenchmark("json/parse+serialize openai request", benchJsonRoundTrip, oa_req);

  benchmark::RegisterBenchmark("response/anthropic->openai", benchResponse, OA, AN,
                               fixture("anthropic_response_thinking_tools.json"));
  benchmark::RegisterBenchmark("response/openai->anthropic", benchResponse, AN, OA,
                               fixture("openai_response_tools.json"));
  benchmark::RegisterBenchmark("response/gemini->openai", benchResponse, OA, GE,
                               fixture("gemini/gemini_response_thinking_tools.json"));

  // stream/UPSTREAM->CLIENT/INPUT
  benchmark::RegisterBenchmark("stream/anthropic->openai/mock_text20", benchStream, OA, AN,
                               readFile("bench/data/mock_text20.anthropic.sse"));
  benchmark::RegisterBenchmark("stream/anthropic->openai/tool_use", benchStream, OA, AN,
                               fixture("anthropic_stream_tool_use.sse"));
  benchmark::RegisterBenchmark("stream/openai->anthropic/mock_text20", benchStream, AN, OA,
                               readFile("bench/data/mock_text20.openai.sse"));
  benchmark::RegisterBenchmark("stream/openai->anthropic/parallel_tools", benchStream, AN, OA,
                               fixture("openai_stream_parallel_tools.sse"));
  benchmark::RegisterBenchmark("stream/gemini->openai/mock_text20", benchStream, OA, GE,
                               readFile("bench/data/mock_text20.gemini.sse"));
  benchmark::RegisterBenchmark("stream/gemini->openai/thinking_tools", benchStream, OA, GE,
                               fixture("gemini/gemini_stream_thinking_tools.sse"));

  benchmark::RegisterBenchmark("passthrough/openai/mock_text20", benchPassthrough,
                               readFile("bench/data/mock_text20.openai.sse"), false);
  benchmark::RegisterBenchmark("passthrough/openai/mock_text20 strip_usage", benchPassthrough,
                               readFile("bench/data/mock_text20.openai.sse"), true);
  benchmark::RegisterBenchmark("passthrough/openai/parallel_tools", benchPassthrough,
                               fixture("openai_stream_parallel_tools.sse"), false);
}

}  // namespace

int main(int argc, char** argv) {
  registerAll();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
