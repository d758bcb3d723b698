// KeyTable: the virtual keys as the request path sees them, looked up by the SHA-256 of the
// presented secret. Built from the store by the gateway's refresher (about once a second, and
// at once after an admin write) and swapped in whole: immutable, lock-free to read.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "cluster/Limiter.hpp"
#include "config/Config.hpp"
#include "store/Store.hpp"

namespace sluice::pipeline {

// The protect-stage overrides a virtual key or a store channel keeps in its settings JSON
// ("screening": off|log|warn|block, "cache": bool, "cache_ttl_ms": > 0); anything else is unset.
struct ProtectOverrides {
  std::optional<config::ScreenAction> screening;
  std::optional<bool> cache;
  std::optional<std::chrono::milliseconds> cache_ttl;
};
ProtectOverrides readProtectOverrides(std::string_view settingsJson);
// The "allowed_tools" array of a key's settings JSON (empty when absent or not an array).
std::vector<std::string> readAllowedTools(std::string_view settingsJson);

struct VirtualKeyEntry {
  std::int64_t id = 0;
  std::string name;
  std::string prefix;                         // shown in messages ("sk-slc-AbCd")
  std::vector<std::string> allowed_models;    // names or globs; empty: every model
  std::vector<std::string> allowed_channels;  // channel names; empty: every channel
  // MCP tools by namespaced name (SERVER__TOOL) or glob; empty: every tool. Kept in the key's
  // settings JSON ("allowed_tools").
  std::vector<std::string> allowed_tools;
  std::optional<std::int64_t> expires_at_ms;  // Unix ms
  bool revoked = false;
  cluster::Subject subject;  // "vk:ID" with the key's limits and budgets
  // The key's team: "team:ID" with the team's limits and budgets, which bound the sum of its
  // keys; nullopt for a key without a team.
  std::optional<cluster::Subject> team;
  std::string team_name;
  // Protect-stage overrides (unset: the channel's, then the gateway's).
  std::optional<config::ScreenAction> screening;
  std::optional<bool> cache;
  std::optional<std::chrono::milliseconds> cache_ttl;

  bool expired(std::int64_t now_unix_ms) const { return expires_at_ms && *expires_at_ms <= now_unix_ms; }
  bool allowsModel(std::string_view model) const;
  bool allowsChannel(std::string_view channel) const;
  bool allowsTool(std::string_view namespaced_tool) const;
};

class KeyTable {
 public:
  KeyTable() = default;
  explicit KeyTable(const std::vector<store::VirtualKey>& keys, const std::vector<store::Team>& teams = {});
  // By hashVirtualKeySecret() of the secret; nullptr: no such key (revoked and expired keys
  // are found, so the caller can say which).
  const VirtualKeyEntry* find(const std::string& key_hash) const;
  std::size_t size() const { return by_hash_.size(); }

 private:
  std::unordered_map<std::string, std::shared_ptr<const VirtualKeyEntry>> by_hash_;
};

}  // namespace sluice::pipeline
