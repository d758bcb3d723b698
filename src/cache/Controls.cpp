#include "cache/Controls.hpp"
#include "core/Ascii.hpp"

#include <algorithm>
#include <cctype>

namespace sluice::cache {

namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

}  // namespace

RequestControls parseRequestControls(std::string_view cache_control, std::string_view x_sluice_cache) {
  RequestControls c;
  while (!cache_control.empty()) {
    auto comma = cache_control.find(',');
    auto item = trim(cache_control.substr(0, comma));
    cache_control = comma == std::string_view::npos ? std::string_view() : cache_control.substr(comma + 1);
    auto name = trim(item.substr(0, item.find('=')));  // no-cache="field" is still no-cache
    if (sluice::iequals(name, "no-cache")) {
      c.no_read = true;
    } else if (sluice::iequals(name, "no-store")) {
      c.no_read = c.no_write = true;
    }
  }
  auto x = trim(x_sluice_cache);
  if (sluice::iequals(x, "refresh")) {
    c.no_read = true;
  } else if (sluice::iequals(x, "bypass") || sluice::iequals(x, "off") || sluice::iequals(x, "no-store")) {
    c.no_read = c.no_write = true;
  }
  return c;
}

CacheDecision decide(const RequestControls& req, const CacheSettings& gateway, const CacheSettings& key,
                     const CacheSettings& channel) {
  CacheDecision d;
  bool enabled;
  if (key.enabled == false || channel.enabled == false) {
    enabled = false;
  } else if (key.enabled == true || channel.enabled == true) {
    enabled = true;
  } else {
    enabled = gateway.enabled.value_or(false);
  }
  if (!enabled) {
    d.why = "disabled";
    return d;
  }
  std::optional<std::chrono::milliseconds> ttl;
  for (const auto* s : {&gateway, &key, &channel})
    if (s->ttl && (!ttl || *s->ttl < *ttl)) ttl = s->ttl;
  d.ttl = ttl.value_or(kDefaultTtl);
  if (d.ttl <= std::chrono::milliseconds(0)) {
    d.why = "ttl is zero";
    return d;
  }
  d.read = !req.no_read;
  d.write = !req.no_write;
  if (!d.read && !d.write) d.why = "no-store";
  else if (!d.read) d.why = "refresh";
  return d;
}

}  // namespace sluice::cache
