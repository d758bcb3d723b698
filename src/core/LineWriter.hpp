// LineWriter: gets log lines off the request path. Workers append lines to a per-thread batch
// (no lock, no syscall); a batch is handed to the writer thread when it grows past kBatchBytes
// or when flushAll() runs (each worker calls it on a short timer). The writer thread does the
// blocking write. The queue of batches is bounded: past it, batches are dropped and counted.
// Thread-safety: append() from any thread; the rest is internal.
#pragma once
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>

namespace sluice {

class LineWriter {
 public:
  // `fd` is written with write(2); `on_drop` is told how many lines a dropped batch held.
  explicit LineWriter(int fd, std::size_t max_queued_bytes = 64u << 20);
  ~LineWriter();  // drains everything queued, then stops
  LineWriter(const LineWriter&) = delete;
  LineWriter& operator=(const LineWriter&) = delete;

  // Appends one line (a '\n' is added) to this thread's batch.
  void append(std::string_view line);
  // Hands this thread's batch to the writer (workers call it on a timer and at shutdown).
  void flushThisThread();
  // Blocks until everything handed over so far is written.
  void drain();
  std::uint64_t dropped() const { return dropped_.load(std::memory_order_relaxed); }

  static constexpr std::size_t kBatchBytes = 32u * 1024;

 private:
  struct Batch {
    std::string bytes;
    std::uint64_t lines = 0;
  };
  void handOver(Batch&& b);
  void run();
  Batch& local();

  int fd_;
  std::size_t max_queued_bytes_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::condition_variable drained_cv_;
  std::deque<Batch> queue_;
  std::size_t queued_bytes_ = 0;
  bool writing_ = false;
  bool stop_ = false;
  std::atomic<std::uint64_t> dropped_{0};
  std::thread thread_;
};

}  // namespace sluice
