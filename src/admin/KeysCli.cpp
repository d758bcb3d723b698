#include "admin/KeysCli.hpp"

#include <fmt/format.h>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

#include <pwd.h>
#include <unistd.h>

#include <charconv>
#include <ostream>

#include "admin/Fields.hpp"
#include "admin/KeyOps.hpp"
#include "admin/TeamOps.hpp"
#include "config/Config.hpp"
#include "store/Store.hpp"

namespace sluice::admin {
namespace json = boost::json;

namespace {

// What the user typed to clear a limit, budget or expiry.
bool isNone(std::string_view s) {
  return s == "none" || s == "null";
}

json::array splitList(std::string_view s) {
  json::array out;
  while (!s.empty()) {
    const auto comma = s.find(',');
    std::string_view part = s.substr(0, comma);
    while (!part.empty() && part.front() == ' ') part.remove_prefix(1);
    while (!part.empty() && part.back() == ' ') part.remove_suffix(1);
    out.emplace_back(part);  // an empty entry is kept so KeyOps names it
    if (comma == std::string_view::npos) break;
    s.remove_prefix(comma + 1);
  }
  return out;
}

// A number when the text is one; otherwise the text itself, so KeyOps refuses it with its words.
json::value integerOrText(std::string_view s) {
  if (isNone(s)) return nullptr;
  std::int64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec == std::errc() && p == s.data() + s.size()) return v;
  return json::string(s);
}

json::value numberOrText(std::string_view s) {
  if (isNone(s)) return nullptr;
  double v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec == std::errc() && p == s.data() + s.size()) return v;
  return json::string(s);
}

// "30d", "12h", "90m", "45s": a positive count and one unit.
std::optional<std::int64_t> durationMs(std::string_view s) {
  if (s.size() < 2) return std::nullopt;
  std::int64_t unit = 0;
  switch (s.back()) {
    case 'd':
      unit = 86'400'000;
      break;
    case 'h':
      unit = 3'600'000;
      break;
    case 'm':
      unit = 60'000;
      break;
    case 's':
      unit = 1'000;
      break;
    default:
      return std::nullopt;
  }
  std::int64_t n = 0;
  const auto digits = s.substr(0, s.size() - 1);
  auto [p, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), n);
  if (ec != std::errc() || p != digits.data() + digits.size() || n <= 0 || n > 100LL * 365 * 86'400'000 / unit)
    return std::nullopt;
  return n * unit;
}

// The flag a KeyOps field comes from, for messages.
std::string flagOf(std::string_view param) {
  param = param.substr(0, param.find('['));
  if (param == "allowed_models") return "--models";
  if (param == "allowed_channels") return "--channels";
  if (param == "allowed_tools") return "--tools";
  if (param == "max_concurrent") return "--max-concurrent";
  if (param == "budget_daily_usd") return "--budget-daily";
  if (param == "budget_monthly_usd") return "--budget-monthly";
  if (param == "budget_total_usd") return "--budget-total";
  if (param == "expires_at") return "--expires";
  if (param == "expires_at_ms") return "--expires-in";
  if (param == "team_id") return "--team";
  return "--" + std::string(param);
}

std::string orNone(const json::value& v) {
  if (v.is_null()) return "none";
  if (v.is_double()) return fmt::format("{:g}", v.get_double());
  return json::serialize(v);
}

std::string listOrAll(const json::value& v) {
  if (!v.is_array() || v.get_array().empty()) return "all";
  std::string out;
  for (const auto& e : v.get_array()) {
    if (!out.empty()) out += ", ";
    out += e.is_string() ? std::string(e.get_string()) : json::serialize(e);
  }
  return out;
}

std::string timeOr(const json::value& v, std::string_view otherwise) {
  return v.is_int64() ? formatRfc3339(v.get_int64()) : std::string(otherwise);
}

void printKey(std::ostream& out, const json::object& k) {
  const auto& spend = k.at("spend").as_object();
  out << fmt::format("id:              {}\n", k.at("id").as_int64());
  out << fmt::format("name:            {}\n", std::string_view(k.at("name").as_string()));
  out << fmt::format("prefix:          {}\n", std::string_view(k.at("key_prefix").as_string()));
  out << fmt::format("status:          {}\n", std::string_view(k.at("status").as_string()));
  out << fmt::format("models:          {}\n", listOrAll(k.at("allowed_models")));
  out << fmt::format("channels:        {}\n", listOrAll(k.at("allowed_channels")));
  out << fmt::format("tools (MCP):     {}\n", listOrAll(k.at("allowed_tools")));
  out << fmt::format("rpm / tpm:       {} / {}\n", orNone(k.at("rpm")), orNone(k.at("tpm")));
  out << fmt::format("max concurrent:  {}\n", orNone(k.at("max_concurrent")));
  out << fmt::format("budgets (USD):   daily {}, monthly {}, total {}\n", orNone(k.at("budget_daily_usd")),
                     orNone(k.at("budget_monthly_usd")), orNone(k.at("budget_total_usd")));
  out << fmt::format("spend (USD):     today {:.4f}, this month {:.4f}, total {:.4f}\n",
                     spend.at("day_usd").to_number<double>(), spend.at("month_usd").to_number<double>(),
                     spend.at("total_usd").to_number<double>());
  out << fmt::format("expires:         {}\n", timeOr(k.at("expires_at_ms"), "never"));
  if (!k.at("revoked_at_ms").is_null()) out << fmt::format("revoked:         {}\n", timeOr(k.at("revoked_at_ms"), ""));
  if (!k.at("metadata").as_object().empty())
    out << fmt::format("metadata:        {}\n", json::serialize(k.at("metadata")));
  if (!k.at("team_id").is_null()) out << fmt::format("team:            {}\n", k.at("team_id").as_int64());
  out << fmt::format("created:         {}\n", timeOr(k.at("created_at_ms"), ""));
}

// Cut to `width` bytes with "..." at the end, never inside a UTF-8 sequence.
std::string fitColumn(std::string s, std::size_t width) {
  if (s.size() <= width) return s;
  std::size_t cut = width - 3;
  while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80) --cut;
  s.resize(cut);
  s += "...";
  return s;
}

void printTable(std::ostream& out, const json::array& keys) {
  if (keys.empty()) {
    out << "no virtual keys yet; create one with: sluice keys create --name NAME\n";
    return;
  }
  constexpr std::string_view kRow = "{:<6} {:<24} {:<13} {:<8} {:<24} {:<21} {}\n";
  out << fmt::format(kRow, "ID", "NAME", "PREFIX", "STATUS", "MODELS", "EXPIRES", "SPEND USD");
  for (const auto& v : keys) {
    const auto& k = v.as_object();
    const std::string name = fitColumn(std::string(k.at("name").as_string()), 24);
    const std::string models = fitColumn(listOrAll(k.at("allowed_models")), 24);
    out << fmt::format(kRow, k.at("id").as_int64(), name, std::string_view(k.at("key_prefix").as_string()),
                       std::string_view(k.at("status").as_string()), models, timeOr(k.at("expires_at_ms"), "never"),
                       fmt::format("{:.4f}", k.at("spend").at("total_usd").to_number<double>()));
  }
}

struct Refused {
  std::string message;
};

// --team NAME or ID: the team's id, as the admin API resolves it.
json::object resolveTeam(store::Store& s, json::object body) {
  auto* t = body.if_contains("team_id");
  if (t && t->is_int64() && t->get_int64() > 0 && !s.getTeam(t->get_int64()))
    throw Refused{fmt::format("--team: no team with id {}", t->get_int64())};
  if (!t || !t->is_string()) return body;
  const std::string name(t->get_string());
  const auto team = validTeamName(name) ? s.findTeamByName(name) : std::nullopt;
  if (!team) throw Refused{fmt::format("--team: no team named \"{}\"", fitColumn(name, 64))};
  *t = team->id;
  return body;
}

std::unique_ptr<store::Store> openStore(const std::string& config_path) {
  std::string url = config::StoreConfig{}.url;
  if (!config_path.empty()) url = config::loadConfigFile(config_path)->store.url;
  auto s = store::Store::open(url);
  s->migrate();
  return s;
}

// Who ran the command, for the audit log: the account's name (its uid when it has none).
std::string cliActor() {
  const uid_t uid = ::geteuid();
  std::string name;
  if (const passwd* pw = ::getpwuid(uid); pw != nullptr && pw->pw_name != nullptr) name = pw->pw_name;
  if (name.empty()) name = fmt::format("uid {}", uid);
  return "cli:" + name;
}

// A change made here is an admin write like one through the API: one audit row, the key as it
// was and as it is (keyJson never holds the secret or its hash). The command-line user holds
// the store itself, so their role is admin; the address says the write did not come over HTTP.
void auditKeyWrite(store::Store& db, std::string_view action, std::int64_t id, const json::value& before,
                   const json::value& after) {
  store::AuditEntry e;
  e.time_ms = unixNowMs();
  e.actor = cliActor();
  e.role = "admin";
  e.address = "local";
  e.action = std::string(action);
  e.method = "CLI";
  e.path = fmt::format("sluice keys {}", action);
  e.target = fmt::format("/keys/{}", id);
  e.status = action == "create" ? 201 : 200;
  e.before = json::serialize(before);
  e.after = json::serialize(after);
  db.appendAudit(e);
}

store::VirtualKey requireKey(store::Store& s, std::int64_t id) {
  auto k = s.getVirtualKey(id);
  if (!k) throw Refused{fmt::format("no virtual key with id {}; `sluice keys list` shows them", id)};
  return std::move(*k);
}

}  // namespace

json::object keyFlagsToJson(const std::vector<std::pair<std::string, std::string>>& flags, std::int64_t now_ms) {
  json::object body;
  bool expires = false;
  for (const auto& [flag, value] : flags) {
    if (flag == "name")
      body["name"] = value;
    else if (flag == "models")
      body["allowed_models"] = splitList(value);
    else if (flag == "channels")
      body["allowed_channels"] = splitList(value);
    else if (flag == "tools")
      body["allowed_tools"] = splitList(value);
    else if (flag == "rpm" || flag == "tpm")
      body[flag] = integerOrText(value);
    else if (flag == "max-concurrent")
      body["max_concurrent"] = integerOrText(value);
    else if (flag == "budget-daily")
      body["budget_daily_usd"] = numberOrText(value);
    else if (flag == "budget-monthly")
      body["budget_monthly_usd"] = numberOrText(value);
    else if (flag == "budget-total")
      body["budget_total_usd"] = numberOrText(value);
    else if (flag == "expires" || flag == "expires-in") {
      if (expires) throw FieldError(flag, "give --expires or --expires-in, not both");
      expires = true;
      if (flag == "expires") {
        body["expires_at"] = isNone(value) ? json::value(nullptr) : json::value(value);
      } else {
        const auto ms = durationMs(value);
        if (!ms)
          throw FieldError(flag,
                           fmt::format("--expires-in takes a duration such as 30d, 12h or 90m; got \"{}\"", value));
        body["expires_at_ms"] = now_ms + *ms;
      }
    } else if (flag == "team") {
      body["team_id"] = isNone(value) ? json::value(nullptr) : integerOrText(value);
    } else if (flag == "metadata") {
      boost::system::error_code ec;
      json::value v = json::parse(value, ec);
      if (ec)
        throw FieldError("metadata", fmt::format("metadata must be a JSON object of your own annotations, such as "
                                                 "'{{\"team\":\"search\"}}'; got invalid JSON ({})",
                                                 ec.message()));
      body["metadata"] = std::move(v);
    } else {
      throw FieldError(flag, fmt::format("unknown flag --{}", flag));
    }
  }
  return body;
}

int runKeysCommand(const KeysCommand& cmd, std::ostream& out, std::ostream& err) {
  try {
    auto db = openStore(cmd.config_path);
    const auto now = unixNowMs();
    auto view = [&](const store::VirtualKey& k) {
      return keyJson(k, spendOf(*db, k.id, now), requestsOf(*db, k.id, now), now);
    };
    if (cmd.action == "list") {
      const auto spend = db->spendByKey(utcDayStartMs(now), utcMonthStartMs(now));
      const auto requests = db->requestsByKey(utcDayStartMs(now), utcMonthStartMs(now));
      json::array keys;
      for (const auto& k : db->listVirtualKeys()) {
        const auto it = spend.find(k.id);
        const auto rit = requests.find(k.id);
        keys.push_back(keyJson(k, it == spend.end() ? store::KeySpend{} : it->second,
                               rit == requests.end() ? store::KeyRequests{} : rit->second, now));
      }
      if (cmd.json)
        out << json::serialize(keys) << "\n";
      else
        printTable(out, keys);
      return 0;
    }
    if (cmd.action == "create") {
      store::VirtualKey key;
      applyKeyFields(key, resolveTeam(*db, keyFlagsToJson(cmd.flags, now)), true, now);
      const std::string secret = issueKeySecret(key);
      const auto stored = requireKey(*db, db->createVirtualKey(key));
      const auto k = view(stored);
      auditKeyWrite(*db, "create", stored.id, nullptr,
                    json::object{{"key", k}});  // as the API's answer, less the secret
      if (cmd.json) {
        out << json::serialize(json::object{{"key", k}, {"secret", secret}}) << "\n";
        err << "The secret will not be shown again: store it now (only its hash is kept).\n";
      } else {
        out << fmt::format("Created virtual key {} \"{}\".\n\n  {}\n\n", stored.id, stored.name, secret);
        out << "This secret will not be shown again: store it now (only its hash is kept).\n\n";
        printKey(out, k);
      }
      return 0;
    }
    if (cmd.action == "update" && cmd.flags.empty()) {
      throw Refused{
          "nothing to update: give at least one of --name, --models, --channels, --tools, --rpm, --tpm, "
          "--max-concurrent, --budget-daily, --budget-monthly, --budget-total, --expires, --expires-in, "
          "--metadata, --team"};
    }
    auto key = requireKey(*db, cmd.id);
    const bool writes = cmd.action == "update" || cmd.action == "revoke" || cmd.action == "delete";
    const json::value was = writes ? json::value(view(key)) : json::value(nullptr);
    if (cmd.action == "update") {
      applyKeyFields(key, resolveTeam(*db, keyFlagsToJson(cmd.flags, now)), false, now);
      if (!db->updateVirtualKey(key)) throw Refused{fmt::format("virtual key {} was deleted meanwhile", cmd.id)};
      key = requireKey(*db, cmd.id);
      auditKeyWrite(*db, "update", key.id, was, view(key));
    } else if (cmd.action == "revoke") {
      // Idempotent, as in the API: a second revoke keeps the first time.
      if (!key.revoked_at_ms) {
        if (!db->revokeVirtualKey(key.id, now))
          throw Refused{fmt::format("virtual key {} was deleted meanwhile", cmd.id)};
        key = requireKey(*db, cmd.id);
      }
      auditKeyWrite(*db, "revoke", key.id, was, view(key));
    } else if (cmd.action == "delete") {
      if (!db->deleteVirtualKey(key.id)) throw Refused{fmt::format("virtual key {} was deleted meanwhile", cmd.id)};
      auditKeyWrite(*db, "delete", key.id, was, nullptr);
      if (cmd.json)
        out << json::serialize(json::object{{"id", key.id}, {"deleted", true}}) << "\n";
      else
        out << fmt::format("Deleted virtual key {} \"{}\".\n", key.id, key.name);
      return 0;
    } else if (cmd.action != "show") {
      throw Refused{
          fmt::format("unknown keys command \"{}\"; use create, list, show, update, revoke or delete", cmd.action)};
    }
    const auto k = view(key);
    if (cmd.json)
      out << json::serialize(k) << "\n";
    else
      printKey(out, k);
    return 0;
  } catch (const FieldError& e) {
    const std::string flag = e.param().empty() ? std::string() : flagOf(e.param()) + ": ";
    err << "sluice keys " << cmd.action << ": " << flag << e.what() << "\n";
    return 1;
  } catch (const Refused& e) {
    err << "sluice keys " << cmd.action << ": " << e.message << "\n";
    return 1;
  } catch (const config::ConfigError& e) {
    err << e.what() << "\n";
    return 2;
  } catch (const store::StoreError& e) {
    err << "sluice keys " << cmd.action << ": store: " << e.what() << "\n";
    return 2;
  }
}

}  // namespace sluice::admin
