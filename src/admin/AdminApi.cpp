#include "admin/AdminApi.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/http/field.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>

#include <algorithm>
#include <charconv>
#include <map>
#include <set>

#include "admin/ChannelOps.hpp"
#include "admin/Csv.hpp"
#include "admin/Fields.hpp"
#include "admin/KeyOps.hpp"
#include "admin/McpServerOps.hpp"
#include "admin/OpenApi.hpp"
#include "admin/StatsWindow.hpp"
#include "admin/TeamOps.hpp"
#include "admin/TokenOps.hpp"
#include "config/Config.hpp"
#include "core/JsonText.hpp"
#include "core/SecretBox.hpp"
#include "mcp/McpHub.hpp"
#include "pipeline/VirtualKeySecret.hpp"
#include "store/Store.hpp"

namespace sluice::admin {

namespace net = boost::asio;
namespace bhttp = boost::beast::http;
namespace json = boost::json;

namespace {

enum class Op {
  Logs,
  GetLog,
  Usage,
  Stats,
  OpenApi,
  ListKeys,
  CreateKey,
  GetKey,
  UpdateKey,
  DeleteKey,
  RevokeKey,
  ListChannels,
  CreateChannel,
  GetChannel,
  UpdateChannel,
  DeleteChannel,
  ListChannelKeys,
  CreateChannelKey,
  GetChannelKey,
  UpdateChannelKey,
  DeleteChannelKey,
  ListMcpServers,
  CreateMcpServer,
  GetMcpServer,
  UpdateMcpServer,
  DeleteMcpServer,
  ListTokens,
  CreateToken,
  GetToken,
  DeleteToken,
  RevokeToken,
  Audit,
  ListTeams,
  CreateTeam,
  GetTeam,
  UpdateTeam,
  DeleteTeam,
};

struct Route {
  bhttp::verb method;
  std::string_view path;  // "{name}" matches one non-empty segment
  Op op;
};

constexpr Route kRoutes[] = {
    {bhttp::verb::get, "/logs", Op::Logs},
    {bhttp::verb::get, "/logs/{id}", Op::GetLog},
    {bhttp::verb::get, "/usage", Op::Usage},
    {bhttp::verb::get, "/stats", Op::Stats},
    {bhttp::verb::get, "/openapi.json", Op::OpenApi},
    {bhttp::verb::get, "/keys", Op::ListKeys},
    {bhttp::verb::post, "/keys", Op::CreateKey},
    {bhttp::verb::get, "/keys/{id}", Op::GetKey},
    {bhttp::verb::patch, "/keys/{id}", Op::UpdateKey},
    {bhttp::verb::delete_, "/keys/{id}", Op::DeleteKey},
    {bhttp::verb::post, "/keys/{id}/revoke", Op::RevokeKey},
    {bhttp::verb::get, "/channels", Op::ListChannels},
    {bhttp::verb::post, "/channels", Op::CreateChannel},
    {bhttp::verb::get, "/channels/{id}", Op::GetChannel},
    {bhttp::verb::patch, "/channels/{id}", Op::UpdateChannel},
    {bhttp::verb::delete_, "/channels/{id}", Op::DeleteChannel},
    {bhttp::verb::get, "/channels/{id}/keys", Op::ListChannelKeys},
    {bhttp::verb::post, "/channels/{id}/keys", Op::CreateChannelKey},
    {bhttp::verb::get, "/channels/{id}/keys/{key_id}", Op::GetChannelKey},
    {bhttp::verb::patch, "/channels/{id}/keys/{key_id}", Op::UpdateChannelKey},
    {bhttp::verb::delete_, "/channels/{id}/keys/{key_id}", Op::DeleteChannelKey},
    {bhttp::verb::get, "/mcp-servers", Op::ListMcpServers},
    {bhttp::verb::post, "/mcp-servers", Op::CreateMcpServer},
    {bhttp::verb::get, "/mcp-servers/{id}", Op::GetMcpServer},
    {bhttp::verb::patch, "/mcp-servers/{id}", Op::UpdateMcpServer},
    {bhttp::verb::delete_, "/mcp-servers/{id}", Op::DeleteMcpServer},
    {bhttp::verb::get, "/tokens", Op::ListTokens},
    {bhttp::verb::post, "/tokens", Op::CreateToken},
    {bhttp::verb::get, "/tokens/{id}", Op::GetToken},
    {bhttp::verb::delete_, "/tokens/{id}", Op::DeleteToken},
    {bhttp::verb::post, "/tokens/{id}/revoke", Op::RevokeToken},
    {bhttp::verb::get, "/audit", Op::Audit},
    {bhttp::verb::get, "/teams", Op::ListTeams},
    {bhttp::verb::post, "/teams", Op::CreateTeam},
    {bhttp::verb::get, "/teams/{id}", Op::GetTeam},
    {bhttp::verb::patch, "/teams/{id}", Op::UpdateTeam},
    {bhttp::verb::delete_, "/teams/{id}", Op::DeleteTeam},
};

std::vector<std::string_view> segments(std::string_view path) {
  std::vector<std::string_view> out;
  while (!path.empty()) {
    if (path.front() == '/') {
      path.remove_prefix(1);
      continue;
    }
    const auto slash = path.find('/');
    out.push_back(path.substr(0, slash));
    if (slash == std::string_view::npos) break;
    path.remove_prefix(slash);
  }
  return out;
}

// Matches `path` against a template; on success `params` holds the {…} segments in order.
bool matches(std::string_view tmpl, const std::vector<std::string_view>& path, std::vector<std::string>& params) {
  const auto t = segments(tmpl);
  if (t.size() != path.size()) return false;
  std::vector<std::string> found;
  for (std::size_t i = 0; i < t.size(); ++i) {
    if (t[i].starts_with('{'))
      found.emplace_back(path[i]);
    else if (t[i] != path[i])
      return false;
  }
  params = std::move(found);
  return true;
}

// 4xx/5xx that is not about one field: 404, 405, 409, 503.
struct HttpError {
  int status;
  std::string message;
  std::string allow = {};  // for 405
};

http::Response jsonResponse(int status, const json::value& v) {
  http::Response res{static_cast<bhttp::status>(status), 11};
  res.set(bhttp::field::content_type, "application/json");
  res.body() = json::serialize(v);
  return res;
}

http::Response errorResponse(int status, const std::string& message, const std::string& param) {
  const char* type = status >= 500 ? "server_error" : "invalid_request_error";
  json::value p = param.empty() ? json::value(nullptr) : json::value(param);
  return jsonResponse(status, json::object{{"error", {{"message", message}, {"type", type}, {"param", std::move(p)}}}});
}

// application/x-www-form-urlencoded, as browsers' URLSearchParams writes it: '+' is a space and
// %XX a byte (so "by=model%2Cday" and "model=openai%2Fgpt-4o" mean what they say). A '%' not
// followed by two hex digits stays as it is.
std::string formDecode(std::string_view s) {
  auto hex = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '+') {
      out += ' ';
    } else if (s[i] == '%' && i + 2 < s.size() && hex(s[i + 1]) >= 0 && hex(s[i + 2]) >= 0) {
      out += static_cast<char>(hex(s[i + 1]) * 16 + hex(s[i + 2]));
      i += 2;
    } else {
      out += s[i];
    }
  }
  return out;
}

std::map<std::string, std::string> parseQuery(std::string_view q) {
  std::map<std::string, std::string> out;
  while (!q.empty()) {
    auto amp = q.find('&');
    auto part = q.substr(0, amp);
    auto eq = part.find('=');
    out[formDecode(part.substr(0, eq))] = eq == std::string_view::npos ? "" : formDecode(part.substr(eq + 1));
    if (amp == std::string_view::npos) break;
    q.remove_prefix(amp + 1);
  }
  out.erase("key");  // the caller's own credential (?key=), not a parameter of any route
  return out;
}

std::int64_t intParam(const std::map<std::string, std::string>& q, const std::string& name, std::int64_t dflt,
                      std::int64_t lo, std::int64_t hi) {
  auto it = q.find(name);
  if (it == q.end() || it->second.empty()) return dflt;
  std::int64_t v = 0;
  auto [p, ec] = std::from_chars(it->second.data(), it->second.data() + it->second.size(), v);
  if (ec != std::errc() || p != it->second.data() + it->second.size() || v < lo || v > hi)
    throw FieldError(name, fmt::format("{} must be an integer from {} to {}", name, lo, hi));
  return v;
}

// A path id: a positive integer, else nothing (the caller answers 404).
std::optional<std::int64_t> pathId(std::string_view s) {
  std::int64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || v <= 0) return std::nullopt;
  return v;
}

// The stored screening verdicts (the access line's array, written by the gateway): null when the
// request was not screened or the text does not parse.
json::value screeningJson(const std::string& stored) {
  if (stored.empty()) return nullptr;
  boost::system::error_code ec;
  json::value v = sluice::parseJson(stored, ec);
  if (ec || !v.is_array()) return nullptr;
  return v;
}

json::object logJson(const store::LogEntry& e) {
  const auto& r = e.record;
  boost::system::error_code ec;
  json::value attempts = sluice::parseJson(r.attempts, ec);
  if (ec) attempts = json::array{};
  return json::object{{"id", e.id},
                      {"time_ms", r.time_ms},
                      {"request_id", r.request_id},
                      {"virtual_key_id", r.virtual_key_id ? json::value(*r.virtual_key_id) : json::value(nullptr)},
                      {"channel", r.channel},
                      {"upstream_key", r.upstream_key},
                      {"model", r.model},
                      {"status", r.status},
                      {"stream", r.stream},
                      {"attempts", std::move(attempts)},
                      {"ttfb_ms", r.ttfb_ms},
                      {"duration_ms", r.duration_ms},
                      {"input_tokens", r.input_tokens},
                      {"output_tokens", r.output_tokens},
                      {"cached_tokens", r.cached_tokens},
                      {"cache_write_tokens", r.cache_write_tokens},
                      {"reasoning_tokens", r.reasoning_tokens},
                      {"cost_usd", r.cost_usd},
                      {"client_addr", r.client_addr},
                      {"user_agent", r.user_agent},
                      {"screening", screeningJson(r.screening)}};
}

// "2026-01-31" for the UTC day holding `unix_ms`.
std::string utcDate(std::int64_t unix_ms) {
  return formatRfc3339(unix_ms).substr(0, 10);
}

// GET /usage?format=csv: the same rows as the JSON, one line each, for spreadsheets. Only the
// grouped-by dimensions get a column; the day is a date, the key its id and name.
template <class KeyName, class TeamName>
http::Response usageCsv(const store::UsageQuery& uq, const std::vector<store::UsageRow>& rows, KeyName keyName,
                        TeamName teamName) {
  std::string out;
  if (uq.by_day) out += "day,";
  if (uq.by_virtual_key) out += "virtual_key_id,virtual_key_name,";
  if (uq.by_model) out += "model,";
  if (uq.by_channel) out += "channel,";
  if (uq.by_team) out += "team_id,team_name,";
  // The columns added later go last, so a sheet reading columns by position keeps working.
  out += "requests,errors,input_tokens,output_tokens,cached_tokens,cost_usd,cache_write_tokens,reasoning_tokens\r\n";
  for (const auto& u : rows) {
    if (uq.by_day) out += utcDate(u.day_ms) + ",";
    if (uq.by_virtual_key) {
      if (u.virtual_key_id) out += std::to_string(*u.virtual_key_id);
      out += ',';
      if (const std::string* name = keyName(u.virtual_key_id)) appendCsvText(out, *name);
      out += ',';
    }
    if (uq.by_model) {
      appendCsvText(out, u.model);
      out += ',';
    }
    if (uq.by_channel) {
      appendCsvText(out, u.channel);
      out += ',';
    }
    if (uq.by_team) {
      if (u.team_id) out += std::to_string(*u.team_id);
      out += ',';
      if (const std::string* name = teamName(u.team_id)) appendCsvText(out, *name);
      out += ',';
    }
    out += fmt::format("{},{},{},{},{},{},{},{}\r\n", u.requests, u.errors, u.input_tokens, u.output_tokens,
                       u.cached_tokens, csvUsd(u.cost_usd), u.cache_write_tokens, u.reasoning_tokens);
  }
  http::Response res{bhttp::status::ok, 11};
  res.set(bhttp::field::content_type, "text/csv; charset=utf-8");
  res.set(bhttp::field::content_disposition,
          fmt::format("attachment; filename=\"sluice-usage-{}-to-{}.csv\"", utcDate(uq.from_ms),
                      utcDate(std::max(uq.from_ms, uq.to_ms - 1))));
  res.body() = std::move(out);
  return res;
}

// One request, as the pool thread sees it.
struct Call {
  std::vector<std::string> params;
  std::map<std::string, std::string> query;
  std::string body;
  Caller caller;
};

}  // namespace

struct AdminApi::State {
  std::string url;
  std::unique_ptr<store::Store> store;
  std::function<std::shared_ptr<const config::Config>()> config_source;
  std::function<void()> on_change;
  std::function<std::vector<mcp::ServerState>()> mcp_source;
  // Cached so the key derivation runs once per passphrase, not once per request.
  std::string box_passphrase;
  std::unique_ptr<SecretBox> box;

  store::Store& db() {
    if (!store) {
      auto s = store::Store::open(url);
      // The gateway migrates only when request logs are on; the control tables must exist anyway.
      s->migrate();
      store = std::move(s);
    }
    return *store;
  }

  std::shared_ptr<const config::Config> config() const { return config_source ? config_source() : nullptr; }

  // nullptr when no store.secret_key is configured.
  const SecretBox* secretBox() {
    const auto cfg = config();
    const std::string passphrase = cfg ? cfg->store.secret_key : std::string();
    if (passphrase.empty()) return nullptr;
    if (!box || passphrase != box_passphrase) {
      box = std::make_unique<SecretBox>(passphrase);
      box_passphrase = passphrase;
    }
    return box.get();
  }

  // A channel write that sets an Entra client_secret needs the box (503 without one, as a key).
  const SecretBox* channelSecretBox(const json::object& body) {
    const auto* v = body.if_contains("client_secret");
    return v && v->is_string() ? &requireSecretBox() : secretBox();
  }
  const SecretBox& requireSecretBox() {
    const auto* b = secretBox();
    if (!b)
      throw HttpError{503,
                      "upstream keys are stored encrypted and no secret key is configured: set the "
                      "SLUICE_SECRET_KEY environment variable (or store.secret_key in the config file) to a "
                      "long random string, then restart or reload"};
    return *b;
  }

  void changed() {
    if (on_change) on_change();
  }

  http::Response handleOnPool(bhttp::verb method, const std::string& path, const std::string& query, std::string body,
                              Caller caller);
  // ---- admin tokens and the audit log ----
  store::AdminToken requireToken(const std::string& param);
  http::Response createToken(Call& c);
  http::Response audit(Call& c);
  http::Response serve(Op op, Call& c);

  // ---- read side ----
  http::Response logs(Call& c);
  http::Response getLog(Call& c);
  http::Response usage(Call& c);
  http::Response stats(Call& c);

  // ---- teams ----
  // The teams a member may see and manage (their token's, and those naming their OIDC subject
  // or e-mail); nullopt for every other role (they see every team).
  std::optional<std::set<std::int64_t>> teamScope(const Caller& caller);
  // A team by id or name; 404 when there is none, or when `scope` leaves it out (the same
  // answer, so a member learns nothing of other teams).
  store::Team requireTeam(const std::string& param, const std::optional<std::set<std::int64_t>>& scope = {});
  // A key's team_id field as the client sent it (an id or a team name): the team's id or null.
  json::value teamIdOf(const json::value& v, const std::optional<std::set<std::int64_t>>& scope);
  struct TeamTotals {
    std::int64_t keys = 0;
    store::KeySpend spend;
  };
  std::map<std::int64_t, TeamTotals> teamTotals();
  json::object teamView(const store::Team& t);
  http::Response listTeams(Call& c);
  http::Response createTeam(Call& c);
  http::Response updateTeam(Call& c);
  http::Response deleteTeam(Call& c);

  // ---- virtual keys ----
  store::VirtualKey requireKey(const std::string& param);
  // The key, if the caller may see it (a member: only their teams' keys); 404 otherwise.
  store::VirtualKey requireKeyFor(const Call& c, const std::string& param);
  json::object keyView(const store::VirtualKey& k, std::int64_t now);
  http::Response listKeys(Call& c);
  http::Response createKey(Call& c);
  http::Response updateKey(Call& c);
  http::Response revokeKey(Call& c);
  http::Response deleteKey(Call& c);

  // ---- channels ----
  // A channel named in a path: a store channel (by id or name), or one from the config file.
  struct ChannelRef {
    std::optional<store::Channel> stored;
    const config::ChannelConfig* declared = nullptr;
    std::shared_ptr<const config::Config> cfg;  // keeps `declared` alive
  };
  ChannelRef resolveChannel(const std::string& param);
  store::Channel requireStoredChannel(const std::string& param, std::string_view what);
  const config::ChannelConfig* declaredChannel(const config::Config* cfg, std::string_view name);
  void checkNameFree(const std::string& name, std::int64_t self_id);
  json::array channelKeys(std::int64_t channel_id);
  http::Response listChannels();
  http::Response getChannel(Call& c);
  http::Response createChannel(Call& c);
  http::Response updateChannel(Call& c);
  http::Response deleteChannel(Call& c);

  // ---- upstream keys ----
  store::UpstreamKey requireUpstreamKey(const store::Channel& ch, const std::string& param);
  http::Response createUpstreamKey(Call& c);
  http::Response updateUpstreamKey(Call& c);

  // ---- MCP servers ----
  // A server named in a path: a store row (by id or name), or one of the config file.
  struct McpRef {
    std::optional<store::McpServer> stored;
    const config::McpServerConfig* declared = nullptr;
    std::shared_ptr<const config::Config> cfg;  // keeps `declared` alive
  };
  McpRef resolveMcpServer(const std::string& param);
  store::McpServer requireStoredMcpServer(const std::string& param, std::string_view what);
  void checkMcpNameFree(const std::string& name, std::int64_t self_id);
  // The stored row as a draft; false when its headers cannot be decrypted.
  bool mcpDraft(const store::McpServer& row, McpServerDraft& out);
  void sealMcpHeaders(const McpServerDraft& d, store::McpServer& row);
  json::object storedMcpJson(const store::McpServer& row, const std::vector<mcp::ServerState>& live);
  std::vector<mcp::ServerState> mcpLive() const { return mcp_source ? mcp_source() : std::vector<mcp::ServerState>{}; }
  http::Response listMcpServers();
  http::Response getMcpServer(Call& c);
  http::Response createMcpServer(Call& c);
  http::Response updateMcpServer(Call& c);
  http::Response deleteMcpServer(Call& c);
};

namespace {

const mcp::ServerState* liveOf(const std::vector<mcp::ServerState>& live, std::string_view name) {
  for (const auto& s : live)
    if (s.name == name) return &s;
  return nullptr;
}

McpServerDraft draftOfConfig(const config::McpServerConfig& c) {
  McpServerDraft d;
  d.name = c.name;
  d.url = c.url;
  d.command = c.command;
  d.headers = c.headers;
  d.timeout_ms = c.timeout.count();
  return d;
}

const config::McpServerConfig* declaredMcpServer(const config::Config* cfg, std::string_view name) {
  if (!cfg) return nullptr;
  for (const auto& s : cfg->mcp.servers)
    if (s.store_id == 0 && s.name == name) return &s;
  return nullptr;
}

}  // namespace

// ---- read side ----

http::Response AdminApi::State::logs(Call& c) {
  auto& q = c.query;
  store::LogQuery lq;
  if (q.contains("from")) lq.from_ms = intParam(q, "from", 0, 0, INT64_MAX);
  if (q.contains("to")) lq.to_ms = intParam(q, "to", 0, 0, INT64_MAX);
  if (q.contains("status")) lq.status = static_cast<int>(intParam(q, "status", 0, 100, 599));
  if (q.contains("model")) lq.model = q["model"];
  if (q.contains("channel")) lq.channel = q["channel"];
  if (q.contains("virtual_key_id")) lq.virtual_key_id = intParam(q, "virtual_key_id", 0, 1, INT64_MAX);
  lq.limit = static_cast<std::size_t>(intParam(q, "limit", 100, 1, static_cast<std::int64_t>(store::kMaxLogPage)));
  lq.cursor = q["cursor"];
  auto page = db().listLogs(lq);
  json::array data;
  for (const auto& e : page.entries) data.push_back(logJson(e));
  json::value next = page.next_cursor.empty() ? json::value(nullptr) : json::value(page.next_cursor);
  return jsonResponse(200, json::object{{"data", std::move(data)}, {"next_cursor", std::move(next)}});
}

http::Response AdminApi::State::getLog(Call& c) {
  const auto id = pathId(c.params[0]);
  auto entry = id ? db().getLog(*id) : std::nullopt;
  if (!entry) throw HttpError{404, fmt::format("no request log with id {}", c.params[0])};
  const auto& r = entry->record;
  json::object o = logJson(*entry);
  std::optional<store::VirtualKey> key;
  if (r.virtual_key_id) key = db().getVirtualKey(*r.virtual_key_id);
  o["virtual_key_name"] = key ? json::value(key->name) : json::value(nullptr);
  // Bodies are what users sent the models: operators and admins see them, viewers do not.
  const bool bodies = c.caller.role >= Role::Operator;
  o["request_body"] = bodies && r.request_body ? json::value(*r.request_body) : json::value(nullptr);
  o["response_body"] = bodies && r.response_body ? json::value(*r.response_body) : json::value(nullptr);
  if (!bodies && (r.request_body || r.response_body)) o["bodies_hidden"] = true;
  return jsonResponse(200, o);
}

http::Response AdminApi::State::usage(Call& c) {
  auto& q = c.query;
  store::UsageQuery uq;
  uq.to_ms = intParam(q, "to", unixNowMs() + 1, 0, INT64_MAX);
  uq.from_ms = intParam(q, "from", uq.to_ms - 30LL * 86'400'000, 0, INT64_MAX);
  // group_by is the same list under the name the dashboards use.
  std::string by = q.contains("group_by") ? q["group_by"] : q["by"];
  std::size_t pos = 0;
  while (pos <= by.size() && !by.empty()) {
    auto comma = by.find(',', pos);
    auto dim = by.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    if (dim == "day")
      uq.by_day = true;
    else if (dim == "model")
      uq.by_model = true;
    else if (dim == "channel")
      uq.by_channel = true;
    else if (dim == "key")
      uq.by_virtual_key = true;
    else if (dim == "team")
      uq.by_team = true;
    else
      throw FieldError(q.contains("group_by") ? "group_by" : "by",
                       "by takes a comma-separated list of day, model, channel, key, team; got \"" + dim.substr(0, 64) +
                           "\"");
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  if (q.contains("model")) uq.model = q["model"];
  if (q.contains("channel")) uq.channel = q["channel"];
  if (q.contains("virtual_key_id")) uq.virtual_key_id = intParam(q, "virtual_key_id", 0, 1, INT64_MAX);
  // A member's usage is their teams' keys' only; team_id narrows it to one team.
  const auto scope = teamScope(c.caller);
  if (scope) {
    uq.team_filter = true;
    uq.team_ids.assign(scope->begin(), scope->end());
  }
  if (q.contains("team_id") && !q["team_id"].empty()) {
    const std::int64_t team = requireTeam(q["team_id"], scope).id;
    uq.team_filter = true;
    uq.team_ids = {team};
  }
  const std::string format = q.contains("format") ? q["format"] : "json";
  if (format != "json" && format != "csv")
    throw FieldError("format", "format takes json or csv; got \"" + format.substr(0, 64) + "\"");
  const auto rows = db().usage(uq);
  std::map<std::int64_t, std::string> key_names;
  if (uq.by_virtual_key)
    for (const auto& k : db().listVirtualKeys()) key_names.emplace(k.id, k.name);
  auto keyName = [&](const std::optional<std::int64_t>& id) -> const std::string* {
    if (!id) return nullptr;
    const auto it = key_names.find(*id);
    return it == key_names.end() ? nullptr : &it->second;
  };
  std::map<std::int64_t, std::string> team_names;
  if (uq.by_team)
    for (const auto& t : db().listTeams()) team_names.emplace(t.id, t.name);
  auto teamName = [&](const std::optional<std::int64_t>& id) -> const std::string* {
    if (!id) return nullptr;
    const auto it = team_names.find(*id);
    return it == team_names.end() ? nullptr : &it->second;
  };
  if (format == "csv") return usageCsv(uq, rows, keyName, teamName);
  json::array data;
  for (const auto& u : rows) {
    json::object o{{"requests", u.requests},
                   {"errors", u.errors},
                   {"input_tokens", u.input_tokens},
                   {"output_tokens", u.output_tokens},
                   {"cached_tokens", u.cached_tokens},
                   {"cache_write_tokens", u.cache_write_tokens},
                   {"reasoning_tokens", u.reasoning_tokens},
                   {"cost_usd", u.cost_usd}};
    if (uq.by_day) o["day_ms"] = u.day_ms;
    if (uq.by_model) o["model"] = u.model;
    if (uq.by_channel) o["channel"] = u.channel;
    if (uq.by_virtual_key) {
      o["virtual_key_id"] = u.virtual_key_id ? json::value(*u.virtual_key_id) : json::value(nullptr);
      const std::string* name = keyName(u.virtual_key_id);
      o["virtual_key_name"] = name ? json::value(*name) : json::value(nullptr);
    }
    if (uq.by_team) {
      o["team_id"] = u.team_id ? json::value(*u.team_id) : json::value(nullptr);
      const std::string* name = teamName(u.team_id);
      o["team_name"] = name ? json::value(*name) : json::value(nullptr);
    }
    data.push_back(std::move(o));
  }
  return jsonResponse(200, json::object{{"data", std::move(data)}, {"from_ms", uq.from_ms}, {"to_ms", uq.to_ms}});
}

http::Response AdminApi::State::stats(Call& c) {
  const StatsWindow w = parseStatsWindow(c.query, unixNowMs());
  store::StatsQuery sq;
  sq.from_ms = w.since_ms;
  sq.to_ms = w.until_ms;
  sq.step_ms = w.step_s * 1000;
  return jsonResponse(200, statsJson(w, db().stats(sq)));
}

// ---- virtual keys ----

store::VirtualKey AdminApi::State::requireKey(const std::string& param) {
  const auto id = pathId(param);
  auto key = id ? db().getVirtualKey(*id) : std::nullopt;
  if (!key) throw HttpError{404, fmt::format("no virtual key with id {}", param)};
  return std::move(*key);
}

store::VirtualKey AdminApi::State::requireKeyFor(const Call& c, const std::string& param) {
  auto key = requireKey(param);
  if (const auto scope = teamScope(c.caller); scope && !(key.team_id && scope->contains(*key.team_id)))
    throw HttpError{404, fmt::format("no virtual key with id {}", param)};
  return key;
}

// ---- teams ----

std::optional<std::set<std::int64_t>> AdminApi::State::teamScope(const Caller& caller) {
  if (caller.role != Role::Member) return std::nullopt;
  std::set<std::int64_t> ids;
  if (caller.team_id) ids.insert(*caller.team_id);
  if (!caller.subject.empty() || !caller.email.empty())
    for (const auto& t : db().listTeams())
      if (isTeamMember(t, caller.subject, caller.email)) ids.insert(t.id);
  return ids;
}

store::Team AdminApi::State::requireTeam(const std::string& param, const std::optional<std::set<std::int64_t>>& scope) {
  std::optional<store::Team> t;
  if (const auto id = pathId(param))
    t = db().getTeam(*id);
  else if (validTeamName(param))
    t = db().findTeamByName(param);
  if (!t || (scope && !scope->contains(t->id)))
    throw HttpError{404, fmt::format("no team {}", validTeamName(param) || pathId(param) ? param : "by that name")};
  return std::move(*t);
}

json::value AdminApi::State::teamIdOf(const json::value& v, const std::optional<std::set<std::int64_t>>& scope) {
  if (v.is_null()) {
    if (scope) throw HttpError{403, "a member's keys stay in one of their teams: team_id cannot be null"};
    return nullptr;
  }
  std::optional<store::Team> t;
  if (v.is_string()) {
    const auto& s = v.get_string();
    const std::string name(s.data(), s.size());
    if (!validTeamName(name))
      throw FieldError("team_id", "team_id must be a team's id or name; got " + describeJson(v));
    t = db().findTeamByName(name);
  } else {
    t = db().getTeam(integerField(v, "team_id", 1, INT64_MAX));
  }
  // A member hears the same whether the team exists or is someone else's.
  if (scope && (!t || !scope->contains(t->id)))
    throw HttpError{403, "a member manages keys of their own teams only: team_id must be one of them"};
  if (!t) throw FieldError("team_id", "team_id names no team; GET /admin/api/teams lists them");
  return t->id;
}

std::map<std::int64_t, AdminApi::State::TeamTotals> AdminApi::State::teamTotals() {
  const auto now = unixNowMs();
  const auto spend = db().spendByKey(utcDayStartMs(now), utcMonthStartMs(now));
  std::map<std::int64_t, TeamTotals> out;
  for (const auto& k : db().listVirtualKeys()) {
    if (!k.team_id) continue;
    auto& t = out[*k.team_id];
    ++t.keys;
    if (const auto it = spend.find(k.id); it != spend.end()) {
      t.spend.day_usd += it->second.day_usd;
      t.spend.month_usd += it->second.month_usd;
      t.spend.total_usd += it->second.total_usd;
    }
  }
  return out;
}

json::object AdminApi::State::teamView(const store::Team& t) {
  const auto totals = teamTotals();
  const auto it = totals.find(t.id);
  return it == totals.end() ? teamJson(t, 0, {}) : teamJson(t, it->second.keys, it->second.spend);
}

http::Response AdminApi::State::listTeams(Call& c) {
  const auto scope = teamScope(c.caller);
  const auto totals = teamTotals();
  json::array data;
  for (const auto& t : db().listTeams()) {
    if (scope && !scope->contains(t.id)) continue;
    const auto it = totals.find(t.id);
    data.push_back(it == totals.end() ? teamJson(t, 0, {}) : teamJson(t, it->second.keys, it->second.spend));
  }
  return jsonResponse(200, json::object{{"data", std::move(data)}});
}

http::Response AdminApi::State::createTeam(Call& c) {
  const json::object body = parseBodyObject(c.body);
  store::Team t;
  applyTeamFields(t, body, true);
  if (db().findTeamByName(t.name)) throw FieldError("name", fmt::format("a team named \"{}\" exists", t.name));
  const auto id = db().createTeam(t);
  changed();
  return jsonResponse(201, teamView(requireTeam(std::to_string(id))));
}

http::Response AdminApi::State::updateTeam(Call& c) {
  auto t = requireTeam(c.params[0]);
  const json::object body = parseBodyObject(c.body);
  const std::string was = t.name;
  applyTeamFields(t, body, false);
  if (t.name != was)
    if (const auto other = db().findTeamByName(t.name); other && other->id != t.id)
      throw FieldError("name", fmt::format("a team named \"{}\" exists", t.name));
  if (!body.empty()) {
    if (!db().updateTeam(t)) throw HttpError{404, fmt::format("no team {}", t.id)};
    changed();
    t = requireTeam(std::to_string(t.id));
  }
  return jsonResponse(200, teamView(t));
}

http::Response AdminApi::State::deleteTeam(Call& c) {
  const auto t = requireTeam(c.params[0]);
  if (!db().deleteTeam(t.id)) throw HttpError{404, fmt::format("no team {}", t.id)};
  changed();
  return http::Response{bhttp::status::no_content, 11};
}

json::object AdminApi::State::keyView(const store::VirtualKey& k, std::int64_t now) {
  return keyJson(k, spendOf(db(), k.id, now), requestsOf(db(), k.id, now), now);
}

http::Response AdminApi::State::listKeys(Call& c) {
  const auto now = unixNowMs();
  std::string status;
  if (auto it = c.query.find("status"); it != c.query.end() && !it->second.empty()) {
    status = it->second;
    if (status != "active" && status != "revoked" && status != "expired")
      throw FieldError("status", "status takes active, revoked or expired; got \"" + status + "\"");
  }
  const auto scope = teamScope(c.caller);
  std::optional<std::int64_t> team;
  if (auto it = c.query.find("team_id"); it != c.query.end() && !it->second.empty())
    team = requireTeam(it->second, scope).id;
  const auto spend = db().spendByKey(utcDayStartMs(now), utcMonthStartMs(now));
  const auto requests = db().requestsByKey(utcDayStartMs(now), utcMonthStartMs(now));
  json::array data;
  for (const auto& k : db().listVirtualKeys()) {
    if (!status.empty() && status != keyStatusName(keyStatus(k, now))) continue;
    if (scope && !(k.team_id && scope->contains(*k.team_id))) continue;
    if (team && k.team_id != team) continue;
    const auto it = spend.find(k.id);
    const auto rit = requests.find(k.id);
    data.push_back(keyJson(k, it == spend.end() ? store::KeySpend{} : it->second,
                           rit == requests.end() ? store::KeyRequests{} : rit->second, now));
  }
  return jsonResponse(200, json::object{{"data", std::move(data)}});
}

http::Response AdminApi::State::createKey(Call& c) {
  const auto now = unixNowMs();
  json::object body = parseBodyObject(c.body);
  const auto scope = teamScope(c.caller);
  if (const auto* t = body.if_contains("team_id")) {
    body["team_id"] = teamIdOf(*t, scope);
  } else if (scope) {
    // A member of one team makes keys in it; of several, they say which.
    if (scope->size() != 1)
      throw FieldError("team_id", scope->empty() ? "you are a member of no team, so you cannot create keys"
                                                 : "you are a member of several teams: say which with team_id");
    body["team_id"] = *scope->begin();
  }
  store::VirtualKey key;
  applyKeyFields(key, body, true, now);
  std::string secret = issueKeySecret(key);
  const auto id = db().createVirtualKey(key);
  changed();
  const auto stored = requireKey(std::to_string(id));
  return jsonResponse(201, json::object{{"key", keyView(stored, now)}, {"secret", std::move(secret)}});
}

http::Response AdminApi::State::updateKey(Call& c) {
  const auto now = unixNowMs();
  auto key = requireKeyFor(c, c.params[0]);
  json::object body = parseBodyObject(c.body);
  if (const auto* t = body.if_contains("team_id")) body["team_id"] = teamIdOf(*t, teamScope(c.caller));
  applyKeyFields(key, body, false, now);
  if (!body.empty()) {
    if (!db().updateVirtualKey(key)) throw HttpError{404, fmt::format("no virtual key with id {}", key.id)};
    changed();
    key = requireKey(c.params[0]);
  }
  return jsonResponse(200, keyView(key, now));
}

http::Response AdminApi::State::revokeKey(Call& c) {
  const auto now = unixNowMs();
  auto key = requireKeyFor(c, c.params[0]);
  // Idempotent: revoking again keeps the first revocation time.
  if (!key.revoked_at_ms) {
    if (!db().revokeVirtualKey(key.id, now)) throw HttpError{404, fmt::format("no virtual key with id {}", key.id)};
    changed();
    key = requireKey(c.params[0]);
  }
  return jsonResponse(200, keyView(key, now));
}

http::Response AdminApi::State::deleteKey(Call& c) {
  const auto key = requireKeyFor(c, c.params[0]);
  if (!db().deleteVirtualKey(key.id)) throw HttpError{404, fmt::format("no virtual key with id {}", c.params[0])};
  changed();
  return http::Response{bhttp::status::no_content, 11};
}

// ---- channels ----

const config::ChannelConfig* AdminApi::State::declaredChannel(const config::Config* cfg, std::string_view name) {
  if (!cfg) return nullptr;
  for (const auto& ch : cfg->channels) {
    // store_id != 0: a store channel merged into the running snapshot, not one of the file's.
    if (ch.store_id == 0 && ch.name == name) return &ch;
  }
  return nullptr;
}

AdminApi::State::ChannelRef AdminApi::State::resolveChannel(const std::string& param) {
  ChannelRef ref;
  if (const auto id = pathId(param)) ref.stored = db().getChannel(*id);
  if (!ref.stored) {
    ref.cfg = config();
    ref.declared = declaredChannel(ref.cfg.get(), param);
    if (!ref.declared) ref.stored = db().findChannelByName(param);
  }
  if (!ref.stored && !ref.declared) throw HttpError{404, fmt::format("no channel with id or name \"{}\"", param)};
  return ref;
}

store::Channel AdminApi::State::requireStoredChannel(const std::string& param, std::string_view what) {
  auto ref = resolveChannel(param);
  if (ref.declared) {
    const auto& file = ref.cfg->source_path.empty() ? std::string("the built-in config") : ref.cfg->source_path;
    throw HttpError{409, fmt::format("channel \"{}\" is defined in the config file ({}, line {}); {} there and "
                                     "reload, or manage channels created through this API instead",
                                     ref.declared->name, file, ref.declared->line, what)};
  }
  return std::move(*ref.stored);
}

void AdminApi::State::checkNameFree(const std::string& name, std::int64_t self_id) {
  const auto cfg = config();
  if (const auto* declared = declaredChannel(cfg.get(), name))
    throw HttpError{409, fmt::format("the config file already defines a channel named \"{}\" (line {}); choose "
                                     "another name",
                                     name, declared->line)};
  if (const auto other = db().findChannelByName(name); other && other->id != self_id)
    throw HttpError{409,
                    fmt::format("a channel named \"{}\" already exists (id {}); choose another name", name, other->id)};
}

json::array AdminApi::State::channelKeys(std::int64_t channel_id) {
  const auto* box = secretBox();
  json::array keys;
  for (const auto& k : db().listUpstreamKeys(channel_id)) keys.push_back(upstreamKeyJson(k, box));
  return keys;
}

http::Response AdminApi::State::listChannels() {
  json::array data;
  const auto cfg = config();
  if (cfg) {
    for (const auto& ch : cfg->channels) {
      if (ch.store_id == 0) data.push_back(configChannelJson(ch));
    }
  }
  const auto* box = secretBox();
  std::map<std::int64_t, json::array> keys;
  for (const auto& k : db().listUpstreamKeys(std::nullopt)) keys[k.channel_id].push_back(upstreamKeyJson(k, box));
  for (const auto& ch : db().listChannels()) data.push_back(channelJson(ch, std::move(keys[ch.id]), box));
  return jsonResponse(200, json::object{{"data", std::move(data)}});
}

http::Response AdminApi::State::getChannel(Call& c) {
  auto ref = resolveChannel(c.params[0]);
  if (ref.declared) return jsonResponse(200, configChannelJson(*ref.declared));
  return jsonResponse(200, channelJson(*ref.stored, channelKeys(ref.stored->id), secretBox()));
}

http::Response AdminApi::State::createChannel(Call& c) {
  const json::object body = parseBodyObject(c.body);
  store::Channel ch;
  applyChannelFields(ch, body, true, channelSecretBox(body));
  checkNameFree(ch.name, 0);
  const auto id = db().createChannel(ch);
  changed();
  const auto stored = db().getChannel(id);
  if (!stored) throw HttpError{404, fmt::format("channel {} was deleted meanwhile", id)};
  return jsonResponse(201, channelJson(*stored, json::array{}, secretBox()));
}

http::Response AdminApi::State::updateChannel(Call& c) {
  auto ch = requireStoredChannel(c.params[0], "edit it");
  const json::object body = parseBodyObject(c.body);
  const std::string old_name = ch.name;
  applyChannelFields(ch, body, false, channelSecretBox(body));
  if (ch.name != old_name) checkNameFree(ch.name, ch.id);
  if (!body.empty()) {
    if (!db().updateChannel(ch)) throw HttpError{404, fmt::format("no channel with id {}", ch.id)};
    changed();
    auto stored = db().getChannel(ch.id);
    if (!stored) throw HttpError{404, fmt::format("no channel with id {}", ch.id)};
    ch = std::move(*stored);
  }
  return jsonResponse(200, channelJson(ch, channelKeys(ch.id), secretBox()));
}

http::Response AdminApi::State::deleteChannel(Call& c) {
  const auto ch = requireStoredChannel(c.params[0], "remove it");
  if (!db().deleteChannel(ch.id)) throw HttpError{404, fmt::format("no channel with id {}", ch.id)};
  changed();
  return http::Response{bhttp::status::no_content, 11};
}

// ---- upstream keys ----

store::UpstreamKey AdminApi::State::requireUpstreamKey(const store::Channel& ch, const std::string& param) {
  const auto id = pathId(param);
  auto key = id ? db().getUpstreamKey(*id) : std::nullopt;
  if (!key || key->channel_id != ch.id)
    throw HttpError{404, fmt::format("channel \"{}\" has no upstream key with id {}", ch.name, param)};
  return std::move(*key);
}

http::Response AdminApi::State::createUpstreamKey(Call& c) {
  const auto ch = requireStoredChannel(c.params[0], "its keys are listed");
  const auto& box = requireSecretBox();
  const json::object body = parseBodyObject(c.body);
  rejectUnknownFields(body, {"secret", "label"},
                      {"id", "channel_id", "masked", "state", "disabled_reason", "cooldown_until_ms", "created_at_ms",
                       "updated_at_ms"});
  const auto* secret = body.if_contains("secret");
  if (!secret) throw FieldError("secret", "secret is required: the provider's API key to add to this channel");
  store::UpstreamKey key;
  key.channel_id = ch.id;
  const std::string sub = channelSubscription(ch);
  key.secret_encrypted = box.seal(sub.empty() ? upstreamSecretField(*secret, ch.type) : subscriptionSecretField(*secret, sub));
  if (const auto* label = body.if_contains("label")) key.label = upstreamLabelField(*label);
  const auto id = db().createUpstreamKey(key);
  changed();
  const auto stored = requireUpstreamKey(ch, std::to_string(id));
  return jsonResponse(201, upstreamKeyJson(stored, &box));
}

http::Response AdminApi::State::updateUpstreamKey(Call& c) {
  const auto ch = requireStoredChannel(c.params[0], "its keys are listed");
  auto key = requireUpstreamKey(ch, c.params[1]);
  const json::object body = parseBodyObject(c.body);
  rejectUnknownFields(body, {"secret", "label"},
                      {"id", "channel_id", "masked", "state", "disabled_reason", "cooldown_until_ms", "created_at_ms",
                       "updated_at_ms"});
  if (const auto* label = body.if_contains("label")) key.label = upstreamLabelField(*label);
  if (const auto* secret = body.if_contains("secret")) {
    const std::string sub = channelSubscription(ch);
    const std::string plain = sub.empty() ? upstreamSecretField(*secret, ch.type) : subscriptionSecretField(*secret, sub);
    key.secret_encrypted = requireSecretBox().seal(plain);
  }
  if (!body.empty()) {
    if (!db().updateUpstreamKey(key)) throw HttpError{404, fmt::format("no upstream key with id {}", key.id)};
    changed();
    key = requireUpstreamKey(ch, c.params[1]);
  }
  return jsonResponse(200, upstreamKeyJson(key, secretBox()));
}

// ---- MCP servers ----

AdminApi::State::McpRef AdminApi::State::resolveMcpServer(const std::string& param) {
  McpRef ref;
  if (const auto id = pathId(param)) ref.stored = db().getMcpServer(*id);
  if (!ref.stored) {
    ref.cfg = config();
    ref.declared = declaredMcpServer(ref.cfg.get(), param);
    if (!ref.declared) ref.stored = db().findMcpServerByName(param);
  }
  if (!ref.stored && !ref.declared)
    throw HttpError{404, fmt::format("no MCP server with id or name \"{}\"", param.substr(0, 128))};
  return ref;
}

store::McpServer AdminApi::State::requireStoredMcpServer(const std::string& param, std::string_view what) {
  auto ref = resolveMcpServer(param);
  if (ref.declared) {
    const auto& file = ref.cfg->source_path.empty() ? std::string("the built-in config") : ref.cfg->source_path;
    throw HttpError{409, fmt::format("MCP server \"{}\" is defined in the config file ({}, line {}); {} there "
                                     "(mcp.servers) and reload, or manage servers added through this API instead",
                                     ref.declared->name, file, ref.declared->line, what)};
  }
  return std::move(*ref.stored);
}

void AdminApi::State::checkMcpNameFree(const std::string& name, std::int64_t self_id) {
  const auto cfg = config();
  if (const auto* declared = declaredMcpServer(cfg.get(), name))
    throw HttpError{409, fmt::format("the config file already defines an MCP server named \"{}\" (line {}); choose "
                                     "another name",
                                     name, declared->line)};
  if (const auto other = db().findMcpServerByName(name); other && other->id != self_id)
    throw HttpError{409, fmt::format("an MCP server named \"{}\" already exists (id {}); choose another name", name,
                                     other->id)};
}

bool AdminApi::State::mcpDraft(const store::McpServer& row, McpServerDraft& d) {
  d.name = row.name;
  d.url = row.url;
  d.timeout_ms = row.timeout_ms;
  boost::system::error_code ec;
  json::value command = sluice::parseJson(row.command, ec);
  if (!ec && command.is_array())
    for (const auto& a : command.as_array())
      if (a.is_string()) d.command.emplace_back(a.as_string());
  if (row.headers_encrypted.empty()) return true;
  const auto* box = secretBox();
  const auto plain = box ? box->open(row.headers_encrypted) : std::nullopt;
  json::value headers = plain ? sluice::parseJson(*plain, ec) : json::value();
  if (!plain || ec || !headers.is_object()) return false;
  for (const auto& [k, v] : headers.as_object())
    if (v.is_string()) d.headers[std::string(k)] = std::string(v.as_string());
  return true;
}

void AdminApi::State::sealMcpHeaders(const McpServerDraft& d, store::McpServer& row) {
  row.name = d.name;
  row.url = d.url;
  json::array command;
  for (const auto& a : d.command) command.emplace_back(a);
  row.command = json::serialize(command);
  row.timeout_ms = d.timeout_ms;
  if (d.headers.empty()) {
    row.headers_encrypted.clear();
    return;
  }
  const auto* box = secretBox();
  if (!box)
    throw HttpError{503,
                    "MCP server headers are stored encrypted and no secret key is configured: set the "
                    "SLUICE_SECRET_KEY environment variable (or store.secret_key in the config file) to a long "
                    "random string, then restart or reload"};
  json::object h;
  for (const auto& [k, v] : d.headers) h[k] = v;
  row.headers_encrypted = box->seal(json::serialize(h));
}

json::object AdminApi::State::storedMcpJson(const store::McpServer& row, const std::vector<mcp::ServerState>& live) {
  McpServerDraft d;
  const bool known = mcpDraft(row, d);
  return mcpServerJson(d, row.id, false, known, liveOf(live, row.name));
}

http::Response AdminApi::State::listMcpServers() {
  const auto live = mcpLive();
  json::array data;
  if (const auto cfg = config()) {
    for (const auto& s : cfg->mcp.servers)
      if (s.store_id == 0) data.push_back(mcpServerJson(draftOfConfig(s), std::nullopt, true, true, liveOf(live, s.name)));
  }
  for (const auto& row : db().listMcpServers()) data.push_back(storedMcpJson(row, live));
  return jsonResponse(200, json::object{{"data", std::move(data)}});
}

http::Response AdminApi::State::getMcpServer(Call& c) {
  auto ref = resolveMcpServer(c.params[0]);
  const auto live = mcpLive();
  if (ref.declared)
    return jsonResponse(200, mcpServerJson(draftOfConfig(*ref.declared), std::nullopt, true, true,
                                           liveOf(live, ref.declared->name)));
  return jsonResponse(200, storedMcpJson(*ref.stored, live));
}

http::Response AdminApi::State::createMcpServer(Call& c) {
  const json::object body = parseBodyObject(c.body);
  McpServerDraft d;
  applyMcpServerFields(d, body, true);
  checkMcpNameFree(d.name, 0);
  store::McpServer row;
  sealMcpHeaders(d, row);
  const auto id = db().createMcpServer(row);
  changed();
  const auto stored = db().getMcpServer(id);
  if (!stored) throw HttpError{404, fmt::format("MCP server {} was deleted meanwhile", id)};
  return jsonResponse(201, storedMcpJson(*stored, mcpLive()));
}

http::Response AdminApi::State::updateMcpServer(Call& c) {
  auto row = requireStoredMcpServer(c.params[0], "edit it");
  const json::object body = parseBodyObject(c.body);
  McpServerDraft d;
  if (!mcpDraft(row, d) && !body.contains("headers") && !body.contains("command"))
    throw HttpError{503, "the server's stored headers cannot be decrypted with the configured secret key; send "
                         "headers again to replace them"};
  applyMcpServerFields(d, body, false);
  if (d.name != row.name) checkMcpNameFree(d.name, row.id);
  if (!body.empty()) {
    sealMcpHeaders(d, row);
    if (!db().updateMcpServer(row)) throw HttpError{404, fmt::format("no MCP server with id {}", row.id)};
    changed();
    auto stored = db().getMcpServer(row.id);
    if (!stored) throw HttpError{404, fmt::format("no MCP server with id {}", row.id)};
    row = std::move(*stored);
  }
  return jsonResponse(200, storedMcpJson(row, mcpLive()));
}

http::Response AdminApi::State::deleteMcpServer(Call& c) {
  const auto row = requireStoredMcpServer(c.params[0], "remove it");
  if (!db().deleteMcpServer(row.id)) throw HttpError{404, fmt::format("no MCP server with id {}", row.id)};
  changed();
  return http::Response{bhttp::status::no_content, 11};
}

// ---- admin tokens and the audit log ----

store::AdminToken AdminApi::State::requireToken(const std::string& param) {
  const auto id = pathId(param);
  auto t = id ? db().getAdminToken(*id) : std::nullopt;
  if (!t) throw HttpError{404, fmt::format("no admin token with id {}", param)};
  return std::move(*t);
}

http::Response AdminApi::State::createToken(Call& c) {
  const auto now = unixNowMs();
  std::string secret;
  const json::object body = parseBodyObject(c.body);
  store::AdminToken t = newToken(body, c.caller.actor, now, secret);
  if (const auto* team = body.if_contains("team"); team && !team->is_null()) {
    const json::value id = teamIdOf(*team, {});
    t.team_id = id.as_int64();
  }
  for (const auto& other : db().listAdminTokens())
    if (other.name == t.name) throw FieldError("name", fmt::format("an admin token named \"{}\" exists", t.name));
  const auto id = db().createAdminToken(t);
  const auto stored = requireToken(std::to_string(id));
  return jsonResponse(201, json::object{{"token", tokenView(stored, now)}, {"secret", std::move(secret)}});
}

http::Response AdminApi::State::audit(Call& c) {
  auto& q = c.query;
  store::AuditQuery aq;
  if (q.contains("from")) aq.from_ms = intParam(q, "from", 0, 0, INT64_MAX);
  if (q.contains("to")) aq.to_ms = intParam(q, "to", 0, 0, INT64_MAX);
  if (q.contains("actor")) aq.actor = q["actor"];
  if (q.contains("action")) aq.action = q["action"];
  if (q.contains("target")) aq.target = q["target"];
  aq.limit = static_cast<std::size_t>(intParam(q, "limit", 100, 1, static_cast<std::int64_t>(store::kMaxLogPage)));
  aq.cursor = q["cursor"];
  auto page = db().listAudit(aq);
  json::array data;
  for (const auto& e : page.entries) data.push_back(auditView(e));
  json::value next = page.next_cursor.empty() ? json::value(nullptr) : json::value(page.next_cursor);
  return jsonResponse(200, json::object{{"data", std::move(data)}, {"next_cursor", std::move(next)}});
}

// ---- dispatch ----

http::Response AdminApi::State::serve(Op op, Call& c) {
  switch (op) {
    case Op::Logs:
      return logs(c);
    case Op::GetLog:
      return getLog(c);
    case Op::Usage:
      return usage(c);
    case Op::Stats:
      return stats(c);
    case Op::OpenApi: {
      http::Response res{bhttp::status::ok, 11};
      res.set(bhttp::field::content_type, "application/json");
      res.body() = std::string(openApiDocument());
      return res;
    }
    case Op::ListKeys:
      return listKeys(c);
    case Op::CreateKey:
      return createKey(c);
    case Op::GetKey: {
      const auto now = unixNowMs();
      return jsonResponse(200, keyView(requireKeyFor(c, c.params[0]), now));
    }
    case Op::UpdateKey:
      return updateKey(c);
    case Op::DeleteKey:
      return deleteKey(c);
    case Op::RevokeKey:
      return revokeKey(c);
    case Op::ListChannels:
      return listChannels();
    case Op::CreateChannel:
      return createChannel(c);
    case Op::GetChannel:
      return getChannel(c);
    case Op::UpdateChannel:
      return updateChannel(c);
    case Op::DeleteChannel:
      return deleteChannel(c);
    case Op::ListChannelKeys: {
      const auto ch = requireStoredChannel(c.params[0], "its keys are listed");
      return jsonResponse(200, json::object{{"data", channelKeys(ch.id)}});
    }
    case Op::CreateChannelKey:
      return createUpstreamKey(c);
    case Op::GetChannelKey: {
      const auto ch = requireStoredChannel(c.params[0], "its keys are listed");
      return jsonResponse(200, upstreamKeyJson(requireUpstreamKey(ch, c.params[1]), secretBox()));
    }
    case Op::UpdateChannelKey:
      return updateUpstreamKey(c);
    case Op::ListTokens: {
      const auto now = unixNowMs();
      json::array data;
      for (const auto& t : db().listAdminTokens()) data.push_back(tokenView(t, now));
      return jsonResponse(200, json::object{{"data", std::move(data)}});
    }
    case Op::CreateToken:
      return createToken(c);
    case Op::GetToken:
      return jsonResponse(200, tokenView(requireToken(c.params[0]), unixNowMs()));
    case Op::DeleteToken: {
      const auto t = requireToken(c.params[0]);
      if (!db().deleteAdminToken(t.id)) throw HttpError{404, fmt::format("no admin token with id {}", t.id)};
      return http::Response{bhttp::status::no_content, 11};
    }
    case Op::RevokeToken: {
      const auto t = requireToken(c.params[0]);
      const auto now = unixNowMs();
      db().revokeAdminToken(t.id, now);
      return jsonResponse(200, tokenView(requireToken(c.params[0]), now));
    }
    case Op::Audit:
      return audit(c);
    case Op::ListTeams:
      return listTeams(c);
    case Op::CreateTeam:
      return createTeam(c);
    case Op::GetTeam:
      return jsonResponse(200, teamView(requireTeam(c.params[0], teamScope(c.caller))));
    case Op::UpdateTeam:
      return updateTeam(c);
    case Op::DeleteTeam:
      return deleteTeam(c);
    case Op::DeleteChannelKey: {
      const auto ch = requireStoredChannel(c.params[0], "its keys are listed");
      const auto key = requireUpstreamKey(ch, c.params[1]);
      if (!db().deleteUpstreamKey(key.id)) throw HttpError{404, fmt::format("no upstream key with id {}", key.id)};
      changed();
      return http::Response{bhttp::status::no_content, 11};
    }
    case Op::ListMcpServers:
      return listMcpServers();
    case Op::CreateMcpServer:
      return createMcpServer(c);
    case Op::GetMcpServer:
      return getMcpServer(c);
    case Op::UpdateMcpServer:
      return updateMcpServer(c);
    case Op::DeleteMcpServer:
      return deleteMcpServer(c);
  }
  throw HttpError{404, "no such admin endpoint"};
}

namespace {

// Finds the route for method + path, or throws 404 (no such path) / 405 (path exists, other methods).
const Route& route(bhttp::verb method, const std::string& path, std::vector<std::string>& params) {
  const auto segs = segments(path);
  std::string allow;
  for (const auto& r : kRoutes) {
    if (!matches(r.path, segs, params)) continue;
    if (r.method == method) return r;
    if (!allow.empty()) allow += ", ";
    allow += std::string(bhttp::to_string(r.method));
  }
  if (!allow.empty())
    throw HttpError{
        405, fmt::format("/admin/api{} takes {}, not {}", path, allow, std::string(bhttp::to_string(method))), allow};
  throw HttpError{404, "no admin endpoint " + path + "; the endpoints are listed at /admin/api/openapi.json"};
}

}  // namespace

http::Response AdminApi::State::handleOnPool(bhttp::verb method, const std::string& path, const std::string& query,
                                             std::string body, Caller caller) {
  try {
    Call call{{}, parseQuery(query), std::move(body), std::move(caller)};
    const Route& r = route(method, path, call.params);
    return serve(r.op, call);
  } catch (const FieldError& e) {
    return errorResponse(400, e.what(), e.param());
  } catch (const HttpError& e) {
    auto res = errorResponse(e.status, e.message, "");
    if (!e.allow.empty()) res.set(bhttp::field::allow, e.allow);
    return res;
  } catch (const store::StoreError& e) {
    if (e.code() == store::StoreErrc::Conflict) return errorResponse(409, std::string("store: ") + e.what(), "");
    if (e.code() == store::StoreErrc::InvalidData) return errorResponse(400, std::string("store: ") + e.what(), "");
    store.reset();  // reconnect next time
    return errorResponse(503, std::string("store: ") + e.what(), "");
  } catch (const std::exception& e) {
    return errorResponse(500, std::string("admin API: ") + e.what(), "");
  }
}

AdminApi::AdminApi(std::string store_url) : state_(std::make_unique<State>()) {
  state_->url = std::move(store_url);
}

AdminApi::~AdminApi() {
  pool_.join();
}

void AdminApi::setConfigSource(std::function<std::shared_ptr<const config::Config>()> source) {
  state_->config_source = std::move(source);
}

void AdminApi::onChange(std::function<void()> callback) {
  state_->on_change = std::move(callback);
}

void AdminApi::setMcpSource(std::function<std::vector<mcp::ServerState>()> source) {
  state_->mcp_source = std::move(source);
}

std::vector<std::pair<std::string, std::string>> AdminApi::routes() {
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& r : kRoutes) out.emplace_back(std::string(bhttp::to_string(r.method)), std::string(r.path));
  return out;
}

net::awaitable<http::Response> AdminApi::handle(const http::Request& req, std::string path, std::string query,
                                                Caller caller) {
  // The database work runs on the admin thread; this coroutine resumes on the caller's worker.
  // (The task is a named local: GCC 12 destroys non-trivial temporaries inside a co_await
  // expression twice.)
  auto task = [this, method = req.method(), path = std::move(path), query = std::move(query), body = req.body(),
               caller = std::move(caller)]() mutable -> net::awaitable<http::Response> {
    co_return state_->handleOnPool(method, path, query, std::move(body), std::move(caller));
  };
  http::Response res = co_await net::co_spawn(pool_, std::move(task), net::use_awaitable);
  co_return res;
}

net::awaitable<AdminApi::TokenCheck> AdminApi::authenticateToken(std::string secret, std::string address) {
  auto task = [this, secret = std::move(secret), address = std::move(address)]() -> net::awaitable<TokenCheck> {
    TokenCheck out;
    try {
      const auto t = state_->db().findAdminTokenByHash(pipeline::hashVirtualKeySecret(secret));
      const auto now = unixNowMs();
      const auto role = t ? parseRole(t->role) : std::nullopt;
      if (!t || !role)
        out.why = "unknown admin token";
      else if (t->revoked_at_ms)
        out.why = fmt::format("the admin token \"{}\" was revoked", t->name);
      else if (t->expires_at_ms && *t->expires_at_ms <= now)
        out.why = fmt::format("the admin token \"{}\" has expired", t->name);
      else if (*role == Role::Member && !t->team_id)
        out.why = fmt::format("the member token \"{}\" has no team any more (its team was deleted)", t->name);
      else {
        Caller c;
        c.role = *role;
        c.actor = "token:" + t->name;
        c.address = address;
        c.team_id = t->team_id;  // AdminGate marks the kind
        out.caller = std::move(c);
      }
    } catch (const std::exception& e) {
      state_->store.reset();  // reconnect next time
      out.why = std::string("the store cannot check admin tokens now: ") + e.what();
    }
    co_return out;
  };
  TokenCheck check = co_await net::co_spawn(pool_, std::move(task), net::use_awaitable);
  co_return check;
}

net::awaitable<bool> AdminApi::appendAudit(store::AuditEntry entry) {
  auto task = [this, entry = std::move(entry)]() -> net::awaitable<bool> {
    try {
      state_->db().appendAudit(entry);
      co_return true;
    } catch (const std::exception& e) {
      state_->store.reset();
      spdlog::error("audit: could not record {} {} by {}: {}", entry.method, entry.path, entry.actor, e.what());
      co_return false;
    }
  };
  const bool ok = co_await net::co_spawn(pool_, std::move(task), net::use_awaitable);
  co_return ok;
}

}  // namespace sluice::admin
