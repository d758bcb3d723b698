// The gateway's own lines of /metrics, past what the metrics registry counts per request: the
// upstream keys' and channels' health, the response cache, the edge certificate's reloads, and
// the access and request logs.
#pragma once
#include <cstdint>
#include <optional>
#include <string>

#include "cache/ResponseCache.hpp"
#include "store/LogWriter.hpp"

namespace sluice::gateway {

struct Snapshot;

void renderKeyStates(const Snapshot& snap, std::string& out);
void renderCacheMetrics(const cache::CacheStats& cs, std::string& out);
void renderTlsMetrics(std::uint64_t ok, std::uint64_t failed, std::string& out);
// `logs`: the request log's writer's figures (none when store.request_logs is off).
// store.responses: rows written and rows the sweep deleted since start.
void renderStoredResponseMetrics(std::uint64_t stored, std::uint64_t expired, std::string& out);
void renderLogMetrics(std::uint64_t access_dropped, const std::optional<store::LogWriter::Stats>& logs,
                      std::string& out);

}  // namespace sluice::gateway
