// SharedHealth: upstream key health (cool-downs, disables) published in Redis so every instance
// skips a key one of them found bad. Without a Redis URL nothing is shared and every call is a
// no-op. Blocking calls with a short timeout, for the control thread; thread-safe.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace sluice::cluster {

class RedisSyncClient;

struct SharedKeyState {
  std::int64_t cooldown_until_unix_ms = 0;
  bool disabled = false;
  bool manual = false;  // set by an operator, not by the health checks
  std::string reason;
};

class SharedHealth {
 public:
  // "" = nothing shared. A bad URL throws std::invalid_argument.
  explicit SharedHealth(std::string redis_url);
  ~SharedHealth();
  SharedHealth(const SharedHealth&) = delete;
  SharedHealth& operator=(const SharedHealth&) = delete;

  bool enabled() const { return client_ != nullptr; }
  // Publishes a key's state under "sluice:kh:REF"; it expires when the cool-down ends (a
  // disabled key's never does). False when Redis is unreachable.
  bool put(const std::string& key_ref, const SharedKeyState& s);
  // The key is healthy again everywhere. False when Redis is unreachable.
  bool clear(const std::string& key_ref);
  // The states published for these keys (keys without one are healthy and absent from the map);
  // nullopt when Redis is unreachable or not configured.
  std::optional<std::map<std::string, SharedKeyState>> get(const std::vector<std::string>& key_refs);

 private:
  std::unique_ptr<RedisSyncClient> client_;
};

}  // namespace sluice::cluster
