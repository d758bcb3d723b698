// sluice_protect_bench: what each protect stage costs per request, in isolation (Google Benchmark).
// The load test (bench/protect.sh) gives the end-to-end ratio; this says where the time goes.
//
//   seal / open        one AES-256-SIV token of an e-mail address (TokenCipher)
//   scan               the built-in rules over the ~300-byte prose of bench/data/protect_chat.json
//   scan/no_hit        the same prose with the two values replaced by words: nothing to redact
//   scan_request       pipeline::scanRequest on that whole request body (parse, scan, seal, write)
//   screen             the prompt-injection detector on the same prose
//   stream/plain       the answer echoing the redacted prose as 20 OpenAI chunks, one event per
//                      feed, through the tap a stream without tokens takes
//   stream/restoring   the same stream through the restoring tap (two tokens put back), with and
//                      without the request's sealed tokens at hand (Arg 1 / 0)
//
//   build/sluice_protect_bench [--benchmark_filter=stream] [--benchmark_format=json]
#include <benchmark/benchmark.h>

#include <boost/json.hpp>

#include <cstdio>
#include <cstdlib>
#include <functional>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "gateway/StreamTaps.hpp"
#include "guard/InjectionDetector.hpp"
#include "pipeline/Protect.hpp"
#include "redact/Redactor.hpp"
#include "redact/Restorer.hpp"
#include "redact/Rules.hpp"
#include "redact/TokenCipher.hpp"

#ifndef SLUICE_SOURCE_DIR
#define SLUICE_SOURCE_DIR "."
#endif

namespace {

namespace json = boost::json;
using namespace sluice;

constexpr std::string_view kKey = "bench-redaction-key-0123456789abcdef";

std::string sourceDir() {
  const char* e = std::getenv("SLUICE_SOURCE_DIR");
  return e && *e ? e : SLUICE_SOURCE_DIR;
}

const std::string& body() {
  static const std::string text = [] {
    std::ifstream f(sourceDir() + "/bench/data/protect_chat.json", std::ios::binary);
    if (!f) {
      std::fprintf(stderr, "sluice_protect_bench: bench/data/protect_chat.json not found (set SLUICE_SOURCE_DIR)\n");
      std::exit(2);
    }
    std::ostringstream ss;
    ss << f.rdbuf();
    return ss.str();
  }();
  return text;
}

std::string prose() {
  return std::string(json::parse(body()).at("messages").at(0).at("content").as_string());
}

struct Fixture {
  std::shared_ptr<const redact::RuleSet> rules = redact::RuleSet::compile(redact::builtinRules());
  std::shared_ptr<const redact::TokenCipher> cipher = std::make_shared<redact::TokenCipher>(kKey, "vk:bench");
};
Fixture& fx() {
  static Fixture f;
  return f;
}

void BM_seal(benchmark::State& state) {
  std::string out;
  for (auto _ : state) {
    out.clear();
    benchmark::DoNotOptimize(fx().cipher->appendToken(out, "EMAIL", "maria.santos@example.com"));
  }
}
BENCHMARK(BM_seal)->Name("seal");

void BM_open(benchmark::State& state) {
  const std::string token = *fx().cipher->seal("EMAIL", "maria.santos@example.com");
  const auto syn = redact::parseToken(token);
  std::string out;
  for (auto _ : state) {
    out.clear();
    benchmark::DoNotOptimize(fx().cipher->openInto(out, syn.label, syn.payload));
  }
}
BENCHMARK(BM_open)->Name("open");

void BM_scan(benchmark::State& state) {
  const std::string text = prose();
  for (auto _ : state) benchmark::DoNotOptimize(fx().rules->scan(text, redact::kUser));
}
BENCHMARK(BM_scan)->Name("scan");

// The same prose without the e-mail address and the phone number: nothing to redact.
void BM_scanClean(benchmark::State& state) {
  std::string text = prose();
  for (std::string_view v : {"maria.santos@example.com", "+1 415 555 0134"}) {
    const auto at = text.find(v);
    if (at != std::string::npos) text.replace(at, v.size(), "the support desk");
  }
  for (auto _ : state) benchmark::DoNotOptimize(fx().rules->scan(text, redact::kUser));
}
BENCHMARK(BM_scanClean)->Name("scan/no_hit");

void BM_scanRequest(benchmark::State& state) {
  const redact::Redactor red(fx().rules, fx().cipher.get());
  for (auto _ : state) {
    auto r = pipeline::scanRequest(providers::Format::OpenAIChat, body(), &red);
    if (r.encrypted != 2) state.SkipWithError("expected two sealed values");
    benchmark::DoNotOptimize(r);
  }
}
BENCHMARK(BM_scanRequest)->Name("scan_request");

void BM_screen(benchmark::State& state) {
  const auto detector = guard::InjectionDetector::builtin();
  const std::string text = prose();
  for (auto _ : state) benchmark::DoNotOptimize(detector.score(text));
}
BENCHMARK(BM_screen)->Name("screen");

// The mock's echo of the redacted prose: 20 chunks, a finish chunk, [DONE]; every chunk ends with
// "usage":null as the upstream's do (the gateway asks for stream usage).
std::vector<std::string> echoEvents(redact::SealMemo* memo = nullptr) {
  const redact::Redactor red(fx().rules, fx().cipher.get(), memo);
  std::string redacted;
  red.redact(prose(), redact::kUser, redacted);
  std::vector<std::string> evs;
  const std::size_t n = 20, step = (redacted.size() + n - 1) / n;
  auto chunk = [](const json::object& delta, const json::value& finish) {
    json::object o{{"id", "chatcmpl-bench"}, {"object", "chat.completion.chunk"}, {"created", 1796000000},
                   {"model", "gpt-4o-mini"},
                   {"choices", json::array{json::object{{"index", 0}, {"delta", delta}, {"finish_reason", finish}}}},
                   {"usage", nullptr}};
    return "data: " + json::serialize(o) + "\n\n";
  };
  evs.push_back(chunk(json::object{{"role", "assistant"}, {"content", ""}}, nullptr));
  for (std::size_t at = 0; at < redacted.size(); at += step)
    evs.push_back(chunk(json::object{{"content", redacted.substr(at, step)}}, nullptr));
  evs.push_back(chunk(json::object{}, "stop"));
  evs.emplace_back("data: [DONE]\n\n");
  return evs;
}

void runStream(benchmark::State& state, const std::function<std::unique_ptr<gateway::StreamTap>()>& make,
               std::string_view expect, redact::SealMemo* memo = nullptr) {
  const auto evs = echoEvents(memo);
  std::string out;
  for (auto _ : state) {
    auto tap = make();
    out.clear();
    for (const auto& e : evs) tap->feed(e, out);
    tap->finish(out);
    benchmark::DoNotOptimize(out);
  }
  if (!expect.empty() && out.find(expect) == std::string::npos) state.SkipWithError("the stream was not restored");
}

void BM_streamPlain(benchmark::State& state) {
  runStream(state, [] { return gateway::makeStreamTap(gateway::Wire::OpenAI, false); }, {});
}
BENCHMARK(BM_streamPlain)->Name("stream/plain");

void BM_streamRestoring(benchmark::State& state) {
  auto memo = state.range(0) != 0 ? std::make_shared<redact::SealMemo>() : nullptr;
  runStream(
      state,
      [&] { return gateway::makeRestoringChatTap(false, fx().cipher, std::make_shared<redact::RestoreStats>(), memo); },
      "santos@example.com", memo.get());
}
BENCHMARK(BM_streamRestoring)->Name("stream/restoring")->Arg(0)->Arg(1);

}  // namespace

BENCHMARK_MAIN();
