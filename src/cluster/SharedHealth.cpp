#include "cluster/SharedHealth.hpp"

#include <spdlog/spdlog.h>

#include <chrono>
#include <cstdlib>

#include "cluster/Redis.hpp"

namespace sluice::cluster {

namespace {

// Long enough for a loaded Redis on the LAN, short enough that the control thread never stalls.
constexpr std::chrono::milliseconds kTimeout{500};
const std::string kPrefix = "sluice:kh:";

// Replaces the whole state in one step so readers never see half of an old and a new one.
const std::string kPutLua = R"lua(
redis.call('DEL', KEYS[1])
redis.call('HSET', KEYS[1], 'cooldown_until', ARGV[1], 'disabled', ARGV[2], 'manual', ARGV[3], 'reason', ARGV[4])
if ARGV[2] ~= '1' then redis.call('PEXPIREAT', KEYS[1], ARGV[1]) end
return 1
)lua";

const std::string kGetLua = R"lua(
local out = {}
for i, k in ipairs(KEYS) do out[i] = redis.call('HGETALL', k) end
return out
)lua";

const RedisScript& putScript() {
  static const RedisScript s(kPutLua);
  return s;
}
const RedisScript& getScript() {
  static const RedisScript s(kGetLua);
  return s;
}

bool succeeded(const RedisResult& r, const char* what, const std::string& key_ref) {
  if (r.ok() && !r.reply.isError()) return true;
  spdlog::warn("shared key health: {} {}: {}", what, key_ref, r.ok() ? r.reply.str : r.error);
  return false;
}

}  // namespace

SharedHealth::SharedHealth(std::string redis_url) {
  if (!redis_url.empty()) client_ = std::make_unique<RedisSyncClient>(parseRedisUrl(redis_url), kTimeout);
}

SharedHealth::~SharedHealth() = default;

bool SharedHealth::put(const std::string& key_ref, const SharedKeyState& s) {
  if (!client_) return false;
  auto r =
      client_->eval(putScript(), {kPrefix + key_ref},
                    {std::to_string(s.cooldown_until_unix_ms), s.disabled ? "1" : "0", s.manual ? "1" : "0", s.reason});
  return succeeded(r, "publishing", key_ref);
}

bool SharedHealth::clear(const std::string& key_ref) {
  if (!client_) return false;
  auto r = client_->command({"DEL", kPrefix + key_ref});
  return succeeded(r, "clearing", key_ref);
}

std::optional<std::map<std::string, SharedKeyState>> SharedHealth::get(const std::vector<std::string>& key_refs) {
  if (!client_) return std::nullopt;
  std::map<std::string, SharedKeyState> out;
  if (key_refs.empty()) return out;
  std::vector<std::string> keys;
  keys.reserve(key_refs.size());
  for (const auto& ref : key_refs) keys.push_back(kPrefix + ref);
  auto r = client_->eval(getScript(), keys, {});
  if (!succeeded(r, "reading", std::to_string(key_refs.size()) + " keys")) return std::nullopt;
  if (r.reply.type != RedisReply::Type::Array || r.reply.elements.size() != key_refs.size()) {
    spdlog::warn("shared key health: unexpected reply reading {} keys", key_refs.size());
    return std::nullopt;
  }
  for (std::size_t i = 0; i < key_refs.size(); ++i) {
    const auto& fields = r.reply.elements[i].elements;
    if (fields.empty()) continue;  // nothing published, or the cool-down has ended
    SharedKeyState s;
    for (std::size_t f = 0; f + 1 < fields.size(); f += 2) {
      const auto& name = fields[f].str;
      const auto& value = fields[f + 1].str;
      if (name == "cooldown_until")
        s.cooldown_until_unix_ms = std::strtoll(value.c_str(), nullptr, 10);
      else if (name == "disabled")
        s.disabled = value == "1";
      else if (name == "manual")
        s.manual = value == "1";
      else if (name == "reason")
        s.reason = value;
    }
    out.emplace(key_refs[i], std::move(s));
  }
  return out;
}

}  // namespace sluice::cluster
