// LogWriter: takes request log records off the response path. enqueue() only appends to a
// bounded in-memory queue (records past the bound are dropped and counted); a writer thread
// with its own Store inserts them in batches, one transaction each, every flush_interval or
// as soon as batch_size records wait — so a kill -9 loses at most about one interval of logs.
// When the database is unreachable the writer keeps the batch, backs off, reopens the store
// through the factory and retries; the queue absorbs records meanwhile. A record the database
// refuses outright (not a transient error) is retried alone and, if refused again, counted as
// rejected, so one bad row never blocks the rest.
// Thread-safety: enqueue() and stats() from any thread; drain() from one thread (the owner).
#pragma once
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "store/Store.hpp"

namespace sluice::store {

class LogWriter {
 public:
  // Called on the writer thread whenever it needs a connection (first use, after a failure).
  // May throw (StoreError or anything else): that counts as the database being unavailable.
  using StoreFactory = std::function<std::unique_ptr<Store>()>;

  struct Options {
    std::size_t max_queue = 10'000;           // records waiting; past it enqueue() drops
    std::size_t max_queue_bytes = 64u << 20;  // approximate bytes waiting (bodies count)
    std::size_t batch_size = 256;             // records per insert transaction
    std::chrono::milliseconds flush_interval{200};
    std::chrono::milliseconds retry_initial{100};  // backoff after a failure, doubling...
    std::chrono::milliseconds retry_max{5'000};    // ...up to this
  };

  struct Stats {
    std::uint64_t enqueued = 0;        // accepted by enqueue()
    std::uint64_t written = 0;         // committed to the database
    std::uint64_t dropped = 0;         // refused by enqueue(): queue full or writer stopped
    std::uint64_t rejected = 0;        // refused by the database for their content
    std::uint64_t abandoned = 0;       // accepted but still unwritten when drain()'s deadline passed
    std::uint64_t failed_batches = 0;  // insert attempts that failed (each retry counts)
    std::size_t queue_depth = 0;       // records waiting in the queue
    std::size_t in_flight = 0;         // records the writer holds (being written or retried)
    bool connected = false;            // the writer holds an open store that last worked
  };

  LogWriter(StoreFactory factory, Options options);
  explicit LogWriter(StoreFactory factory) : LogWriter(std::move(factory), Options{}) {}
  // Drains with a 5 s deadline unless drain() already ran.
  ~LogWriter();
  LogWriter(const LogWriter&) = delete;
  LogWriter& operator=(const LogWriter&) = delete;

  // Never blocks on the database (only on a short queue lock). False: dropped and counted.
  bool enqueue(LogRecord&& record);
  // Stops accepting records, writes what is queued, retrying until `deadline` has passed,
  // then stops the writer thread. Whatever is still unwritten then is counted as abandoned.
  // A database call already under way is not interrupted (it is bounded by the connection's
  // own timeouts). Returns true if every accepted record was written or rejected.
  bool drain(std::chrono::milliseconds deadline);
  Stats stats() const;

 private:
  using Clock = std::chrono::steady_clock;
  void run();
  // Writes `batch` (emptying it), retrying transient failures; returns early, leaving the
  // unwritten records in `batch`, only once draining has passed its deadline.
  void writeBatch(std::vector<LogRecord>& batch);
  bool tryInsert(std::span<const LogRecord> records, bool& transient);
  bool pastDeadline() const;
  // Waits up to `d` unless stopping pushes the deadline earlier.
  void sleepFor(std::chrono::milliseconds d);
  static std::size_t approxBytes(const LogRecord& r);

  StoreFactory factory_;
  Options opt_;
  std::unique_ptr<Store> store_;  // writer thread only

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<LogRecord> queue_;
  std::size_t queued_bytes_ = 0;
  bool stopping_ = false;
  Clock::time_point deadline_{};

  std::atomic<std::uint64_t> enqueued_{0}, written_{0}, dropped_{0}, rejected_{0}, abandoned_{0}, failed_{0};
  std::atomic<std::size_t> in_flight_{0};
  std::atomic<bool> connected_{false};
  bool drained_ = false;
  std::thread thread_;
};

}  // namespace sluice::store
