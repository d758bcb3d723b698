#include "gateway/GatewayMetrics.hpp"

#include <fmt/format.h>

#include "gateway/Snapshot.hpp"
#include "metrics/Metrics.hpp"
#include "routing/Router.hpp"

namespace sluice::gateway {

void renderKeyStates(const Snapshot& snap, std::string& out) {
  out += "# HELP sluice_upstream_key_state Upstream key health: 1 for the state the key is in.\n";
  out += "# TYPE sluice_upstream_key_state gauge\n";
  auto now = routing::nowMs();
  for (const auto& ch : snap.router->channels()) {
    for (const auto& k : ch->keys) {
      const char* state = k.health->disabled.load() ? "disabled" : k.health->available(now) ? "active" : "cooling";
      out += fmt::format("sluice_upstream_key_state{{channel=\"{}\",key=\"{}\",state=\"{}\"}} 1\n",
                         metrics::labelValue(ch->cfg.name), metrics::labelValue(k.id), state);
    }
  }
  out += "# HELP sluice_channel_breaker_open 1 while a channel's circuit breaker is open.\n";
  out += "# TYPE sluice_channel_breaker_open gauge\n";
  for (const auto& ch : snap.router->channels()) {
    auto until = ch->health->open_until_ms.load();
    out += fmt::format("sluice_channel_breaker_open{{channel=\"{}\"}} {}\n", metrics::labelValue(ch->cfg.name),
                       until > now ? 1 : 0);
  }
  // What routing.balance: latency ranks by (learned whatever the balance is).
  out += "# HELP sluice_channel_ttfb_ewma_ms Moving average of a channel's time to first byte, ms (absent until measured).\n";
  out += "# TYPE sluice_channel_ttfb_ewma_ms gauge\n";
  for (const auto& ch : snap.router->channels()) {
    const double t = ch->health->latency.ttfb_ms.load(std::memory_order_relaxed);
    if (t >= 0)
      out += fmt::format("sluice_channel_ttfb_ewma_ms{{channel=\"{}\"}} {:.3f}\n", metrics::labelValue(ch->cfg.name), t);
  }
  out += "# HELP sluice_channel_error_ewma Moving average of a channel's failed attempts (0 to 1).\n";
  out += "# TYPE sluice_channel_error_ewma gauge\n";
  for (const auto& ch : snap.router->channels())
    out += fmt::format("sluice_channel_error_ewma{{channel=\"{}\"}} {:.4f}\n", metrics::labelValue(ch->cfg.name),
                       ch->health->latency.errors.load(std::memory_order_relaxed));
  out += "# HELP sluice_upstream_key_ttfb_ewma_ms Moving average of a key's time to first byte, ms (absent until measured).\n";
  out += "# TYPE sluice_upstream_key_ttfb_ewma_ms gauge\n";
  for (const auto& ch : snap.router->channels())
    for (const auto& k : ch->keys) {
      const double t = k.health->latency.ttfb_ms.load(std::memory_order_relaxed);
      if (t >= 0)
        out += fmt::format("sluice_upstream_key_ttfb_ewma_ms{{channel=\"{}\",key=\"{}\"}} {:.3f}\n",
                           metrics::labelValue(ch->cfg.name), metrics::labelValue(k.id), t);
    }
  out += "# HELP sluice_upstream_key_error_ewma Moving average of a key's failed attempts (0 to 1).\n";
  out += "# TYPE sluice_upstream_key_error_ewma gauge\n";
  for (const auto& ch : snap.router->channels())
    for (const auto& k : ch->keys)
      out += fmt::format("sluice_upstream_key_error_ewma{{channel=\"{}\",key=\"{}\"}} {:.4f}\n",
                         metrics::labelValue(ch->cfg.name), metrics::labelValue(k.id),
                         k.health->latency.errors.load(std::memory_order_relaxed));
}

void renderCacheMetrics(const cache::CacheStats& cs, std::string& out) {
  // The backend counts its own lookups and writes (Redis errors count as misses).
  out += "# HELP sluice_cache_requests_total Cache lookups by result.\n";
  out += "# TYPE sluice_cache_requests_total counter\n";
  out += fmt::format("sluice_cache_requests_total{{result=\"hit\"}} {}\n", cs.hits);
  out += fmt::format("sluice_cache_requests_total{{result=\"miss\"}} {}\n", cs.misses);
  out += "# HELP sluice_cache_stores_total Answers written to the cache.\n";
  out += "# TYPE sluice_cache_stores_total counter\n";
  out += fmt::format("sluice_cache_stores_total {}\n", cs.writes);
  out += "# HELP sluice_cache_entries Answers held by the in-memory cache.\n";
  out += "# TYPE sluice_cache_entries gauge\n";
  out += fmt::format("sluice_cache_entries {}\n", cs.entries);
}

void renderTlsMetrics(std::uint64_t ok, std::uint64_t failed, std::string& out) {
  out += "# HELP sluice_tls_reloads_total Reloads of the edge certificate and key by result.\n";
  out += "# TYPE sluice_tls_reloads_total counter\n";
  out += fmt::format("sluice_tls_reloads_total{{result=\"ok\"}} {}\n", ok);
  out += fmt::format("sluice_tls_reloads_total{{result=\"failed\"}} {}\n", failed);
}

void renderStoredResponseMetrics(std::uint64_t stored, std::uint64_t expired, std::string& out) {
  out += "# HELP sluice_stored_responses_written_total Responses API answers kept by store.responses.\n";
  out += "# TYPE sluice_stored_responses_written_total counter\n";
  out += "sluice_stored_responses_written_total " + std::to_string(stored) + "\n";
  out += "# HELP sluice_stored_responses_expired_total Stored responses deleted past store.responses.ttl.\n";
  out += "# TYPE sluice_stored_responses_expired_total counter\n";
  out += "sluice_stored_responses_expired_total " + std::to_string(expired) + "\n";
}

void renderLogMetrics(std::uint64_t access_dropped, const std::optional<store::LogWriter::Stats>& logs,
                      std::string& out) {
  out += "# HELP sluice_access_log_dropped_total Access-log lines dropped because the writer fell behind.\n";
  out += "# TYPE sluice_access_log_dropped_total counter\n";
  out += fmt::format("sluice_access_log_dropped_total {}\n", access_dropped);
  if (!logs) return;
  const auto& st = *logs;
  out += "# HELP sluice_request_log_records_total Request-log rows by fate.\n";
  out += "# TYPE sluice_request_log_records_total counter\n";
  out += fmt::format("sluice_request_log_records_total{{result=\"written\"}} {}\n", st.written);
  out += fmt::format("sluice_request_log_records_total{{result=\"dropped\"}} {}\n", st.dropped);
  out += fmt::format("sluice_request_log_records_total{{result=\"rejected\"}} {}\n", st.rejected);
  out += "# HELP sluice_request_log_queue_depth Rows waiting for the database.\n";
  out += "# TYPE sluice_request_log_queue_depth gauge\n";
  out += fmt::format("sluice_request_log_queue_depth {}\n", st.queue_depth + st.in_flight);
  out += "# HELP sluice_store_connected 1 while the log writer's database connection works.\n";
  out += "# TYPE sluice_store_connected gauge\n";
  out += fmt::format("sluice_store_connected {}\n", st.connected ? 1 : 0);
  out += "# HELP sluice_request_log_expired_total Request-log rows deleted by store.log_retention_days.\n";
  out += "# TYPE sluice_request_log_expired_total counter\n";
  out += fmt::format("sluice_request_log_expired_total {}\n", st.expired);
}

}  // namespace sluice::gateway
