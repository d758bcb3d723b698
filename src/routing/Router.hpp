// Routing: which channel and which upstream key serve a request.
//  - Router is built once per config snapshot (immutable; any thread may use it).
//  - Key and channel health (cool-downs, disables, breakers) lives in HealthRegistry, which
//    outlives snapshots so a reload keeps what was learned; all of it is atomics.
#pragma once
#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "config/Config.hpp"
#include "upstream/Client.hpp"

namespace sluice::routing {

std::int64_t nowMs();  // steady clock, milliseconds

// Recent latency and errors of a channel or key (routing.balance: latency): exponentially
// weighted moving averages, updated after each attempt. Lock-free; two attempts ending at once
// may each overwrite the other's update, which only drops a sample.
struct Ewma {
  static constexpr double kAlpha = 0.2;  // the weight of the newest sample
  std::atomic<double> ttfb_ms{-1.0};     // time to the first byte; < 0: not measured yet
  std::atomic<double> errors{0.0};       // 1 for a failed attempt, 0 for one that answered
  std::atomic<std::uint64_t> samples{0};

  void add(double first_byte_ms, bool failed);
  // What a pick costs: the average time to the first byte, made worse by recent errors; 0 for
  // one never measured, so a new channel is tried.
  double cost() const;
};

// The last kSize times to first byte of a channel, for hedge_after: auto (its p95). Lock-free;
// a sample written while another is read may be seen half-updated only as another sample.
struct TtfbWindow {
  static constexpr std::size_t kSize = 64;
  static constexpr std::size_t kMin = 20;  // fewer samples: no p95 yet
  std::array<std::atomic<float>, kSize> ms{};
  std::atomic<std::uint32_t> n{0};
  void add(double v);
  double p95() const;  // < 0 until kMin samples
};

struct KeyHealth {
  std::atomic<std::int64_t> cooldown_until_ms{0};
  std::atomic<bool> disabled{false};
  std::atomic<bool> manual{false};  // disabled by hand (admin API), not by an upstream answer
  // A subscription account's usage as its rate-limit headers last reported it (the most used
  // window, in thousandths); -1: none reported. Keys of a pool with less used go first.
  std::atomic<int> usage_permille{-1};
  std::atomic<std::uint64_t> successes{0};
  std::atomic<std::uint64_t> failures{0};
  Ewma latency;
  mutable std::mutex mu;  // guards reason only (rare writes)
  std::string reason;

  bool available(std::int64_t now) const {
    return !disabled.load(std::memory_order_relaxed) && cooldown_until_ms.load(std::memory_order_relaxed) <= now;
  }
  void coolDown(std::int64_t until_ms, std::string why);
  void disable(std::string why);
  void enable();  // clears a disable and any cool-down
  std::string why() const;
};

// Model discovery: what a channel's provider lists, for a channel whose `models` hold globs.
struct DiscoveredModels {
  std::vector<std::string> models;  // the listed models its globs match, sorted; the last good list
  std::int64_t refreshed_unix_ms = 0;  // when the last good refresh was (Unix ms); 0: none yet
  std::int64_t attempted_ms = 0;       // the last try (nowMs(), steady)
  std::string error;                   // why the last try failed; empty when it worked
  std::string source;                  // what was asked (type, endpoint, models): a change asks again
};

struct ChannelHealth {
  // Model discovery's result, written by the discovery loop, read by model listings.
  DiscoveredModels discovered() const {
    std::lock_guard lock(discovery_mu_);
    return discovery_;
  }
  // Whether the discovery loop should ask now: never asked for `source` (what it asks: a change
  // starts over), or the last try is `every_ms` old. Marks the try when it says yes.
  bool discoveryDue(const std::string& source, std::int64_t now_ms, std::int64_t every_ms);
  // The try's outcome: the list it read (true when it differs from the last), or why it failed
  // (the last good list is kept).
  bool discoverySucceeded(std::vector<std::string> models, std::int64_t unix_ms);
  void discoveryFailed(std::string why);

  std::atomic<int> consecutive_failures{0};
  std::atomic<std::int64_t> open_until_ms{0};  // breaker open while now < this
  std::atomic<bool> probing{false};            // a half-open probe is in flight
  std::atomic<std::uint32_t> next_key{0};      // round-robin cursor
  Ewma latency;
  TtfbWindow recent;

 private:
  mutable std::mutex discovery_mu_;
  DiscoveredModels discovery_;
};

class HealthRegistry {
 public:
  std::shared_ptr<ChannelHealth> channel(const std::string& name);
  std::shared_ptr<KeyHealth> key(const std::string& channel, const std::string& secret);

 private:
  std::mutex mu_;
  std::unordered_map<std::string, std::shared_ptr<ChannelHealth>> channels_;
  std::unordered_map<std::string, std::shared_ptr<KeyHealth>> keys_;
};

struct UpstreamKey {
  std::string secret;
  std::string id;  // masked, safe to log: "sk-...ab12#0"
  std::shared_ptr<KeyHealth> health;
  // Stable handle for the admin API, metrics and shared state: "k" + 12 hex digits of
  // SHA-256(channel name, secret). Reveals nothing usable of the secret.
  std::string ref;
  std::int64_t store_id = 0;  // keys added through the admin API
};

std::string keyRef(std::string_view channel, std::string_view secret);

struct Channel {
  config::ChannelConfig cfg;
  upstream::Endpoint endpoint;
  std::vector<UpstreamKey> keys;
  std::shared_ptr<ChannelHealth> health;
  std::size_t index = 0;

  bool servesModel(std::string_view model) const;
  // Some of `models` are globs: the provider's list tells which names they stand for.
  bool discovers() const;
  // The same with `valid` = routing::isModelName(model), for a caller asking every channel.
  bool servesModel(std::string_view model, bool valid) const;
  // The name sent upstream for a model this channel serves (its model_map, else the same).
  std::string upstreamModel(std::string_view model) const;
};

// Glob match with * and ?.
bool globMatch(std::string_view pattern, std::string_view s);
// A pattern for globMatch, not a plain name: it holds * or ?.
inline bool isGlob(std::string_view s) { return s.find_first_of("*?") != std::string_view::npos; }
std::string maskSecret(std::string_view secret);

// One request's walk over candidates: an iterator plus a tried set (failover habit).
class Attempts;

// What one attempt came to, for the key's and channel's health and for what is tried next.
enum class Outcome {
  Success,
  ChannelFailure,  // failover: connect error, timeout, 5xx: another channel first
  KeyCooldown,     // cooldown: the key rests (429); another key next
  KeyDisable,      // disable: the key is switched off (401, 403); another key next
  KeyRetry,        // retry: another key of the same channel; the key's health is untouched
  Fallback,        // the model cannot serve this request: its fallback models next
  ClientError,     // return: the upstream refused the request itself; the client gets the answer
};

// What an upstream error answer leads to: routing.rules first (first match wins), then the
// built-in rules, which are today's behaviour: 429 cooldown; 401 and 403 disable; 408 and 5xx
// failover; any other 4xx return. Immutable; any thread may use it.
struct ErrorVerdict {
  Outcome outcome = Outcome::ChannelFailure;
  std::int64_t cooldown_ms = 0;  // a cooldown rule's `for`; 0: the provider's headers decide
  int rule = -1;                 // index of the routing.rules entry that matched; -1: built-in
};

// A rate-limit window's reset as OpenAI writes it ("1s", "6m0s", "1h2m3.5s", "20ms"), in ms;
// 0 when it is not one or is over a day.
std::int64_t resetDurationMs(std::string_view v);

class ErrorRules {
 public:
  explicit ErrorRules(const std::vector<config::ErrorRule>& rules);
  ~ErrorRules();
  ErrorRules(const ErrorRules&) = delete;
  ErrorRules& operator=(const ErrorRules&) = delete;
  // `status` is 400 or more; `body` the (bounded) error body, or an in-band error event's JSON.
  ErrorVerdict classify(int status, std::string_view body) const;

 private:
  struct Compiled;
  std::vector<Compiled> rules_;
};

class Router {
 public:
  Router(std::shared_ptr<const config::Config> cfg, HealthRegistry& health);

  const config::Config& config() const { return *cfg_; }
  const std::vector<std::unique_ptr<Channel>>& channels() const { return channels_; }
  // Channels serving `model` in try-order: priority ascending, weighted shuffle within a
  // priority (routing.balance: latency: of the shuffle's first two, the one with the lower
  // Ewma::cost goes first: power of two choices). An alias (routing.aliases) is resolved first; a "CHANNEL/MODEL" name pins the
  // channel. `routed_model` gets the model name the channels matched (alias and pin resolved);
  // Channel::upstreamModel maps it to what each channel sends upstream.
  std::vector<const Channel*> candidates(std::string_view model, std::string& routed_model) const;
  // Every model name a client can ask for (the channels' exact names, and CHANNEL/MODEL).
  std::vector<std::string> modelNames() const;
  const Channel* channelByName(std::string_view name) const;
  const ErrorRules& errorRules() const { return *rules_; }
  // The fallback models of a request for `requested` (as the client named it) routed as
  // `routed` (an alias resolved): routing.fallbacks of the first of the two it lists; empty
  // when it lists neither.
  const std::vector<std::string>& fallbacks(std::string_view requested, std::string_view routed) const;

  // Health feedback after an attempt. `first_byte_ms`: from the attempt's start to the first
  // byte of its answer (a stream's first meaningful event), < 0 when none came.
  void report(const struct Pick& p, Outcome o, int status, std::int64_t retry_after_ms, const std::string& why,
              double first_byte_ms = -1) const;

 private:
  std::shared_ptr<const config::Config> cfg_;
  std::vector<std::unique_ptr<Channel>> channels_;
  std::unique_ptr<const ErrorRules> rules_;
};

struct Pick {
  const Channel* channel = nullptr;
  const UpstreamKey* key = nullptr;
  bool probe = false;  // this attempt is the half-open probe of an open breaker
};

class Attempts {
 public:
  Attempts(const Router& router, std::vector<const Channel*> candidates);
  // Next (channel, key) to try, or channel == nullptr when nothing is left.
  // `retry_after_ms` is set to the soonest cool-down end when keys exist but all cool down.
  Pick next(std::int64_t& retry_after_ms);
  void failed(const Pick& p, Outcome o);
  // Leaves p's channel out for the rest of this request (it is at its own rate limit); a
  // probe slot p held is given back.
  void skipChannel(const Pick& p);

 private:
  const Router& router_;
  std::vector<const Channel*> candidates_;
  std::vector<char> channel_excluded_;
  std::vector<std::pair<const Channel*, const UpstreamKey*>> tried_;
  bool anyChannelLeft() const;
};

}  // namespace sluice::routing
