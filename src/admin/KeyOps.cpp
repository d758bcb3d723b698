#include "admin/KeyOps.hpp"

#include "config/Config.hpp"
#include "core/JsonText.hpp"

#include <fmt/format.h>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

#include <chrono>

#include "admin/Fields.hpp"
#include "core/Clock.hpp"
#include "cluster/Limiter.hpp"
#include "pipeline/VirtualKeySecret.hpp"

namespace sluice::admin {
namespace json = boost::json;

namespace {

constexpr std::int64_t kDayMs = 86'400'000;

std::int64_t floorDiv(std::int64_t a, std::int64_t b) {
  return a / b - (a % b != 0 && (a < 0) != (b < 0));
}

// Reads exactly `n` digits at `pos`.
bool digits(std::string_view s, std::size_t& pos, std::size_t n, unsigned& out) {
  if (pos + n > s.size()) return false;
  out = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const char c = s[pos + i];
    if (c < '0' || c > '9') return false;
    out = out * 10 + static_cast<unsigned>(c - '0');
  }
  pos += n;
  return true;
}

bool expect(std::string_view s, std::size_t& pos, char c) {
  if (pos >= s.size() || s[pos] != c) return false;
  ++pos;
  return true;
}

std::int64_t expiryField(const json::value& v, std::string_view param, std::int64_t now_ms) {
  std::int64_t at = 0;
  if (param == "expires_at") {
    std::optional<std::int64_t> parsed;
    if (v.is_string()) parsed = parseRfc3339(v.get_string());
    if (!parsed)
      throw FieldError("expires_at",
                       "expires_at must be an RFC 3339 time such as \"2026-12-31T00:00:00Z\", or null "
                       "for a key that does not expire; got " +
                           describeJson(v));
    at = *parsed;
  } else {
    at = integerField(v, param, 0, 253'402'300'799'999);  // up to 9999-12-31
  }
  if (at <= now_ms)
    throw FieldError(std::string(param), fmt::format("{} is in the past ({}); give a future time, or null for a key "
                                                     "that does not expire",
                                                     param, formatRfc3339(at)));
  return at;
}

}  // namespace

void applyKeyFields(store::VirtualKey& key, const json::object& body, bool creating, std::int64_t now_ms) {
  rejectUnknownFields(
      body,
      {"name", "allowed_models", "allowed_channels", "rpm", "tpm", "max_concurrent", "budget_daily_usd",
       "budget_monthly_usd", "budget_total_usd", "expires_at_ms", "expires_at", "metadata", "screening", "cache",
       "cache_ttl_ms", "allowed_tools", "team_id"},
      {"id", "key_prefix", "key_hash", "secret", "status", "spend", "revoked_at_ms", "created_at_ms", "updated_at_ms"});
  if (const auto* v = body.if_contains("name")) {
    key.name = textField(*v, "name", 1, kMaxKeyName);
  } else if (creating) {
    throw FieldError("name", "name is required: a label of 1 to 128 characters saying who or what uses the key");
  }
  if (const auto* v = body.if_contains("allowed_models"))
    key.allowed_models = nameListField(*v, "allowed_models", true);
  if (const auto* v = body.if_contains("allowed_channels"))
    key.allowed_channels = nameListField(*v, "allowed_channels", true);
  // The team's id (the admin API turns a team name into it first); null takes the key out.
  if (const auto* v = body.if_contains("team_id"))
    key.team_id = v->is_null() ? std::nullopt : std::optional(integerField(*v, "team_id", 1, INT64_MAX));
  if (const auto* v = body.if_contains("rpm")) key.rpm = limitField(*v, "rpm");
  if (const auto* v = body.if_contains("tpm")) key.tpm = limitField(*v, "tpm");
  if (const auto* v = body.if_contains("max_concurrent")) key.max_concurrent = limitField(*v, "max_concurrent");
  if (const auto* v = body.if_contains("budget_daily_usd")) key.budget_daily_usd = budgetField(*v, "budget_daily_usd");
  if (const auto* v = body.if_contains("budget_monthly_usd"))
    key.budget_monthly_usd = budgetField(*v, "budget_monthly_usd");
  if (const auto* v = body.if_contains("budget_total_usd")) key.budget_total_usd = budgetField(*v, "budget_total_usd");
  const auto* at = body.if_contains("expires_at");
  const auto* at_ms = body.if_contains("expires_at_ms");
  if (at && at_ms) throw FieldError("expires_at", "give expires_at or expires_at_ms, not both");
  if (const auto* v = at ? at : at_ms) {
    const std::string_view param = at ? "expires_at" : "expires_at_ms";
    key.expires_at_ms = v->is_null() ? std::nullopt : std::optional(expiryField(*v, param, now_ms));
  }
  if (const auto* v = body.if_contains("metadata")) {
    if (!v->is_object())
      throw FieldError("metadata", "metadata must be a JSON object of your own annotations; got " + describeJson(*v));
    std::string text = json::serialize(*v);
    if (text.size() > kMaxMetadataBytes)
      throw FieldError("metadata",
                       fmt::format("metadata is {} bytes; keep it under {} bytes", text.size(), kMaxMetadataBytes));
    key.metadata = std::move(text);
  }
  // Protect-stage overrides, kept together in the key's settings object; null clears one.
  boost::system::error_code ec;
  json::value parsedSettings = sluice::parseJson(key.settings, ec);
  json::object settings = !ec && parsedSettings.is_object() ? parsedSettings.as_object() : json::object{};
  bool settingsChanged = applyProtectOverrides(settings, body, "the channel's and the gateway's");
  // MCP tools the key may list and call (namespaced names or globs); null or [] allows every tool.
  if (const auto* v = body.if_contains("allowed_tools")) {
    settingsChanged = true;
    if (v->is_null()) {
      settings.erase("allowed_tools");
    } else {
      json::value tools = sluice::parseJson(nameListField(*v, "allowed_tools", true), ec);
      if (tools.is_array() && !tools.get_array().empty()) {
        settings["allowed_tools"] = std::move(tools);
      } else {
        settings.erase("allowed_tools");
      }
    }
  }
  if (settingsChanged) key.settings = json::serialize(settings);
}

std::string issueKeySecret(store::VirtualKey& key) {
  std::string secret = pipeline::generateVirtualKeySecret();
  key.key_hash = pipeline::hashVirtualKeySecret(secret);
  key.key_prefix = pipeline::virtualKeyPrefix(secret);
  return secret;
}

KeyStatus keyStatus(const store::VirtualKey& key, std::int64_t now_ms) {
  if (key.revoked_at_ms) return KeyStatus::Revoked;
  if (key.expires_at_ms && *key.expires_at_ms <= now_ms) return KeyStatus::Expired;
  return KeyStatus::Active;
}

const char* keyStatusName(KeyStatus status) {
  switch (status) {
    case KeyStatus::Active:
      return "active";
    case KeyStatus::Revoked:
      return "revoked";
    case KeyStatus::Expired:
      return "expired";
  }
  return "active";
}

namespace {
json::value settingOf(const std::string& settings, std::string_view name) {
  boost::system::error_code ec;
  json::value v = sluice::parseJson(settings, ec);
  if (ec || !v.is_object()) return nullptr;
  const auto* m = v.as_object().if_contains(name);
  return m ? *m : json::value(nullptr);
}
}  // namespace

json::object keyJson(const store::VirtualKey& key, const store::KeySpend& spend, std::int64_t now_ms) {
  auto opt = [](const auto& o) { return o ? json::value(*o) : json::value(nullptr); };
  // The store checks these columns are valid JSON; a value edited by hand into another shape
  // is shown as it is rather than failing the whole listing.
  auto parsed = [](const std::string& text, const json::value& fallback) {
    boost::system::error_code ec;
    json::value v = sluice::parseJson(text, ec);
    return ec ? fallback : v;
  };
  return json::object{
      {"id", key.id},
      {"name", key.name},
      {"key_prefix", key.key_prefix},
      {"allowed_models", parsed(key.allowed_models, json::array{})},
      {"allowed_channels", parsed(key.allowed_channels, json::array{})},
      {"rpm", opt(key.rpm)},
      {"tpm", opt(key.tpm)},
      {"max_concurrent", opt(key.max_concurrent)},
      {"budget_daily_usd", opt(key.budget_daily_usd)},
      {"budget_monthly_usd", opt(key.budget_monthly_usd)},
      {"budget_total_usd", opt(key.budget_total_usd)},
      {"expires_at_ms", opt(key.expires_at_ms)},
      {"revoked_at_ms", opt(key.revoked_at_ms)},
      {"metadata", parsed(key.metadata, json::object{})},
      {"screening", settingOf(key.settings, "screening")},
      {"cache", settingOf(key.settings, "cache")},
      {"cache_ttl_ms", settingOf(key.settings, "cache_ttl_ms")},
      {"allowed_tools",
       [&] {
         json::value t = settingOf(key.settings, "allowed_tools");
         return t.is_array() ? t : json::value(json::array{});
       }()},
      {"team_id", opt(key.team_id)},
      {"status", keyStatusName(keyStatus(key, now_ms))},
      {"created_at_ms", key.created_at_ms},
      {"updated_at_ms", key.updated_at_ms},
      {"spend",
       json::object{{"day_usd", spend.day_usd}, {"month_usd", spend.month_usd}, {"total_usd", spend.total_usd}}},
  };
}

json::object keyJson(const store::VirtualKey& key, const store::KeySpend& spend, const store::KeyRequests& requests,
                     std::int64_t now_ms) {
  json::object o = keyJson(key, spend, now_ms);
  o["requests"] = json::object{{"day", requests.day}, {"month", requests.month}, {"total", requests.total}};
  return o;
}

store::KeyRequests requestsOf(store::Store& store, std::int64_t key_id, std::int64_t now_ms) {
  const auto all = store.requestsByKey(utcDayStartMs(now_ms), utcMonthStartMs(now_ms));
  const auto it = all.find(key_id);
  return it == all.end() ? store::KeyRequests{} : it->second;
}

store::KeySpend spendOf(store::Store& store, std::int64_t key_id, std::int64_t now_ms) {
  const auto all = store.spendByKey(utcDayStartMs(now_ms), utcMonthStartMs(now_ms));
  const auto it = all.find(key_id);
  return it == all.end() ? store::KeySpend{} : it->second;
}

std::int64_t utcDayStartMs(std::int64_t unix_ms) {
  return cluster::dayStartMs(cluster::dayIndex(unix_ms));
}

std::int64_t utcMonthStartMs(std::int64_t unix_ms) {
  return cluster::monthStartMs(cluster::monthIndex(unix_ms));
}

std::optional<std::int64_t> parseRfc3339(std::string_view s) {
  std::size_t pos = 0;
  unsigned y = 0, mo = 0, d = 0, h = 0, mi = 0, sec = 0;
  if (!digits(s, pos, 4, y) || !expect(s, pos, '-') || !digits(s, pos, 2, mo) || !expect(s, pos, '-') ||
      !digits(s, pos, 2, d))
    return std::nullopt;
  const std::chrono::year_month_day date{std::chrono::year(static_cast<int>(y)), std::chrono::month(mo),
                                         std::chrono::day(d)};
  if (!date.ok()) return std::nullopt;
  std::int64_t ms = std::chrono::sys_days(date).time_since_epoch().count() * kDayMs;
  if (pos == s.size()) return ms;  // a full-date alone: midnight UTC
  if (s[pos] != 'T' && s[pos] != 't' && s[pos] != ' ') return std::nullopt;
  ++pos;
  if (!digits(s, pos, 2, h) || !expect(s, pos, ':') || !digits(s, pos, 2, mi) || !expect(s, pos, ':') ||
      !digits(s, pos, 2, sec))
    return std::nullopt;
  if (h > 23 || mi > 59 || sec > 60) return std::nullopt;
  ms += (h * 3600LL + mi * 60LL + std::min(sec, 59u)) * 1000;  // a leap second counts as :59
  if (pos < s.size() && s[pos] == '.') {
    ++pos;
    std::size_t n = 0;
    std::int64_t frac = 0;
    while (pos < s.size() && s[pos] >= '0' && s[pos] <= '9') {
      if (n < 3) frac = frac * 10 + (s[pos] - '0');
      ++n;
      ++pos;
    }
    if (n == 0) return std::nullopt;
    for (std::size_t i = n; i < 3; ++i) frac *= 10;
    ms += frac;
  }
  if (pos < s.size() && (s[pos] == 'Z' || s[pos] == 'z')) {
    ++pos;
  } else if (pos < s.size() && (s[pos] == '+' || s[pos] == '-')) {
    const int sign = s[pos] == '+' ? 1 : -1;
    ++pos;
    unsigned oh = 0, om = 0;
    if (!digits(s, pos, 2, oh) || !expect(s, pos, ':') || !digits(s, pos, 2, om) || oh > 23 || om > 59)
      return std::nullopt;
    ms -= sign * (oh * 3600LL + om * 60LL) * 1000;
  } else {
    return std::nullopt;  // a time without an offset is ambiguous
  }
  if (pos != s.size()) return std::nullopt;
  return ms;
}

std::string formatRfc3339(std::int64_t unix_ms) {
  const std::int64_t days = floorDiv(unix_ms, kDayMs);
  const std::int64_t secs = floorDiv(unix_ms - days * kDayMs, 1000);
  const std::chrono::year_month_day c{std::chrono::sys_days(std::chrono::days(days))};
  return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}Z", static_cast<int>(c.year()), static_cast<unsigned>(c.month()),
                     static_cast<unsigned>(c.day()), secs / 3600, secs / 60 % 60, secs % 60);
}

std::int64_t unixNowMs() { return sluice::unixNowMs(); }

}  // namespace sluice::admin
