#include "store/LogWriter.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <iterator>

namespace sluice::store {

LogWriter::LogWriter(StoreFactory factory, Options options) : factory_(std::move(factory)), opt_(options) {
  opt_.batch_size = std::max<std::size_t>(opt_.batch_size, 1);
  opt_.retry_initial = std::max(opt_.retry_initial, std::chrono::milliseconds(1));
  thread_ = std::thread([this] { run(); });
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
  {
    std::lock_guard lk(mu_);
    if (stopping_ || queue_.size() >= opt_.max_queue || queued_bytes_ + bytes > opt_.max_queue_bytes) {
      dropped_.fetch_add(1, std::memory_order_relaxed);
      return false;
    }
    queue_.push_back(std::move(record));
    queued_bytes_ += bytes;
    enqueued_.fetch_add(1, std::memory_order_relaxed);
    // Wake the writer only when a full batch waits; otherwise its flush timer picks records up.
    wake = queue_.size() == opt_.batch_size;
  }
  if (wake) cv_.notify_one();
  return true;
}

bool LogWriter::drain(std::chrono::milliseconds deadline) {
  if (!drained_) {
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
  }
  s.enqueued = enqueued_.load(std::memory_order_relaxed);
  s.written = written_.load(std::memory_order_relaxed);
  s.dropped = dropped_.load(std::memory_order_relaxed);
  s.rejected = rejected_.load(std::memory_order_relaxed);
  s.abandoned = abandoned_.load(std::memory_order_relaxed);
  s.failed_batches = failed_.load(std::memory_order_relaxed);
  s.in_flight = in_flight_.load(std::memory_order_relaxed);
  s.connected = connected_.load(std::memory_order_relaxed);
  return s;
}

void LogWriter::run() {
  std::vector<LogRecord> batch;
  batch.reserve(opt_.batch_size);
  for (;;) {
    {
      std::unique_lock lk(mu_);
      cv_.wait_for(lk, opt_.flush_interval, [&] { return stopping_ || queue_.size() >= opt_.batch_size; });
      if (queue_.empty()) {
        if (stopping_) break;
        continue;
      }
      std::size_t n = std::min(opt_.batch_size, queue_.size());
      for (std::size_t i = 0; i < n; ++i) {
        queued_bytes_ -= approxBytes(queue_.front());
        batch.push_back(std::move(queue_.front()));
        queue_.pop_front();
      }
      in_flight_.store(batch.size(), std::memory_order_relaxed);
    }
    writeBatch(batch);
    if (!batch.empty()) {  // draining, and the deadline passed with the database still failing
      std::lock_guard lk(mu_);
      std::uint64_t lost = batch.size() + queue_.size();
      abandoned_.fetch_add(lost, std::memory_order_relaxed);
      spdlog::error("log writer: shutdown deadline passed with the database unavailable; {} log records lost", lost);
      queue_.clear();
      queued_bytes_ = 0;
      batch.clear();
      in_flight_.store(0, std::memory_order_relaxed);
      break;
    }
  }
  store_.reset();
  connected_.store(false, std::memory_order_relaxed);
}

bool LogWriter::tryInsert(std::span<const LogRecord> records, bool& transient) {
  transient = true;
  try {
    if (!store_) {
      store_ = factory_();
      if (!store_) throw StoreError(StoreErrc::Unavailable, "store factory returned no store");
    }
    store_->insertLogs(records);
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

void LogWriter::writeBatch(std::vector<LogRecord>& batch) {
  auto backoff = opt_.retry_initial;
  while (!batch.empty()) {
    bool transient = false;
    if (tryInsert(batch, transient)) {
      written_.fetch_add(batch.size(), std::memory_order_relaxed);
      batch.clear();
      break;
    }
    failed_.fetch_add(1, std::memory_order_relaxed);
    if (!transient) {
      // Something in the batch is refused: write the records one by one, set aside the bad ones.
      std::size_t i = 0;
      for (; i < batch.size(); ++i) {
        bool t = false;
        if (tryInsert(std::span(&batch[i], 1), t)) {
          written_.fetch_add(1, std::memory_order_relaxed);
        } else if (t) {
          break;  // the database went away meanwhile: retry the rest below
        } else {
          rejected_.fetch_add(1, std::memory_order_relaxed);
        }
      }
      batch.erase(batch.begin(), batch.begin() + static_cast<std::ptrdiff_t>(i));
      in_flight_.store(batch.size(), std::memory_order_relaxed);
      if (batch.empty()) break;
    }
    if (pastDeadline()) return;
    sleepFor(backoff);
    backoff = std::min(backoff * 2, opt_.retry_max);
    if (pastDeadline()) return;
  }
  in_flight_.store(0, std::memory_order_relaxed);
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
