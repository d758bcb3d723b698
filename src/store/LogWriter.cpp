#include "store/LogWriter.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <ctime>

namespace sluice::store {

LogWriter::LogWriter(StoreFactory factory, Options options) : factory_(std::move(factory)), opt_(options) {
  opt_.batch_size = std::max<std::size_t>(opt_.batch_size, 1);
  opt_.retry_initial = std::max(opt_.retry_initial, std::chrono::milliseconds(1));
  opt_.retention_interval = std::max(opt_.retention_interval, std::chrono::milliseconds(1));
  thread_ = std::thread([this] { run(); });
  index_thread_ = std::thread([this] { buildIndexes(); });
}

LogWriter::~LogWriter() {
  if (!drained_) drain(std::chrono::seconds(5));
}

std::size_t LogWriter::approxBytes(const LogRecord& r) {
  std::size_t n = sizeof(LogRecord) + r.request_id.size() + r.channel.size() + r.upstream_key.size() + r.model.size() +
                  r.attempts.size() + r.client_addr.size() + r.user_agent.size();
  if (r.request_body) n += r.request_body->size();
  if (r.response_body) n += r.response_body->size();
  return n;
}

bool LogWriter::enqueue(LogRecord&& record) {
  std::size_t bytes = approxBytes(record);
  bool wake = false;
  LogRecord spent;  // freed on this thread once the lock is released (see handBack)
  {
    std::lock_guard lk(mu_);
    if (stopping_ || queue_.size() + held_ >= opt_.max_queue ||
        queued_bytes_ + held_bytes_ + bytes > opt_.max_queue_bytes) {
      dropped_.fetch_add(1, std::memory_order_relaxed);
      return false;
    }
    queue_.push_back(std::move(record));
    queued_bytes_ += bytes;
    enqueued_.fetch_add(1, std::memory_order_relaxed);
    // Wake the writer only when a full batch waits; otherwise its flush timer picks records up.
    wake = queue_.size() == opt_.batch_size;
    if (!spent_.empty()) {
      spent = std::move(spent_.back());
      spent_.pop_back();
    }
  }
  if (wake) cv_.notify_one();
  return true;
}

bool LogWriter::drain(std::chrono::milliseconds deadline) {
  if (!drained_) {
    stopIndexes();  // first: a SQLite build would keep the writer from writing what is queued
    {
      std::lock_guard lk(mu_);
      stopping_ = true;
      deadline_ = Clock::now() + deadline;
    }
    cv_.notify_all();
    thread_.join();
    drained_ = true;
  }
  return abandoned_.load() == 0;
}

LogWriter::Stats LogWriter::stats() const {
  Stats s;
  {
    std::lock_guard lk(mu_);
    s.queue_depth = queue_.size();
    s.in_flight = held_;
  }
  s.enqueued = enqueued_.load(std::memory_order_relaxed);
  s.written = written_.load(std::memory_order_relaxed);
  s.dropped = dropped_.load(std::memory_order_relaxed);
  s.rejected = rejected_.load(std::memory_order_relaxed);
  s.abandoned = abandoned_.load(std::memory_order_relaxed);
  s.failed_batches = failed_.load(std::memory_order_relaxed);
  s.expired = expired_.load(std::memory_order_relaxed);
  s.connected = connected_.load(std::memory_order_relaxed);
  return s;
}

void LogWriter::run() {
  std::vector<LogRecord> taken;  // swapped with queue_, so both keep their capacity
  auto last_take = Clock::now();
  for (;;) {
    {
      std::unique_lock lk(mu_);
      // A retention sweep or a rollup backfill under way only peeks at the queue between
      // its steps.
      const auto now = Clock::now();
      const bool busy = sweep_before_ms_ || (backfill_pending_ && now >= next_backfill_);
      // A SQLite index build holds the write lock: records (and the sweep and the backfill)
      // wait, the queue's bound absorbing them, until it ends.
      if (index_blocks_writes_.load(std::memory_order_acquire) && !stopping_) {
        cv_.wait_for(lk, opt_.flush_interval, [&] { return stopping_; });
        continue;
      }
      if (!busy) {
        auto wait = opt_.flush_interval;
        if (backfill_pending_)
          wait = std::min(wait, std::chrono::duration_cast<std::chrono::milliseconds>(next_backfill_ - now) +
                                    std::chrono::milliseconds(1));
        cv_.wait_for(lk, wait, [&] { return stopping_ || queue_.size() >= opt_.batch_size; });
        if (index_blocks_writes_.load(std::memory_order_acquire) && !stopping_) continue;  // began meanwhile
      }
      if (queue_.empty() && stopping_) break;
      bool due =
          stopping_ || queue_.size() >= opt_.batch_size || !busy || Clock::now() - last_take >= opt_.flush_interval;
      if (!queue_.empty() && due) {
        taken.swap(queue_);
        held_ = taken.size();
        held_bytes_ = queued_bytes_;
        queued_bytes_ = 0;
        last_take = Clock::now();
      }
    }
    std::size_t done = 0;
    while (done < taken.size()) {
      std::size_t n = std::min(opt_.batch_size, taken.size() - done);
      std::size_t ok = writeBatch(std::span(taken).subspan(done, n));
      std::size_t bytes = 0;
      for (std::size_t i = done; i < done + ok; ++i) bytes += approxBytes(taken[i]);
      done += ok;
      std::lock_guard lk(mu_);
      held_ -= ok;
      held_bytes_ -= bytes;
      if (ok < n) break;
    }
    if (done < taken.size()) {  // draining, and the deadline passed with the database still failing
      std::lock_guard lk(mu_);
      std::uint64_t lost = (taken.size() - done) + queue_.size();
      abandoned_.fetch_add(lost, std::memory_order_relaxed);
      spdlog::error("log writer: shutdown deadline passed with the database unavailable; {} log records lost", lost);
      queue_.clear();
      queued_bytes_ = 0;
      held_ = 0;
      held_bytes_ = 0;
      taken.clear();
      break;
    }
    handBack(taken);
    if (opt_.retention_days > 0) retentionStep();
    if (backfill_pending_) backfillStep();
  }
  store_.reset();
  connected_.store(false, std::memory_order_relaxed);
}

void LogWriter::handBack(std::vector<LogRecord>& written) {
  // Bounded, and without bodies (those are rare and large: freed here), so that an idle
  // gateway holds at most one batch of small strings.
  if (written.size() > opt_.batch_size)
    written.erase(written.begin() + static_cast<std::ptrdiff_t>(opt_.batch_size), written.end());
  for (LogRecord& r : written) {
    r.request_body.reset();
    r.response_body.reset();
  }
  {
    std::lock_guard lk(mu_);
    if (spent_.empty()) spent_.swap(written);  // else the last round is still there: free this one here
  }
  written.clear();
}

Store& LogWriter::store() {
  if (!store_) {
    store_ = factory_();
    if (!store_) throw StoreError(StoreErrc::Unavailable, "store factory returned no store");
    opened_.store(true, std::memory_order_relaxed);
  }
  return *store_;
}

void LogWriter::retentionStep() {
  // Rows per step: a few milliseconds of deleting between two insert batches.
  constexpr std::int64_t kChunk = 5'000;
  constexpr std::int64_t kDayMs = 86'400'000;
  {
    std::lock_guard lk(mu_);
    if (stopping_) return;  // shutdown writes what is queued and nothing else
  }
  auto now = Clock::now();
  if (!sweep_before_ms_) {
    if (now < next_sweep_) return;
    next_sweep_ = now + opt_.retention_interval;
    std::int64_t unix_ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
            .count();
    sweep_before_ms_ = unix_ms - opt_.retention_days * kDayMs;
    sweep_deleted_ = 0;
  }
  try {
    std::int64_t n = store().deleteLogsBefore(*sweep_before_ms_, kChunk);
    sweep_deleted_ += n;
    expired_.fetch_add(static_cast<std::uint64_t>(n), std::memory_order_relaxed);
    if (n < kChunk) {
      if (sweep_deleted_ > 0)
        spdlog::info("log retention: deleted {} request log rows older than {} days", sweep_deleted_,
                     opt_.retention_days);
      sweep_before_ms_.reset();
    }
  } catch (const std::exception& e) {
    // The insert path reports outages and reconnects; a failed sweep is simply tried again
    // later (sooner than the next interval when the database was merely unreachable).
    auto* se = dynamic_cast<const StoreError*>(&e);
    bool transient = !se || se->transient();
    if (transient) {
      store_.reset();
      next_sweep_ = std::min(next_sweep_, now + opt_.retry_max);
    } else {
      spdlog::warn("log retention: deleting old request logs failed: {}", e.what());
    }
    sweep_before_ms_.reset();
  }
}

void LogWriter::backfillStep() {
  {
    std::lock_guard lk(mu_);
    if (stopping_) return;  // shutdown writes what is queued and nothing else
  }
  const auto now = Clock::now();
  if (now < next_backfill_) return;
  auto iso = [](std::int64_t ms) {
    std::time_t t = static_cast<std::time_t>(ms / 1000);
    std::tm tm{};
    gmtime_r(&t, &tm);
    char buf[32];
    std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%MZ", &tm);
    return std::string(buf);
  };
  try {
    const RollupBackfill step = store().backfillRollups();
    // Each step holds the write lock; the pause after it (twice the step, at least 50 ms) lets
    // the other connections (the admin API, the control plane, other instances) take it:
    // SQLite's lock is not fair, and a waiter polls it at intervals of up to 100 ms.
    const auto took = Clock::now() - now;
    next_backfill_ = Clock::now() + std::max<Clock::duration>(2 * took, std::chrono::milliseconds(50));
    if (step.done) {
      backfill_pending_ = false;
      if (backfill_first_ms_)
        spdlog::info("rollup backfill: done in {} s; usage is read from the rollups",
                     std::chrono::duration_cast<std::chrono::seconds>(now - backfill_started_).count());
      return;
    }
    if (!backfill_first_ms_) {
      backfill_first_ms_ = step.before_ms;
      backfill_started_ = backfill_logged_ = now;
      spdlog::info(
          "rollup backfill: folding the request log rows from {} back to {} into the hourly usage rollups "
          "(in the background; until done, usage for those hours is summed from the rows)",
          iso(step.before_ms), iso(step.oldest_ms));
    } else if (now - backfill_logged_ >= std::chrono::seconds(10)) {
      backfill_logged_ = now;
      const std::int64_t span = std::max<std::int64_t>(*backfill_first_ms_ - step.oldest_ms, 1);
      const std::int64_t pct = std::clamp<std::int64_t>((*backfill_first_ms_ - step.before_ms) * 100 / span, 0, 100);
      spdlog::info("rollup backfill: {}% (hours before {} left)", pct, iso(step.before_ms));
    }
  } catch (const std::exception& e) {
    // Tried again later; the insert path reports outages and reconnects.
    auto* se = dynamic_cast<const StoreError*>(&e);
    if (!se || se->transient()) {
      store_.reset();
    } else {
      spdlog::warn("rollup backfill: {} (retrying in {} s)", e.what(),
                   std::chrono::duration_cast<std::chrono::seconds>(opt_.retry_max).count());
    }
    next_backfill_ = now + opt_.retry_max;
  }
}

bool LogWriter::indexWait(std::chrono::milliseconds d) {
  std::unique_lock lk(index_mu_);
  return !index_cv_.wait_for(lk, d, [&] { return index_stop_; });
}

void LogWriter::stopIndexes() {
  if (!index_thread_.joinable()) return;
  std::unique_lock lk(index_mu_);
  index_stop_ = true;
  index_cv_.notify_all();
  // Cancel until the thread is out: a cancel that lands just before the build's statement
  // starts does nothing, so it is sent again.
  while (!index_done_) {
    if (index_cancel_) index_cancel_();
    index_cv_.wait_for(lk, std::chrono::milliseconds(100), [&] { return index_done_; });
  }
  lk.unlock();
  index_thread_.join();
}

void LogWriter::buildIndexes() {
  // Another instance's build takes minutes on a large log: look again now and then.
  constexpr std::chrono::seconds kBusyRetry{30};
  auto backoff = opt_.retry_initial;
  bool told_busy = false;
  std::unique_ptr<Store> s;  // this thread's own connection, kept across attempts
  for (;;) {
    {
      std::lock_guard lk(index_mu_);
      if (index_stop_) break;
    }
    // After the writer has opened the store once: while the database is down at start, one
    // thread retrying is enough.
    if (!opened_.load(std::memory_order_relaxed)) {
      if (!indexWait(opt_.flush_interval)) break;
      continue;
    }
    try {
      if (!s) s = factory_();
      if (!s) throw StoreError(StoreErrc::Unavailable, "store factory returned no store");
      const std::vector<std::string> missing = s->missingDeferredIndexes();
      if (missing.empty()) break;
      const bool blocks = s->indexBuildsBlockWriters();
      bool busy = false;
      for (std::size_t i = 0; i < missing.size() && !busy; ++i) {
        {
          std::lock_guard lk(index_mu_);
          if (index_stop_) break;
          index_cancel_ = s->canceller();
        }
        spdlog::info(
            "search index {}: building it ({} of {}, in the background{}); until it is built, log searches that "
            "would use it read more rows",
            missing[i], i + 1, missing.size(), blocks ? "; request logs wait in the queue meanwhile" : "");
        const auto t0 = Clock::now();
        if (blocks) index_blocks_writes_.store(true, std::memory_order_release);
        // However the build ends: the writer may write again, nothing is left to cancel.
        struct BuildEnd {
          LogWriter& w;
          ~BuildEnd() {
            w.index_blocks_writes_.store(false, std::memory_order_release);
            w.cv_.notify_all();
            const std::lock_guard lk(w.index_mu_);
            w.index_cancel_ = nullptr;
          }
        };
        bool built = false;
        {
          const BuildEnd end{*this};
          built = s->buildDeferredIndex(missing[i]);
        }
        if (!built) {
          busy = true;
          if (!told_busy)
            spdlog::info("search indexes: another instance is building them; looking again every {} s",
                         kBusyRetry.count());
          told_busy = true;
        } else {
          spdlog::info("search index {}: built in {:.1f} s", missing[i],
                       std::chrono::duration<double>(Clock::now() - t0).count());
        }
      }
      backoff = opt_.retry_initial;
      if (busy && !indexWait(kBusyRetry)) break;
    } catch (const std::exception& e) {
      {
        std::lock_guard lk(index_mu_);
        if (index_stop_) break;  // cut off by drain(): undone, built again at the next start
      }
      auto* se = dynamic_cast<const StoreError*>(&e);
      if (!se || se->transient()) s.reset();  // reconnect on the next attempt
      if (se && !se->transient()) {
        // Refused (no CREATE privilege, say): the searches work without the index; say so,
        // then try again rarely rather than every few seconds.
        constexpr std::chrono::minutes kRefusedRetry{10};
        spdlog::warn("search indexes: {} (log searches work without them, only slower; trying again in {} min)",
                     e.what(), kRefusedRetry.count());
        if (!indexWait(kRefusedRetry)) break;
        continue;
      }
      if (!indexWait(backoff)) break;
      backoff = std::min(backoff * 2, opt_.retry_max);
    }
  }
  s.reset();
  std::lock_guard lk(index_mu_);
  index_done_ = true;
  index_cv_.notify_all();
}

bool LogWriter::tryInsert(std::span<const LogRecord> records, bool& transient) {
  transient = true;
  try {
    store().insertLogs(records);
    if (!connected_.exchange(true, std::memory_order_relaxed) && failed_.load(std::memory_order_relaxed) > 0)
      spdlog::info("log writer: database reachable again; writing queued logs");
    return true;
  } catch (const StoreError& e) {
    transient = e.transient();
    if (transient) {
      store_.reset();  // reopen (reconnect) on the next attempt
      if (connected_.exchange(false, std::memory_order_relaxed) || failed_.load(std::memory_order_relaxed) == 0)
        spdlog::warn("log writer: database unavailable, logs wait in the queue (bound {}): {}", opt_.max_queue,
                     e.what());
    } else if (records.size() == 1) {
      spdlog::warn("log writer: database refused log record {}: {}", records[0].request_id, e.what());
    }
  } catch (const std::exception& e) {
    store_.reset();
    if (connected_.exchange(false, std::memory_order_relaxed) || failed_.load(std::memory_order_relaxed) == 0)
      spdlog::warn("log writer: cannot open the store: {}", e.what());
  }
  return false;
}

std::size_t LogWriter::writeBatch(std::span<const LogRecord> batch) {
  auto backoff = opt_.retry_initial;
  std::size_t done = 0;
  while (done < batch.size()) {
    auto rest = batch.subspan(done);
    bool transient = false;
    if (tryInsert(rest, transient)) {
      written_.fetch_add(rest.size(), std::memory_order_relaxed);
      return batch.size();
    }
    failed_.fetch_add(1, std::memory_order_relaxed);
    if (!transient) {
      // Something in the batch is refused: write the records one by one, set aside the bad ones.
      for (; done < batch.size(); ++done) {
        bool t = false;
        if (tryInsert(batch.subspan(done, 1), t)) {
          written_.fetch_add(1, std::memory_order_relaxed);
        } else if (t) {
          break;  // the database went away meanwhile: retry the rest below
        } else {
          rejected_.fetch_add(1, std::memory_order_relaxed);
        }
      }
      if (done == batch.size()) break;
    }
    if (pastDeadline()) return done;
    sleepFor(backoff);
    backoff = std::min(backoff * 2, opt_.retry_max);
    if (pastDeadline()) return done;
  }
  return done;
}

bool LogWriter::pastDeadline() const {
  std::lock_guard lk(mu_);
  return stopping_ && Clock::now() >= deadline_;
}

void LogWriter::sleepFor(std::chrono::milliseconds d) {
  std::unique_lock lk(mu_);
  auto until = Clock::now() + d;
  for (;;) {
    auto target = stopping_ ? std::min(until, deadline_) : until;
    if (Clock::now() >= target) return;
    cv_.wait_until(lk, target);
  }
}

}  // namespace sluice::store
