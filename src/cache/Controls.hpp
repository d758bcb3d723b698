// Controls: whether one request reads the response cache and whether its answer is written,
// from the request's own headers and the settings of the caller's key, the channel and the
// gateway. Pure functions; thread-safe.
//
// Request headers (case-insensitive names and directives; unknown directives ignored):
//   Cache-Control: no-cache   do not answer from the cache, store the fresh answer
//   Cache-Control: no-store   neither read nor write
//   x-sluice-cache: refresh   like no-cache (replace the stored answer)
//   x-sluice-cache: bypass    like no-store ("off" and "no-store" are accepted too)
// Settings: the gateway's `cache.enabled` and TTL, a virtual key's and a channel's optional
// overrides. An explicit "off" on the key or the channel wins over any "on" (either may hold
// answers that must not be shared: a key with sensitive traffic, a channel whose model is
// non-deterministic on purpose); otherwise an explicit "on" enables it even when the gateway
// default is off. The TTL is the shortest of those set.
#pragma once
#include <chrono>
#include <optional>
#include <string_view>

namespace sluice::cache {

struct RequestControls {
  bool no_read = false;   // no-cache, no-store, refresh, bypass
  bool no_write = false;  // no-store, bypass
};

// `cache_control` and `x_sluice_cache` are the raw header values ("" when absent). Several
// Cache-Control headers should be joined with ", " before the call.
RequestControls parseRequestControls(std::string_view cache_control, std::string_view x_sluice_cache);

struct CacheSettings {
  std::optional<bool> enabled;
  std::optional<std::chrono::milliseconds> ttl;
};

struct CacheDecision {
  bool read = false;
  bool write = false;
  std::chrono::milliseconds ttl{0};
  std::string_view why;  // a short reason when neither (for the log): "disabled", "no-store", ...
};

inline constexpr std::chrono::milliseconds kDefaultTtl = std::chrono::hours(1);

// `channel` is the settings of the channel that would serve the request (the first candidate)
// for the read decision, and of the one that did for the write.
CacheDecision decide(const RequestControls& req, const CacheSettings& gateway, const CacheSettings& key,
                     const CacheSettings& channel);

}  // namespace sluice::cache
