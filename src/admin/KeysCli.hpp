// `sluice keys`: virtual keys managed straight in the store, no gateway needed (a running
// gateway notices the change within a second). Validation and JSON come from KeyOps, so the CLI
// refuses what the admin API refuses, in the same words.
#pragma once
#include <boost/json/object.hpp>

#include <array>
#include <cstdint>
#include <iosfwd>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace sluice::admin {

struct KeyFlag {
  std::string_view name;  // the flag without its dashes
  std::string_view help;
};
// The flags of `keys create` and `keys update`.
inline constexpr std::array<KeyFlag, 14> kKeyFlags = {{
    {"name", "who or what uses the key (1-128 characters; required for create)"},
    {"models", "allowed models, comma-separated; globs allowed (gpt-4o*); \"\" allows all"},
    {"channels", "allowed channels, comma-separated; \"\" allows all"},
    {"tools", "allowed MCP tools (SERVER__TOOL), comma-separated; globs allowed (github__*); \"\" allows all"},
    {"rpm", "requests per minute (none: no limit)"},
    {"tpm", "tokens per minute (none: no limit)"},
    {"max-concurrent", "requests in flight (none: no limit)"},
    {"budget-daily", "USD per UTC day (none: no budget)"},
    {"budget-monthly", "USD per UTC month (none: no budget)"},
    {"budget-total", "USD in all (none: no budget)"},
    {"expires", "expiry as RFC 3339, e.g. 2026-12-31T00:00:00Z (none: never)"},
    {"expires-in", "expiry from now: 30d, 12h, 90m"},
    {"metadata", "a JSON object of your own annotations"},
    {"team", "the team (id or name) whose limits and budgets also bound the key (none: no team)"},
}};

struct KeysCommand {
  std::string action;       // create | list | show | update | revoke | delete
  std::string config_path;  // empty: the default store, sqlite://./sluice.db
  std::int64_t id = 0;      // show, update, revoke, delete
  bool json = false;        // machine-readable output
  // The create/update flags given on the command line, by name (see kKeyFlags), as typed.
  std::vector<std::pair<std::string, std::string>> flags;
};

// The flags as the JSON body the admin API would take. Throws FieldError whose param is the
// flag's name (e.g. "expires-in") when a flag cannot be read at all.
boost::json::object keyFlagsToJson(const std::vector<std::pair<std::string, std::string>>& flags, std::int64_t now_ms);

// Runs the command; returns the exit code: 0 done, 1 refused (bad flag, no such key),
// 2 the config or the store cannot be used.
int runKeysCommand(const KeysCommand& cmd, std::ostream& out, std::ostream& err);

}  // namespace sluice::admin
