// Probe: is an upstream key usable right now? One cheap authenticated request (the provider's
// model list) on the channel's endpoint, answered by status. Used by the admin API's
// validation probe and by the periodic recovery checks of cooled-down and disabled keys.
#pragma once
#include <boost/asio/awaitable.hpp>
#include <chrono>
#include <string>
#include <string_view>
#include <vector>

#include "pipeline/SecretScrubber.hpp"
#include "routing/Router.hpp"
#include "upstream/Client.hpp"

namespace sluice::gateway {

struct ProbeResult {
  bool ok = false;  // 2xx
  int status = 0;   // 0: no HTTP answer
  double latency_ms = 0;
  std::string message;  // the provider's error message, or what failed
  bool key_rejected() const { return status == 401 || status == 403; }
};

// `scrubber` masks the upstream secrets in the provider's message (it may quote the key).
boost::asio::awaitable<ProbeResult> probeKey(upstream::Pool& pool, const routing::Channel& channel,
                                             const routing::UpstreamKey& key, std::chrono::milliseconds timeout,
                                             const pipeline::SecretScrubber& scrubber);

// Model discovery: the provider's model list, read with `key` (OpenAI `data[].id`, Anthropic
// `data[].id`, Gemini `models[].name` less "models/"), kept to the names that follow the
// model-name rule and that the channel's globs match, sorted. Bounded (4 MiB, 10,000 names).
struct ModelListing {
  bool ok = false;
  std::vector<std::string> models;
  std::string message;  // why it failed
};
boost::asio::awaitable<ModelListing> listModels(upstream::Pool& pool, const routing::Channel& channel,
                                                const routing::UpstreamKey& key, std::chrono::milliseconds timeout,
                                                const pipeline::SecretScrubber& scrubber);

// A probe's verdict on a key: a working key that was cooling down or disabled by an upstream
// answer is back; one the provider refuses is disabled. A key disabled by hand stays so.
void applyProbe(const routing::Channel& ch, const routing::UpstreamKey& k, const ProbeResult& pr);

}  // namespace sluice::gateway
