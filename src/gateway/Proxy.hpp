// Proxy: one OpenAI-format request relayed to an upstream, with failover across keys and
// channels before the first byte reaches the client, and an explicit SSE error event after.
#pragma once
#include <boost/asio/awaitable.hpp>
#include <chrono>
#include <optional>
#include <utility>
#include <vector>
#include <memory>
#include <string>

#include "cache/ResponseCache.hpp"
#include "cluster/Limiter.hpp"
#include "gateway/Wire.hpp"
#include "http/Server.hpp"
#include "pipeline/KeyTable.hpp"
#include "pipeline/Pricing.hpp"
#include "pipeline/Safety.hpp"
#include "pipeline/SecretScrubber.hpp"
#include "routing/Router.hpp"
#include "upstream/Client.hpp"

namespace sluice::gateway {

// What the proxy needs from the running gateway: the snapshot in force when the request
// arrived, and this worker's upstream pool.
struct Snapshot {
  std::shared_ptr<const config::Config> cfg;  // the config file's channels plus the store's
  std::unique_ptr<routing::Router> router;
  std::shared_ptr<const pipeline::KeyTable> keys;  // virtual keys
  std::shared_ptr<const pipeline::PriceTable> prices;
  std::shared_ptr<const pipeline::Safety> safety;  // redaction, screening, guardrail, cache settings
  // Masks every upstream key of `cfg` (config-file and store channels) in what upstreams say.
  pipeline::SecretScrubber scrubber;
  // Switches set at run time through PATCH /admin/api/settings (unset: the config file's).
  struct Switches {
    std::optional<bool> cache;
    std::optional<bool> redaction;
    std::optional<config::ScreenAction> screening;
    std::optional<bool> guardrail;
  } switches;
  bool cacheOn() const { return switches.cache.value_or(cfg->cache.enabled); }
  bool redactionOn() const { return switches.redaction.value_or(cfg->redaction.enabled) && safety->rules(); }
  config::ScreenAction screeningDefault() const { return switches.screening.value_or(safety->screenDefault()); }
  bool guardrailOn() const { return switches.guardrail.value_or(true) && safety->webhook(); }
};
// Reads the switches from the store's gateway_settings rows ("cache.enabled" -> "true", ...).
Snapshot::Switches switchesFrom(const std::map<std::string, std::string>& rows);

// Who is calling: the master key (vk == nullptr) or a virtual key of the snapshot's table.
struct Caller {
  const pipeline::VirtualKeyEntry* vk = nullptr;
};

struct RequestContext {
  std::string id;
  std::chrono::steady_clock::time_point start;
  std::string path;   // without the query
  std::string query;  // without '?'
  std::string remote;
};

// The outcome a finished request leaves for the access log and metrics.
struct RequestRecord {
  std::string channel;
  std::string key_id;
  std::string model;
  int status = 0;
  int attempts = 0;
  double ttfb_ms = -1;
  double duration_ms = 0;
  std::int64_t input_tokens = -1;
  std::int64_t output_tokens = -1;
  std::int64_t cached_tokens = 0;
  bool stream = false;
  std::string error;
  // JSON array, one object per upstream attempt: {"channel","key","status","error"}.
  std::string attempts_json = "[]";
  std::optional<std::int64_t> virtual_key_id;
  double cost_usd = 0;
  std::string request_body;   // only when store.log_bodies (capped; after redaction)
  std::string response_body;  // idem
};

// What a client asked for, as the router saw it in the path.
struct ClientCall {
  Wire wire = Wire::OpenAI;
  // OpenAI: the path under /v1 ("/chat/completions"); Anthropic: "/v1/messages" or
  // "/v1/messages/count_tokens"; Gemini: the method ("generateContent", "streamGenerateContent"...).
  std::string op;
  std::string model;  // Gemini: from the path (the body has none)
  std::string query;  // Gemini: the query to pass on (the client's key= removed)
};

// Relays req to the channels serving its model, failing over before the first byte. The
// caller's limits and budgets, and the channels' and keys' quotas, are charged on `limiter`.
// `cache`: the gateway's response cache (null: none).
boost::asio::awaitable<void> proxy(const Snapshot& snap, upstream::Pool& pool, cluster::Limiter& limiter,
                                   cache::ResponseCache* cache, const Caller& caller, http::Request& req, http::Responder& r,
                                   const RequestContext& ctx, const ClientCall& call, RequestRecord& rec);

// Masks the snapshot's upstream secrets in the bodies a finished request leaves for the request
// log (the error and attempts come from upstream text masked as it arrived). Before the record
// is queued; off the response path.
void scrubRecord(const Snapshot& snap, RequestRecord& rec);

// x-ratelimit-* headers for a decision (none for limits that are not set).
std::vector<std::pair<std::string, std::string>> rateLimitHeaders(const cluster::Decision& d);

}  // namespace sluice::gateway
