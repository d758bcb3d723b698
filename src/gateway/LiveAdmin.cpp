#include "gateway/LiveAdmin.hpp"

#include <cmath>

#include <fmt/format.h>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>
#include <boost/json/value_from.hpp>

#include <vector>

#include "cache/ResponseCache.hpp"
#include "config/Config.hpp"
#include "core/Clock.hpp"
#include "core/JsonText.hpp"
#include "gateway/ControlPlane.hpp"
#include "gateway/Probe.hpp"
#include "gateway/Snapshot.hpp"
#include "redact/Rules.hpp"
#include "routing/Router.hpp"
#include "store/Store.hpp"

namespace sluice::gateway {

namespace net = boost::asio;
namespace bhttp = boost::beast::http;
namespace json = boost::json;

namespace {

http::Response adminJson(int status, const json::value& v) {
  http::Response res{static_cast<bhttp::status>(status), 11};
  res.set(bhttp::field::content_type, "application/json");
  res.body() = json::serialize(v);
  return res;
}
http::Response adminError(int status, std::string message, const char* param = nullptr) {
  json::object e{{"message", std::move(message)}, {"type", status >= 500 ? "server_error" : "invalid_request_error"}};
  if (param) e["param"] = param;
  return adminJson(status, json::object{{"error", std::move(e)}});
}

// The moving average of a time to first byte in ms, or null before the first sample.
json::value ewmaTtfb(const routing::Ewma& e) {
  const double t = e.ttfb_ms.load(std::memory_order_relaxed);
  return t < 0 ? json::value(nullptr) : json::value(std::round(t * 1000) / 1000);
}

json::object keyStatus(const routing::Channel& ch, const routing::UpstreamKey& k) {
  auto now = routing::nowMs();
  auto until = k.health->cooldown_until_ms.load();
  const char* state = k.health->disabled.load() ? "disabled" : until > now ? "cooling" : "active";
  json::value cooldown = until > now ? json::value(unixNowMs() + (until - now)) : json::value(nullptr);
  return json::object{{"ref", k.ref},
                      {"channel", ch.cfg.name},
                      {"masked", k.id},
                      {"source", ch.cfg.store_id ? "store" : "config"},
                      {"store_id", k.store_id ? json::value(k.store_id) : json::value(nullptr)},
                      {"state", state},
                      {"manual", k.health->manual.load()},
                      {"cooldown_until_ms", std::move(cooldown)},
                      {"reason", k.health->why()},
                      {"subscription", ch.cfg.subscription.empty() ? json::value(nullptr) : json::value(ch.cfg.subscription)},
                      {"usage", k.health->usage_permille.load() < 0 ? json::value(nullptr)
                                                                    : json::value(k.health->usage_permille.load() / 1000.0)},
                      {"successes", k.health->successes.load()},
                      {"failures", k.health->failures.load()},
                      {"ttfb_ewma_ms", ewmaTtfb(k.health->latency)},
                      {"error_ewma", k.health->latency.errors.load(std::memory_order_relaxed)},
                      {"channel_ttfb_ewma_ms", ewmaTtfb(ch.health->latency)},
                      {"channel_error_ewma", ch.health->latency.errors.load(std::memory_order_relaxed)}};
}

// The upstream key `ref` names, with its channel; both null when none does.
std::pair<const routing::Channel*, const routing::UpstreamKey*> findKey(const Snapshot& snap, std::string_view ref) {
  for (const auto& c : snap.router->channels())
    for (const auto& k : c->keys)
      if (k.ref == ref) return {c.get(), &k};
  return {nullptr, nullptr};
}

}  // namespace

LiveAdmin::LiveAdmin(Host host) : host_(std::move(host)) {}

LiveAdmin::~LiveAdmin() {
  ops_pool_.join();
}

// Runs blocking store work on the gateway's own store thread (never a worker's).
template <class F>
net::awaitable<std::optional<std::string>> LiveAdmin::onStoreThread(F f) {
  auto task = [this, f = std::move(f)]() -> net::awaitable<std::optional<std::string>> {
    try {
      if (!ops_store_) ops_store_ = store::Store::open(host_.control.fileConfig()->store.url);
      f(*ops_store_);
      co_return std::nullopt;
    } catch (const std::exception& e) {
      ops_store_.reset();
      co_return std::string(e.what());
    }
  };
  std::optional<std::string> err = co_await net::co_spawn(ops_pool_, std::move(task), net::use_awaitable);
  co_return err;
}

net::awaitable<std::optional<http::Response>> LiveAdmin::handle(const Snapshot& snap, upstream::Pool& pool,
                                                                const http::Request& req, const std::string& path) {
  const bool get = req.method() == bhttp::verb::get, post = req.method() == bhttp::verb::post;
  if (path == "/config") {
    if (!get) co_return adminError(405, "/admin/api/config takes GET");
    auto cfg = host_.control.fileConfig();
    co_return adminJson(200,
                        json::object{{"yaml", config::describeConfig(*cfg)},
                                     {"source", host_.config_path.empty() ? "embedded default" : host_.config_path}});
  }
  if (path == "/reload") {
    if (!post) co_return adminError(405, "/admin/api/reload takes POST");
    auto task = [this]() -> net::awaitable<std::pair<bool, std::string>> { co_return host_.reload("admin API"); };
    auto [ok, message] = co_await net::co_spawn(host_.control_ioc, std::move(task), net::use_awaitable);
    co_return adminJson(ok ? 200 : 400, json::object{{"ok", ok}, {"message", message}});
  }
  if (path == "/model-discovery") {
    // Model discovery: per channel whose `models` hold globs, the provider's models they match.
    if (!get) co_return adminError(405, "/admin/api/model-discovery takes GET");
    json::array data;
    for (const auto& ch : snap.router->channels()) {
      if (!ch->discovers()) continue;
      const routing::DiscoveredModels d = ch->health->discovered();
      json::array globs, models;
      for (const auto& m : ch->cfg.models)
        if (routing::isGlob(m)) globs.emplace_back(m);
      for (const auto& m : d.models) models.emplace_back(m);
      data.push_back(json::object{
          {"channel", ch->cfg.name},
          {"globs", std::move(globs)},
          {"models", std::move(models)},
          {"refreshed_at_ms", d.refreshed_unix_ms ? json::value(d.refreshed_unix_ms) : json::value(nullptr)},
          {"error", d.error.empty() ? json::value(nullptr) : json::value(d.error)}});
    }
    co_return adminJson(200, json::object{{"data", std::move(data)},
                                          {"interval_ms", snap.cfg->routing.discovery_interval.count()}});
  }
  if (path == "/pricing") {
    if (!get) co_return adminError(405, "/admin/api/pricing takes GET");
    json::array models;
    const auto& overrides = snap.cfg->pricing;
    for (const auto& [model, price] : snap.prices->entries()) {
      json::object m{{"model", model}, {"input_per_mtok", price.input}, {"output_per_mtok", price.output}};
      if (price.cached_input >= 0) m["cached_input_per_mtok"] = price.cached_input;
      if (price.cache_write >= 0) m["cache_write_per_mtok"] = price.cache_write;
      if (price.reasoning >= 0) m["reasoning_per_mtok"] = price.reasoning;
      m["source"] = overrides.contains(model) ? "config" : "shipped";
      models.push_back(std::move(m));
    }
    co_return adminJson(200, json::object{{"models", std::move(models)}});
  }
  if (path == "/settings") {
    // The protect-and-save stages as this instance runs them. PATCH switches them at run time
    // for every instance (kept in the store; null returns a switch to the config file's value).
    if (!get && req.method() != bhttp::verb::patch) co_return adminError(405, "/admin/api/settings takes GET or PATCH");
    if (!get) {
      boost::system::error_code ec;
      auto body = sluice::parseJson(req.body(), ec);
      if (ec || !body.is_object())
        co_return adminError(400, "the body must be a JSON object such as {\"cache\": {\"enabled\": false}}");
      std::vector<std::pair<std::string, std::optional<std::string>>> writes;
      for (const auto& [section, v] : body.as_object()) {
        const std::string sec(section);
        const char* field = sec == "screening" ? "action" : "enabled";
        if (sec != "cache" && sec != "redaction" && sec != "screening" && sec != "guardrail")
          co_return adminError(400, "unknown setting \"" + sec + "\"; valid: cache, redaction, screening, guardrail",
                               sec.c_str());
        if (!v.is_object())
          co_return adminError(400, sec + " must be an object such as {\"" + field + "\": ...}", sec.c_str());
        for (const auto& [k, val] : v.as_object()) {
          std::string name = sec + "." + std::string(k);
          if (sec == "screening" && std::string_view(k) == "enabled") {
            // A switch's view of screening: on is the config's action (block when that is off).
            if (!val.is_bool() && !val.is_null())
              co_return adminError(400, "screening.enabled must be true, false or null", name.c_str());
            const auto configured = snap.safety->screenDefault();
            const char* action = val.is_null()                             ? nullptr
                                 : !val.as_bool()                          ? "off"
                                 : configured == config::ScreenAction::Off ? "block"
                                                                           : config::screenActionName(configured);
            writes.emplace_back("screening.action", action ? std::optional<std::string>(action) : std::nullopt);
            continue;
          }
          if (std::string_view(k) != field)
            co_return adminError(400, fmt::format("unknown setting \"{}\"; {} takes \"{}\"", name, sec, field),
                                 name.c_str());
          if (val.is_null()) {
            writes.emplace_back(name, std::nullopt);
          } else if (sec == "screening") {
            if (!val.is_string() || !config::parseScreenAction(val.as_string()))
              co_return adminError(400, "screening.action must be \"off\", \"log\", \"warn\", \"block\" or null",
                                   name.c_str());
            writes.emplace_back(name, std::string(val.as_string()));
          } else {
            if (!val.is_bool()) co_return adminError(400, name + " must be true, false or null", name.c_str());
            writes.emplace_back(name, val.as_bool() ? "true" : "false");
          }
        }
      }
      if (!snap.safety->webhook())
        for (const auto& w : writes)
          if (w.first == "guardrail.enabled" && w.second == "true")
            co_return adminError(400, "no guardrail webhook is configured: set guardrail.url in the config file",
                                 "guardrail.enabled");
      // Written and then waited for on the store thread, so the worker never blocks.
      auto write = [this, writes](store::Store& st) {
        for (const auto& [name, value] : writes) {
          if (value)
            st.putGatewaySetting(name, *value);
          else
            st.deleteGatewaySetting(name);
        }
        host_.control.refreshNowAndWait();
      };
      std::optional<std::string> err = co_await onStoreThread(std::move(write));
      if (err) co_return adminError(503, "store: " + *err);
    }
    auto cur = host_.control.current();
    const auto& c = *cur->cfg;
    const auto& sw = cur->switches;
    auto source = [](bool overridden) { return overridden ? "admin" : "config"; };
    const auto stats = host_.cache ? host_.cache->stats() : cache::CacheStats{};
    json::object cacheJ{{"enabled", cur->cacheOn()},
                        {"source", source(sw.cache.has_value())},
                        {"backend", host_.cache ? host_.cache->backendName() : "none"},
                        {"ttl_ms", c.cache.ttl.count()},
                        {"max_bytes", c.cache.max_bytes},
                        {"shared", c.cache.shared},
                        {"stats", json::object{{"hits", stats.hits},
                                               {"misses", stats.misses},
                                               {"writes", stats.writes},
                                               {"evictions", stats.evictions},
                                               {"entries", stats.entries},
                                               {"bytes", stats.bytes},
                                               {"errors", stats.errors}}}};
    json::array rules;
    if (cur->safety->rules())
      for (const auto& r : cur->safety->rules()->rules())
        rules.push_back(json::object{{"name", r.name}, {"action", redact::actionName(r.action)}});
    json::object redactionJ{{"enabled", cur->redactionOn()},
                            {"source", source(sw.redaction.has_value())},
                            {"can_encrypt", cur->safety->canEncrypt()},
                            {"rules", std::move(rules)}};
    const auto action = cur->screeningDefault();
    json::object screeningJ{{"enabled", action != config::ScreenAction::Off},
                            {"action", config::screenActionName(action)},
                            {"source", source(sw.screening.has_value())},
                            {"threshold", cur->safety->threshold()},
                            {"deny", json::value_from(c.screening.deny)}};
    json::object guardrailJ{
        {"enabled", cur->guardrailOn()},
        {"source", source(sw.guardrail.has_value())},
        {"endpoint", cur->safety->webhook() ? cur->safety->webhook()->endpoint.pool_key : std::string()},
        {"on_failure", c.guardrail.fail_open ? "fail_open" : "fail_closed"},
        {"timeout_ms", c.guardrail.timeout.count()}};
    co_return adminJson(200, json::object{{"cache", std::move(cacheJ)},
                                          {"redaction", std::move(redactionJ)},
                                          {"screening", std::move(screeningJ)},
                                          {"guardrail", std::move(guardrailJ)}});
  }
  static constexpr std::string_view kKeys = "/upstream-keys";
  if (!path.starts_with(kKeys)) co_return std::nullopt;
  if (path == kKeys) {
    if (!get) co_return adminError(405, "/admin/api/upstream-keys takes GET");
    json::array data;
    for (const auto& ch : snap.router->channels())
      for (const auto& k : ch->keys) data.push_back(keyStatus(*ch, k));
    co_return adminJson(200, json::object{{"data", std::move(data)}});
  }
  // /upstream-keys/{ref}/{enable|disable|probe}
  std::string_view rest = std::string_view(path).substr(kKeys.size());
  auto slash = rest.find('/', 1);
  if (rest.size() < 2 || rest[0] != '/' || slash == std::string_view::npos)
    co_return adminError(404, "no admin endpoint " + path);
  std::string ref(rest.substr(1, slash - 1));
  std::string action(rest.substr(slash + 1));
  if (action != "enable" && action != "disable" && action != "probe")
    co_return adminError(404, "no admin endpoint " + path);
  if (!post) co_return adminError(405, "/admin/api/upstream-keys/{ref}/" + action + " takes POST");
  const auto [ch, key] = findKey(snap, ref);
  if (!key)
    co_return adminError(404, "no upstream key with ref \"" + ref + "\" (GET /admin/api/upstream-keys lists them)",
                         "ref");

  if (action == "probe") {
    ProbeResult pr = co_await probeKey(pool, *ch, *key, std::chrono::milliseconds(10'000), snap.scrubber);
    applyProbe(*ch, *key, pr);
    json::object o{{"ok", pr.ok},
                   {"status", pr.status},
                   {"latency_ms", pr.latency_ms},
                   {"message", pr.message},
                   {"key", keyStatus(*ch, *key)}};
    co_return adminJson(200, o);
  }
  std::string reason;
  if (action == "disable") {
    boost::system::error_code ec;
    auto body = sluice::parseJson(req.body().empty() ? std::string_view("{}") : std::string_view(req.body()), ec);
    if (ec || !body.is_object())
      co_return adminError(400, "the body must be a JSON object such as {\"reason\": \"...\"}");
    if (const auto* r = body.as_object().if_contains("reason")) {
      if (!r->is_string()) co_return adminError(400, "reason must be a string", "reason");
      reason = std::string(r->as_string()).substr(0, 500);
    }
    if (reason.empty()) reason = "disabled by hand";
  }
  if (key->store_id) {
    const std::int64_t id = key->store_id;
    const bool disable = action == "disable";
    auto write = [id, disable, reason](store::Store& st) {
      st.setUpstreamKeyState(id, disable ? store::UpstreamKeyState::Disabled : store::UpstreamKeyState::Active, reason,
                             std::nullopt);
    };
    std::optional<std::string> err = co_await onStoreThread(std::move(write));
    if (err) co_return adminError(503, "store: " + *err);
    host_.control.poke();
  }
  if (action == "disable") {
    key->health->disable(reason);
    key->health->manual.store(true);
  } else {
    key->health->enable();
  }
  co_return adminJson(200, keyStatus(*ch, *key));
}

json::value LiveAdmin::upstreamKeyStatus(const Snapshot& snap, std::string_view ref) {
  const auto [ch, key] = findKey(snap, ref);
  return key ? json::value(keyStatus(*ch, *key)) : json::value(nullptr);
}

}  // namespace sluice::gateway
