#include "core/LineWriter.hpp"

#include <unistd.h>

#include <cerrno>
#include <unordered_map>

namespace sluice {

LineWriter::LineWriter(int fd, std::size_t max_queued_bytes)
    : fd_(fd), max_queued_bytes_(max_queued_bytes), thread_([this] { run(); }) {}

LineWriter::~LineWriter() {
  flushThisThread();
  {
    std::lock_guard lk(mu_);
    stop_ = true;
  }
  cv_.notify_one();
  thread_.join();
}

LineWriter::Batch& LineWriter::local() {
  // One batch per (thread, writer); several writers may coexist (tests).
  thread_local std::unordered_map<const LineWriter*, Batch> batches;
  return batches[this];
}

void LineWriter::append(std::string_view line) {
  auto& b = local();
  b.bytes.append(line);
  b.bytes.push_back('\n');
  ++b.lines;
  if (b.bytes.size() >= kBatchBytes) {
    Batch full;
    std::swap(full, b);
    b.bytes.reserve(kBatchBytes + 1024);
    handOver(std::move(full));
  }
}

void LineWriter::flushThisThread() {
  auto& b = local();
  if (b.bytes.empty()) return;
  Batch full;
  std::swap(full, b);
  handOver(std::move(full));
}

void LineWriter::handOver(Batch&& b) {
  {
    std::lock_guard lk(mu_);
    if (queued_bytes_ + b.bytes.size() > max_queued_bytes_) {
      dropped_.fetch_add(b.lines, std::memory_order_relaxed);
      return;
    }
    queued_bytes_ += b.bytes.size();
    queue_.push_back(std::move(b));
  }
  cv_.notify_one();
}

void LineWriter::drain() {
  flushThisThread();
  std::unique_lock lk(mu_);
  drained_cv_.wait(lk, [&] { return queue_.empty() && !writing_; });
}

void LineWriter::run() {
  std::unique_lock lk(mu_);
  for (;;) {
    cv_.wait(lk, [&] { return stop_ || !queue_.empty(); });
    if (queue_.empty() && stop_) break;
    Batch b = std::move(queue_.front());
    queue_.pop_front();
    queued_bytes_ -= b.bytes.size();
    writing_ = true;
    lk.unlock();
    std::string_view rest = b.bytes;
    while (!rest.empty()) {
      ssize_t n = ::write(fd_, rest.data(), rest.size());
      if (n < 0) {
        if (errno == EINTR) continue;
        break;  // stdout closed: nothing sensible to do but stop writing this batch
      }
      rest.remove_prefix(static_cast<std::size_t>(n));
    }
    lk.lock();
    writing_ = false;
    if (queue_.empty()) drained_cv_.notify_all();
  }
  drained_cv_.notify_all();
}

}  // namespace sluice
