// KeyOps: virtual keys as the admin API and `sluice keys` see them: which fields a client may
// write and how they are checked, the JSON shape a key is shown in, and its status.
// Shared by both so they accept and refuse exactly the same things. Pure; thread-safe.
#pragma once
#include <boost/json/object.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "store/Store.hpp"

namespace sluice::admin {

inline constexpr std::size_t kMaxKeyName = 128;
inline constexpr std::size_t kMaxMetadataBytes = 16 * 1024;

// Checks the writable fields present in `body` and applies them to `key`; a field that is
// absent stays as it is. When creating, name is required. Expiry must lie after `now_ms`.
// Throws FieldError (admin/Fields.hpp) naming the first bad field.
// Writable: name, allowed_models, allowed_channels, rpm, tpm, max_concurrent, budget_daily_usd,
// budget_monthly_usd, budget_total_usd, expires_at_ms | expires_at (RFC 3339), metadata, the protect
// overrides and allowed_tools (MCP; kept in the settings JSON), team_id (an id or null).
void applyKeyFields(store::VirtualKey& key, const boost::json::object& body, bool creating, std::int64_t now_ms);

// Gives the key a fresh secret (sets key_hash and key_prefix) and returns it: the only moment
// the secret exists outside the client.
std::string issueKeySecret(store::VirtualKey& key);

enum class KeyStatus { Active, Revoked, Expired };
KeyStatus keyStatus(const store::VirtualKey& key, std::int64_t now_ms);
const char* keyStatusName(KeyStatus status);  // "active" | "revoked" | "expired"

// The KEY object of the API (and `sluice keys --json`); never includes the hash.
boost::json::object keyJson(const store::VirtualKey& key, const store::KeySpend& spend, std::int64_t now_ms);
// The same with the key's usage so far: adds "requests": {"day", "month", "total"}.
boost::json::object keyJson(const store::VirtualKey& key, const store::KeySpend& spend,
                            const store::KeyRequests& requests, std::int64_t now_ms);

// The spend of one key over the current UTC day and month, as Store::spendByKey reports it.
store::KeySpend spendOf(store::Store& store, std::int64_t key_id, std::int64_t now_ms);
// Its requests, the same way (Store::requestsByKey).
store::KeyRequests requestsOf(store::Store& store, std::int64_t key_id, std::int64_t now_ms);

std::int64_t utcDayStartMs(std::int64_t unix_ms);
std::int64_t utcMonthStartMs(std::int64_t unix_ms);

// "2026-12-31T00:00:00Z", "2026-12-31T01:30:00.250+02:00" (RFC 3339 date-time) -> Unix ms.
std::optional<std::int64_t> parseRfc3339(std::string_view text);
std::string formatRfc3339(std::int64_t unix_ms);  // "2026-12-31T00:00:00Z" (UTC, whole seconds)

std::int64_t unixNowMs();

}  // namespace sluice::admin
