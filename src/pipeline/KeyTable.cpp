#include "pipeline/KeyTable.hpp"

#include <boost/json/parse.hpp>
#include <boost/json/value.hpp>


#include "core/JsonText.hpp"
#include "routing/Router.hpp"

namespace sluice::pipeline {

ProtectOverrides readProtectOverrides(std::string_view settingsJson) {
  ProtectOverrides out;
  boost::system::error_code ec;
  const boost::json::value st = sluice::parseJson(settingsJson, ec);
  if (ec || !st.is_object()) return out;
  const auto& o = st.as_object();
  if (const auto* v = o.if_contains("screening"); v && v->is_string()) out.screening = config::parseScreenAction(v->as_string());
  if (const auto* v = o.if_contains("cache"); v && v->is_bool()) out.cache = v->as_bool();
  if (const auto* v = o.if_contains("cache_ttl_ms"); v && v->is_int64() && v->as_int64() > 0)
    out.cache_ttl = std::chrono::milliseconds(v->as_int64());
  return out;
}


bool VirtualKeyEntry::allowsModel(std::string_view model) const {
  if (allowed_models.empty()) return true;
  for (const auto& m : allowed_models)
    if (routing::globMatch(m, model)) return true;
  return false;
}

bool VirtualKeyEntry::allowsChannel(std::string_view channel) const {
  if (allowed_channels.empty()) return true;
  for (const auto& c : allowed_channels)
    if (c == channel) return true;
  return false;
}

bool VirtualKeyEntry::allowsTool(std::string_view namespaced_tool) const {
  if (allowed_tools.empty()) return true;
  for (const auto& t : allowed_tools)
    if (routing::globMatch(t, namespaced_tool)) return true;
  return false;
}

std::vector<std::string> readAllowedTools(std::string_view settingsJson) {
  std::vector<std::string> out;
  boost::system::error_code ec;
  const boost::json::value st = sluice::parseJson(settingsJson, ec);
  if (ec || !st.is_object()) return out;
  const auto* v = st.as_object().if_contains("allowed_tools");
  if (!v || !v->is_array()) return out;
  for (const auto& t : v->get_array())
    if (t.is_string() && !t.get_string().empty()) out.emplace_back(t.get_string());
  return out;
}

KeyTable::KeyTable(const std::vector<store::VirtualKey>& keys, const std::vector<store::Team>& teams) {
  by_hash_.reserve(keys.size());
  std::unordered_map<std::int64_t, const store::Team*> team_by_id;
  for (const auto& t : teams) team_by_id.emplace(t.id, &t);
  for (const auto& k : keys) {
    auto e = std::make_shared<VirtualKeyEntry>();
    e->id = k.id;
    e->name = k.name;
    e->prefix = k.key_prefix;
    e->allowed_models = jsonStringArray(k.allowed_models);
    e->allowed_channels = jsonStringArray(k.allowed_channels);
    e->allowed_tools = readAllowedTools(k.settings);
    e->expires_at_ms = k.expires_at_ms;
    e->revoked = k.revoked_at_ms.has_value();
    {
      auto o = readProtectOverrides(k.settings);
      e->screening = o.screening;
      e->cache = o.cache;
      e->cache_ttl = o.cache_ttl;
    }
    e->subject.id = "vk:" + std::to_string(k.id);
    auto& s = e->subject.spec;
    s.rpm = k.rpm.value_or(0);
    s.tpm = k.tpm.value_or(0);
    s.max_concurrent = k.max_concurrent.value_or(0);
    s.budget_daily_usd = k.budget_daily_usd;
    s.budget_monthly_usd = k.budget_monthly_usd;
    s.budget_total_usd = k.budget_total_usd;
    if (k.team_id)
      if (const auto it = team_by_id.find(*k.team_id); it != team_by_id.end()) {
        const store::Team& t = *it->second;
        cluster::Subject ts;
        ts.id = "team:" + std::to_string(t.id);
        ts.spec.rpm = t.rpm.value_or(0);
        ts.spec.tpm = t.tpm.value_or(0);
        ts.spec.budget_daily_usd = t.budget_daily_usd;
        ts.spec.budget_monthly_usd = t.budget_monthly_usd;
        ts.spec.budget_total_usd = t.budget_total_usd;
        e->team = std::move(ts);
        e->team_name = t.name;
      }
    by_hash_.emplace(k.key_hash, std::move(e));
  }
}

const VirtualKeyEntry* KeyTable::find(const std::string& key_hash) const {
  auto it = by_hash_.find(key_hash);
  return it == by_hash_.end() ? nullptr : it->second.get();
}

}  // namespace sluice::pipeline
