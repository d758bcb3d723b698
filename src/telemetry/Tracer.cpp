#include "telemetry/Tracer.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <unistd.h>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>

#include <exception>
#include <stdexcept>

#include "upstream/Client.hpp"
#include "upstream/Post.hpp"

namespace sluice::telemetry {

namespace net = boost::asio;
using Clock = std::chrono::steady_clock;

struct Tracer::Target {
  upstream::PostTarget post;
  Resource resource;
};

// The exporter thread's own event loop and pool, kept across exports (the collector's connection
// is reused).
struct Tracer::Loop {
  net::io_context ioc;
  upstream::ClientTls tls;  // loaded only for an https collector
  upstream::Pool pool{ioc, tls};
};

namespace {

std::string hostName() {
  char buf[256] = {};
  if (::gethostname(buf, sizeof buf - 1) != 0) return {};
  return buf;
}

// The collector's traces URL: the configured base with /v1/traces, unless it already ends so.
std::string tracesUrl(const std::string& endpoint) {
  std::string url = endpoint;
  while (!url.empty() && url.back() == '/') url.pop_back();
  if (!url.ends_with("/v1/traces")) url += "/v1/traces";
  return url;
}

}  // namespace

Tracer::Tracer() : Tracer(Options{}) {}
Tracer::Tracer(Options o) : opt_(o) {}

Tracer::~Tracer() {
  stop(std::chrono::milliseconds(0));
}

void Tracer::configure(const config::TelemetryConfig& t) {
  if (t.otlp_endpoint.empty()) {
    enabled_.store(false, std::memory_order_relaxed);
    return;
  }
  auto target = std::make_shared<Target>();
  target->post =
      upstream::makePostTarget(tracesUrl(t.otlp_endpoint), t.headers, opt_.timeout, "telemetry.otlp_endpoint");
  target->resource.service_name = t.service_name;
  target->resource.service_version = SLUICE_VERSION;
  target->resource.instance_id = fmt::format("{}:{}", hostName(), ::getpid());
  {
    std::lock_guard l(m_);
    if (stopping_) return;
    target_ = std::move(target);
    if (!thread_.joinable()) thread_ = std::thread([this] { run(); });
  }
  enabled_.store(true, std::memory_order_relaxed);
}

void Tracer::submit(std::vector<SpanRecord>&& spans) {
  if (spans.empty()) return;
  bool wake = false;
  {
    std::lock_guard l(m_);
    if (stopping_ || queue_.size() + spans.size() > opt_.max_queue) {
      dropped_full_.fetch_add(spans.size(), std::memory_order_relaxed);
      return;
    }
    for (auto& s : spans) queue_.push_back(std::move(s));
    wake = queue_.size() >= opt_.batch;
  }
  if (wake) cv_.notify_one();
}

void Tracer::stop(std::chrono::milliseconds drain) {
  {
    std::lock_guard l(m_);
    if (!stopping_) {
      stopping_ = true;
      drain_until_ = Clock::now() + drain;
    }
  }
  enabled_.store(false, std::memory_order_relaxed);
  cv_.notify_one();
  if (thread_.joinable()) thread_.join();
  std::lock_guard l(m_);
  dropped_failed_.fetch_add(queue_.size(), std::memory_order_relaxed);  // left when the drain time ran out
  queue_.clear();
}

void Tracer::run() {
  Loop loop;
  while (true) {
    std::vector<SpanRecord> batch;
    std::shared_ptr<const Target> target;
    {
      std::unique_lock l(m_);
      cv_.wait_for(l, opt_.delay, [&] { return stopping_ || queue_.size() >= opt_.batch; });
      if (stopping_ && (queue_.empty() || Clock::now() >= drain_until_)) return;
      if (queue_.empty()) continue;
      const std::size_t n = std::min(queue_.size(), opt_.batch);
      batch.reserve(n);
      for (std::size_t i = 0; i < n; ++i) {
        batch.push_back(std::move(queue_.front()));
        queue_.pop_front();
      }
      target = target_;
    }
    const std::string payload = encodeTraces(target->resource, batch);
    if (exportBatch(loop, *target, payload)) {
      exported_.fetch_add(batch.size(), std::memory_order_relaxed);
    } else {
      dropped_failed_.fetch_add(batch.size(), std::memory_order_relaxed);
      exports_failed_.fetch_add(1, std::memory_order_relaxed);
    }
  }
}

bool Tracer::exportBatch(Loop& loop, const Target& target, const std::string& payload) {
  auto& ioc = loop.ioc;
  auto& pool = loop.pool;
  std::string why;
  for (int attempt = 0; attempt < 2; ++attempt) {
    upstream::PostResult res;
    bool done = false;
    ioc.restart();
    net::co_spawn(ioc, upstream::post(pool, target.post, "application/json", payload, 64 * 1024),
                  [&](const std::exception_ptr& e, upstream::PostResult r) {
                    if (e) {
                      res.failure = upstream::PostResult::Failure::Send;
                      res.error = "the export failed";
                    } else {
                      res = std::move(r);
                    }
                    done = true;
                  });
    // Until the export is answered, not until nothing is left to do: a connection's read
    // watchdog stays armed until its deadline (the next read re-arms it instead of a timer
    // call per read), and it is harmless when it fires later.
    while (!done && ioc.run_one() != 0) {
    }
    if (res.failure == upstream::PostResult::Failure::None && res.status >= 200 && res.status < 300) return true;
    why = res.failure != upstream::PostResult::Failure::None ? (res.timed_out ? "timed out" : res.error)
                                                             : fmt::format("the collector answered {}", res.status);
    // OTLP/HTTP: 429, 502, 503 and 504 may be retried; so may a connection that failed.
    const bool retryable = res.failure == upstream::PostResult::Failure::Connect || res.status == 429 ||
                           res.status == 502 || res.status == 503 || res.status == 504;
    bool stopping = false;
    {
      std::lock_guard l(m_);
      stopping = stopping_;
    }
    if (!retryable || stopping || attempt == 1) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
  const auto nowMs = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now().time_since_epoch()).count();
  auto last = last_warn_ms_.load(std::memory_order_relaxed);
  if (nowMs - last >= 60'000 && last_warn_ms_.compare_exchange_strong(last, nowMs))
    spdlog::warn("telemetry: a batch of spans was not exported to {}: {} (more failures in /metrics)",
                 target.post.endpoint.pool_key, why);
  return false;
}

Tracer::Stats Tracer::stats() const {
  Stats s;
  s.exported = exported_.load(std::memory_order_relaxed);
  s.dropped_full = dropped_full_.load(std::memory_order_relaxed);
  s.dropped_failed = dropped_failed_.load(std::memory_order_relaxed);
  s.exports_failed = exports_failed_.load(std::memory_order_relaxed);
  std::lock_guard l(m_);
  s.queued = queue_.size();
  return s;
}

void Tracer::renderMetrics(std::string& out) const {
  const Stats s = stats();
  out += "# HELP sluice_trace_spans_total Trace spans by fate: exported, or dropped (queue full, export failed).\n";
  out += "# TYPE sluice_trace_spans_total counter\n";
  out += fmt::format("sluice_trace_spans_total{{result=\"exported\"}} {}\n", s.exported);
  out += fmt::format("sluice_trace_spans_total{{result=\"dropped_queue_full\"}} {}\n", s.dropped_full);
  out += fmt::format("sluice_trace_spans_total{{result=\"dropped_export_failed\"}} {}\n", s.dropped_failed);
  out += "# HELP sluice_trace_exports_failed_total Span batches the collector did not take.\n";
  out += "# TYPE sluice_trace_exports_failed_total counter\n";
  out += fmt::format("sluice_trace_exports_failed_total {}\n", s.exports_failed);
  out += "# HELP sluice_trace_queue_spans Spans waiting for the exporter.\n";
  out += "# TYPE sluice_trace_queue_spans gauge\n";
  out += fmt::format("sluice_trace_queue_spans {}\n", s.queued);
}

}  // namespace sluice::telemetry
