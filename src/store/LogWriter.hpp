// LogWriter: takes request log records off the response path. enqueue() only appends to a
// bounded in-memory queue (records past the bound are dropped and counted); a writer thread
// with its own Store takes everything queued at once and inserts it in batches, one
// transaction each, every flush_interval or as soon as batch_size records wait — so a kill -9
// loses at most about one interval of logs. With retention_days set, the same thread also
// deletes rows older than that, at start and every retention_interval, one chunk between
// batches so that inserts never wait behind a long sweep. Likewise, after an upgrade, it
// folds the rows that predate the usage rollups into them, one hour per step between
// batches, logging its progress (Store::backfillRollups). A second thread, with a connection
// of its own, builds the deferred search indexes the database lacks (store/Migrations.hpp),
// one at a time, once the writer has opened the store: on PostgreSQL beside the inserts; on SQLite a
// build holds the write lock, so the writer leaves its records in the queue until it ends.
// drain() cuts a build under way short (it is undone and done again at the next start).
// When the database is unreachable the writer keeps what it took, backs off, reopens the store
// through the factory and retries; the queue absorbs records meanwhile. A record the database
// refuses outright (not a transient error) is retried alone and, if refused again, counted as
// rejected, so one bad row never blocks the rest.
// Thread-safety: enqueue() and stats() from any thread; drain() from one thread (the owner).
#pragma once
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
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
    std::size_t max_queue = 10'000;           // records waiting or being written; past it enqueue() drops
    std::size_t max_queue_bytes = 64u << 20;  // approximate bytes of those (bodies count)
    // Records per insert transaction. Large, because SQLite's cost per row falls with the rows
    // per commit (each commit rewrites the index pages it touched); a batch this size still
    // commits within ~30 ms at 35k requests/s, and within flush_interval below that.
    std::size_t batch_size = 1024;
    std::chrono::milliseconds flush_interval{200};
    std::chrono::milliseconds retry_initial{100};  // backoff after a failure, doubling...
    std::chrono::milliseconds retry_max{5'000};    // ...up to this
    int retention_days = 0;                        // delete rows older than this; 0 = keep forever
    std::chrono::milliseconds retention_interval{std::chrono::hours(1)};
  };

  struct Stats {
    std::uint64_t enqueued = 0;        // accepted by enqueue()
    std::uint64_t written = 0;         // committed to the database
    std::uint64_t dropped = 0;         // refused by enqueue(): queue full or writer stopped
    std::uint64_t rejected = 0;        // refused by the database for their content
    std::uint64_t abandoned = 0;       // accepted but still unwritten when drain()'s deadline passed
    std::uint64_t failed_batches = 0;  // insert attempts that failed (each retry counts)
    std::uint64_t expired = 0;         // rows deleted by retention
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
  // Passes records that are written to spent_, for enqueue() to free: the strings were
  // allocated on the request threads, and freeing them there (one per enqueue, after the
  // lock) is malloc's fast path, where the writer thread's frees contend for the request
  // threads' arenas (measured: most of the writer thread's CPU under load).
  void handBack(std::vector<LogRecord>& written);
  // Writes `batch`, retrying transient failures; returns how many records from its front are
  // done (written or rejected): all of them, unless draining passed its deadline.
  std::size_t writeBatch(std::span<const LogRecord> batch);
  bool tryInsert(std::span<const LogRecord> records, bool& transient);
  // Opens the store if there is none; throws what the factory throws.
  Store& store();
  // One retention step: starts a sweep when one is due, else deletes the next chunk of the
  // sweep under way. Errors only postpone the sweep.
  void retentionStep();
  // One backfill step while the rollups still miss old rows. Errors postpone it.
  void backfillStep();
  // The index thread: builds the missing deferred indexes, then ends. Errors postpone it.
  void buildIndexes();
  // Waits up to `d` on the index thread unless drain() stops it; false: stopped.
  bool indexWait(std::chrono::milliseconds d);
  // Stops the index thread, cancelling a build under way, and joins it.
  void stopIndexes();
  bool pastDeadline() const;
  // Waits up to `d` unless stopping pushes the deadline earlier.
  void sleepFor(std::chrono::milliseconds d);
  static std::size_t approxBytes(const LogRecord& r);

  StoreFactory factory_;
  Options opt_;
  std::unique_ptr<Store> store_;  // writer thread only

  // Retention state, writer thread only.
  Clock::time_point next_sweep_{};               // the first sweep is due at start
  std::optional<std::int64_t> sweep_before_ms_;  // set while a sweep is under way
  std::int64_t sweep_deleted_ = 0;

  // Rollup backfill state, writer thread only. Pending until the store says it is done.
  bool backfill_pending_ = true;
  Clock::time_point next_backfill_{};
  Clock::time_point backfill_started_{}, backfill_logged_{};
  std::optional<std::int64_t> backfill_first_ms_;  // where this process's backfill began

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::vector<LogRecord> queue_;  // a vector the writer swaps out whole: no allocation per record
  std::vector<LogRecord> spent_;  // written records, freed by enqueue() (see handBack)
  std::size_t queued_bytes_ = 0;
  std::size_t held_ = 0;        // records the writer took and has not finished with
  std::size_t held_bytes_ = 0;  // their approximate bytes
  bool stopping_ = false;
  Clock::time_point deadline_{};

  std::atomic<std::uint64_t> enqueued_{0}, written_{0}, dropped_{0}, rejected_{0}, abandoned_{0}, failed_{0},
      expired_{0};
  std::atomic<bool> connected_{false};
  bool drained_ = false;
  std::thread thread_;

  // Deferred index builds (buildIndexes), under index_mu_ but the atomic.
  std::mutex index_mu_;
  std::condition_variable index_cv_;
  std::function<void()> index_cancel_;  // the building store's canceller while a build runs
  bool index_stop_ = false;
  bool index_done_ = false;
  std::atomic<bool> index_blocks_writes_{false};  // a SQLite build holds the write lock
  std::atomic<bool> opened_{false};               // the writer has opened the store once
  std::thread index_thread_;
};

}  // namespace sluice::store
