// sluice_store_bench: how fast the request-log writer stores rows, and what each row costs.
//
// One producer thread builds LogRecords like the gateway's (no bodies) and pushes them
// through a LogWriter as fast as enqueue() accepts them (a full queue makes it wait, not
// drop); the run ends when drain() has written everything. Reported:
//   rows_per_s        rows committed per second of wall time, first enqueue to drained
//   enqueue_ns        producer CPU per record: building it and enqueue(), which also frees a
//                     written record (the request path's whole share)
//   writer_cpu_us     writer-thread CPU per row (process CPU minus the producer's); for
//                     PostgreSQL the server's own CPU is not included
//
// With --direct there is no LogWriter: the one thread builds batches and calls
// Store::insertLogs itself, so writer_cpu_us is the database side alone (with the records'
// construction, which enqueue_ns shows on its own in the LogWriter run).
//
//   build/sluice_store_bench [--url sqlite:///tmp/x.db | postgres://...] [--rows N] [--batch N] [--direct]
// Without --url a fresh SQLite file in a temp dir is used (and removed); with a PostgreSQL URL
// the run gets a fresh schema in that database (dropped afterwards). Prints one JSON line.
#include <time.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "store/LogWriter.hpp"
#include "store/SqlConnection.hpp"

namespace {

using sluice::store::LogRecord;
using sluice::store::LogWriter;
using sluice::store::Store;

double cpuSeconds(clockid_t clock) {
  timespec ts{};
  clock_gettime(clock, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

LogRecord makeRecord(std::int64_t i, std::int64_t now_ms) {
  LogRecord r;
  r.time_ms = now_ms;
  r.request_id = "0b6f3c1e-8a41-4f5e-9d2a-" + std::to_string(100000000000 + i);
  r.virtual_key_id = 1 + i % 8;
  r.channel = "mock";
  r.upstream_key = "sk-...abcd";
  r.model = "gpt-4o-mini";
  r.status = 200;
  r.attempts = R"([{"channel":"mock","key":"sk-...abcd","status":200,"error":null,"ms":1.2}])";
  r.ttfb_ms = 1;
  r.duration_ms = 2;
  r.input_tokens = 12;
  r.output_tokens = 40;
  r.cost_usd = 0.0000342;
  r.client_addr = "127.0.0.1";
  r.user_agent = "sluice-loadgen/1";
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  std::string url;
  std::int64_t rows = 200'000;
  std::size_t batch = LogWriter::Options{}.batch_size;
  bool direct = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--url" && i + 1 < argc) {
      url = argv[++i];
    } else if (a == "--rows" && i + 1 < argc) {
      rows = std::atoll(argv[++i]);
    } else if (a == "--batch" && i + 1 < argc) {
      batch = static_cast<std::size_t>(std::atoll(argv[++i]));
    } else if (a == "--direct") {
      direct = true;
    } else {
      std::fprintf(stderr, "usage: %s [--url STORE_URL] [--rows N] [--batch N] [--direct]\n", argv[0]);
      return 2;
    }
  }
  std::filesystem::path tmp;
  if (url.empty()) {
    char dir[] = "/tmp/sluice-store-bench.XXXXXX";
    if (!mkdtemp(dir)) {
      std::perror("mkdtemp");
      return 1;
    }
    tmp = dir;
    url = "sqlite://" + (tmp / "logs.db").string();
  }
  const char* backend = url.rfind("sqlite:", 0) == 0 ? "sqlite" : "postgres";
  std::string schema;  // PostgreSQL: this run's own tables
  try {
    if (std::string_view(backend) == "postgres") {
      schema = "store_bench_" + std::to_string(getpid());
      sluice::store::openSqlConnection(url)->execScript("CREATE SCHEMA " + schema);
      url += (url.find('?') == std::string::npos ? "?" : "&") + std::string("options=-csearch_path%3D") + schema;
    }
    Store::open(url)->migrate();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "store_bench: %s\n", e.what());
    return 1;
  }

  auto cleanup = [&] {
    if (!tmp.empty()) std::filesystem::remove_all(tmp);
    if (!schema.empty()) sluice::store::openSqlConnection(url)->execScript("DROP SCHEMA " + schema + " CASCADE");
  };
  const std::int64_t now_ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
          .count();
  if (direct) {
    auto store = Store::open(url);
    std::vector<LogRecord> records;
    records.reserve(batch);
    double cpu0 = cpuSeconds(CLOCK_THREAD_CPUTIME_ID);
    auto start = std::chrono::steady_clock::now();
    for (std::int64_t i = 0; i < rows;) {
      records.clear();
      for (std::size_t k = 0; k < batch && i < rows; ++k, ++i) records.push_back(makeRecord(i, now_ms));
      store->insertLogs(records);
    }
    double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    double cpu = cpuSeconds(CLOCK_THREAD_CPUTIME_ID) - cpu0;
    store.reset();
    cleanup();
    std::printf(
        "{\"backend\":\"%s\",\"mode\":\"direct\",\"rows\":%lld,\"batch\":%zu,\"seconds\":%.3f,"
        "\"rows_per_s\":%.0f,\"writer_cpu_us\":%.3f}\n",
        backend, static_cast<long long>(rows), batch, seconds, static_cast<double>(rows) / seconds,
        cpu / static_cast<double>(rows) * 1e6);
    return 0;
  }

  LogWriter::Options opt;
  opt.batch_size = batch;
  LogWriter writer([url] { return Store::open(url); }, opt);

  double process0 = cpuSeconds(CLOCK_PROCESS_CPUTIME_ID);
  double producer0 = cpuSeconds(CLOCK_THREAD_CPUTIME_ID);
  auto start = std::chrono::steady_clock::now();
  std::uint64_t waits = 0;
  for (std::int64_t i = 0; i < rows; ++i) {
    // A full queue means the writer is the bottleneck: wait for it instead of dropping, so
    // the run measures what the writer sustains.
    while (!writer.enqueue(makeRecord(i, now_ms))) {
      ++waits;
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
  }
  double producer_cpu = cpuSeconds(CLOCK_THREAD_CPUTIME_ID) - producer0;
  bool complete = writer.drain(std::chrono::seconds(120));
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  double process_cpu = cpuSeconds(CLOCK_PROCESS_CPUTIME_ID) - process0;
  auto s = writer.stats();
  cleanup();

  // Records refused while the queue was full were rebuilt and counted again by the producer:
  // the per-record enqueue cost divides by the attempts it made.
  double attempts = static_cast<double>(rows) + static_cast<double>(waits);
  std::printf(
      "{\"backend\":\"%s\",\"mode\":\"writer\",\"rows\":%lld,\"batch\":%zu,\"written\":%llu,"
      "\"seconds\":%.3f,\"rows_per_s\":%.0f,\"enqueue_ns\":%.0f,\"writer_cpu_us\":%.3f,\"queue_full_waits\":%llu}\n",
      backend, static_cast<long long>(rows), batch, static_cast<unsigned long long>(s.written), seconds,
      static_cast<double>(s.written) / seconds, producer_cpu / attempts * 1e9,
      (process_cpu - producer_cpu) / static_cast<double>(rows) * 1e6, static_cast<unsigned long long>(waits));
  return complete && s.written == static_cast<std::uint64_t>(rows) ? 0 : 1;
}
