// sluice_screen_bench: what the prompt-injection detector costs per prompt (Google Benchmark).
//
//   score/SIZE   InjectionDetector::builtin().score() on prompts of SIZE bytes (128 B to 1 MiB), 64 different ones
//                in turn, each cut from the texts of models/prompt-injection/train.jsonl laid end to
//                end (so the work is real text, attacks and benign mixed). Every call is timed on its
//                own: counters p50_us, p99_us, max_us are per call; bytes_per_second is throughput.
//   load/file    InjectionDetector::load(models/injection.model) (startup cost, once per process)
//
// Inputs are read from SLUICE_SOURCE_DIR (compile-time default: this checkout; override with the
// environment variable of the same name).
//
//   build/sluice_screen_bench [--benchmark_filter=score/2048] [--benchmark_format=json]
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "guard/InjectionDetector.hpp"
#include "guard/InjectionTraining.hpp"

#ifndef SLUICE_SOURCE_DIR
#define SLUICE_SOURCE_DIR "."
#endif

namespace {

using sluice::guard::InjectionDetector;

std::string sourceDir() {
  const char* e = std::getenv("SLUICE_SOURCE_DIR");
  return e && *e ? e : SLUICE_SOURCE_DIR;
}

// All the texts end to end, separated by blank lines.
const std::string& corpus() {
  static const std::string text = [] {
    std::string all;
    try {
      for (const auto& row : sluice::guard::readLabelledJsonl(sourceDir() + "/models/prompt-injection/train.jsonl")) {
        all += row.text;
        all += "\n\n";
      }
    } catch (const std::exception& e) {
      std::fprintf(stderr, "sluice_screen_bench: %s (set SLUICE_SOURCE_DIR)\n", e.what());
      std::exit(2);
    }
    return all;
  }();
  return text;
}

// `count` prompts of `size` bytes, cut at UTF-8 character boundaries, from spread-out offsets.
std::vector<std::string> prompts(std::size_t size, std::size_t count) {
  const std::string& c = corpus();
  std::vector<std::string> out;
  for (std::size_t i = 0; i < count; ++i) {
    std::size_t at = (c.size() / count) * i;
    std::string p;
    while (p.size() < size) {
      if (at >= c.size()) at = 0;
      const std::size_t n = std::min(size - p.size(), c.size() - at);
      p.append(c, at, n);
      at += n;
    }
    while (!p.empty() && (static_cast<unsigned char>(p.back()) & 0xC0) == 0x80) p.pop_back();
    if (!p.empty() && static_cast<unsigned char>(p.back()) >= 0xC0) p.pop_back();
    out.push_back(std::move(p));
  }
  return out;
}

double percentile(std::vector<double>& v, double q) {
  if (v.empty()) return 0;
  const std::size_t k = std::min(v.size() - 1, static_cast<std::size_t>(q * static_cast<double>(v.size())));
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(k), v.end());
  return v[k];
}

void BM_score(benchmark::State& state) {
  const auto detector = InjectionDetector::builtin();
  const auto inputs = prompts(static_cast<std::size_t>(state.range(0)), 64);
  std::vector<double> us;
  us.reserve(1 << 20);
  std::size_t i = 0, bytes = 0;
  for (auto _ : state) {
    const std::string& p = inputs[i++ % inputs.size()];
    const auto t0 = std::chrono::steady_clock::now();
    double s = detector.score(p);
    const auto t1 = std::chrono::steady_clock::now();
    benchmark::DoNotOptimize(s);
    if (us.size() < us.capacity()) us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
    bytes += p.size();
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(bytes));
  state.counters["calls"] = static_cast<double>(us.size());
  state.counters["p50_us"] = percentile(us, 0.50);
  state.counters["p99_us"] = percentile(us, 0.99);
  state.counters["max_us"] = *std::max_element(us.begin(), us.end());
}
BENCHMARK(BM_score)->Name("score")->Arg(128)->Arg(200)->Arg(2048)->Arg(8192)->Arg(16384)->Arg(1 << 20)->Unit(
    benchmark::kMicrosecond);

void BM_load(benchmark::State& state) {
  const std::string path = sourceDir() + "/models/injection.model";
  for (auto _ : state) benchmark::DoNotOptimize(InjectionDetector::load(path));
}
BENCHMARK(BM_load)->Name("load/file")->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
