#include "gateway/ControlPlane.hpp"

#include "cloud/SigV4.hpp"
#include "gateway/Chain.hpp"

#include <boost/json/parse.hpp>
#include <boost/json/value.hpp>
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>

#include "core/Clock.hpp"
#include "core/JsonText.hpp"
#include "cloud/Subscription.hpp"
#include "core/SecretBox.hpp"
#include "pipeline/KeyTable.hpp"
#include "pipeline/Pricing.hpp"

namespace sluice::gateway {

namespace json = boost::json;
using Clock = std::chrono::steady_clock;

namespace {

std::map<std::string, std::string> jsonStringMap(const json::value* v) {
  std::map<std::string, std::string> out;
  if (!v || !v->is_object()) return out;
  for (const auto& [k, e] : v->as_object())
    if (e.is_string()) out.emplace(std::string(k), std::string(e.as_string()));
  return out;
}

std::int64_t jsonInt(const json::object& o, std::string_view name) {
  const auto* v = o.if_contains(name);
  return v && v->is_int64() && v->as_int64() > 0 ? v->as_int64() : 0;
}

// A store channel as the router takes it; false (with `why`) when it cannot be used.
bool channelFromStore(const store::Channel& c, const std::vector<store::UpstreamKey>& keys, const SecretBox* box,
                      config::ChannelConfig& out, std::string& why) {
  auto type = config::parseChannelType(c.type);
  if (!type) {
    why = "unknown type " + c.type;
    return false;
  }
  out.name = c.name;
  out.type = *type;
  out.base_url = c.base_url;
  upstream::Endpoint probe;
  if (auto err = upstream::parseBaseUrl(c.base_url, probe); !err.empty()) {
    why = "base_url: " + err;
    return false;
  }
  out.models = jsonStringArray(c.models);
  out.priority = static_cast<int>(c.priority);
  out.weight = static_cast<int>(c.weight);
  boost::system::error_code ec;
  auto headers = sluice::parseJson(c.headers, ec);
  if (!ec) out.headers = jsonStringMap(&headers);
  auto settings = sluice::parseJson(c.settings, ec);
  if (!ec && settings.is_object()) {
    const auto& o = settings.as_object();
    out.model_map = jsonStringMap(o.if_contains("model_map"));
    if (const auto* v = o.if_contains("api_version"); v && v->is_string()) out.api_version = std::string(v->as_string());
    if (const auto* v = o.if_contains("region"); v && v->is_string()) out.region = std::string(v->as_string());
    if (const auto* v = o.if_contains("subscription"); v && v->is_string() && cloud::parseSubscriptionKind(v->as_string()))
      out.subscription = std::string(v->as_string());
    if (const auto* v = o.if_contains("token_url"); v && v->is_string()) out.token_url = std::string(v->as_string());
    if (const auto* v = o.if_contains("project"); v && v->is_string()) out.project = std::string(v->as_string());
    if (const auto* v = o.if_contains("location"); v && v->is_string()) out.location = std::string(v->as_string());
    if (const auto* v = o.if_contains("tenant_id"); v && v->is_string()) out.tenant_id = std::string(v->as_string());
    if (const auto* v = o.if_contains("client_id"); v && v->is_string()) out.client_id = std::string(v->as_string());
    if (const auto* v = o.if_contains("client_secret"); v && v->is_string() && !out.client_id.empty()) {
      // Sealed as the upstream keys are; without it the channel serves with its api-key keys only.
      std::optional<std::string> secret = box ? box->open(v->as_string()) : std::nullopt;
      if (secret) {
        out.client_secret = std::move(*secret);
      } else {
        why = box ? "its Entra client_secret cannot be decrypted with store.secret_key (was it changed?)"
                  : "its Entra client_secret cannot be decrypted: store.secret_key / SLUICE_SECRET_KEY is not set";
        out.client_id.clear();
      }
    }
    if (out.type != config::ChannelType::Azure || out.client_secret.empty()) {
      out.client_id.clear();  // not a usable Entra credential: no Entra key
      out.tenant_id.clear();
    }
    out.rpm = jsonInt(o, "rpm");
    out.tpm = jsonInt(o, "tpm");
    out.max_concurrent = jsonInt(o, "max_concurrent");
    out.key_rpm = jsonInt(o, "key_rpm");
    out.key_tpm = jsonInt(o, "key_tpm");
  }
  const auto overrides = pipeline::readProtectOverrides(c.settings);
  out.screening = overrides.screening;
  out.cache = overrides.cache;
  out.cache_ttl = overrides.cache_ttl;
  out.store_id = c.id;
  if (out.type == config::ChannelType::Bedrock) {
    if (out.region.empty()) out.region = config::regionFromBedrockHost(out.base_url);
    if (out.region.empty()) {
      why = "a bedrock channel needs a region (its base_url is not bedrock-runtime.REGION.amazonaws.com)";
      return false;
    }
  }
  if (!out.subscription.empty()) {
    const auto kind = *cloud::parseSubscriptionKind(out.subscription);
    const auto want = kind == cloud::SubscriptionKind::Claude ? config::ChannelType::Anthropic : config::ChannelType::OpenAI;
    if (out.type != want) {
      why = fmt::format("a {} subscription is a channel of type {}", out.subscription, config::channelTypeName(want));
      return false;
    }
    if (out.token_url.empty()) out.token_url = std::string(cloud::defaultTokenUrl(kind));
  }
  if (out.type == config::ChannelType::Vertex) {
    if (!config::validGcpProject(out.project) || !config::validGcpLocation(out.location)) {
      why = "a vertex channel needs a valid project and location";
      return false;
    }
    if (out.base_url.empty())
      out.base_url = out.location == "global" ? std::string("https://aiplatform.googleapis.com")
                                              : "https://" + out.location + "-aiplatform.googleapis.com";
  }
  for (const auto& k : keys) {
    if (k.channel_id != c.id) continue;
    std::optional<std::string> secret = box ? box->open(k.secret_encrypted) : std::nullopt;
    if (!secret) {
      why = box ? fmt::format("upstream key {} cannot be decrypted with store.secret_key (was it changed?)", k.id)
                : fmt::format("upstream key {} cannot be decrypted: store.secret_key / SLUICE_SECRET_KEY is not set", k.id);
      continue;  // the channel still serves with its other keys
    }
    if (out.type == config::ChannelType::Vertex) {
      try {
        *secret = config::vertexKeyJson(*secret, /*allow_path=*/false);
      } catch (const std::exception& e) {
        why = fmt::format("upstream key {}: {}", k.id, e.what());
        continue;
      }
    }
        if (out.type == config::ChannelType::Bedrock && !cloud::parseAwsKey(*secret)) {
      why = fmt::format("upstream key {} is not ACCESS_KEY_ID:SECRET_ACCESS_KEY[:SESSION_TOKEN] (not shown: a secret)", k.id);
      continue;
    }
    if (!out.subscription.empty() &&
        !cloud::parseCredential(*cloud::parseSubscriptionKind(out.subscription), *secret, nullptr)) {
      why = fmt::format("upstream key {} is not a {} credential (not shown: a secret)", k.id, out.subscription);
      continue;
    }
    out.keys.push_back(std::move(*secret));
    out.key_store_ids.push_back(k.id);
  }
  return true;
}

// An MCP server of the store as the hub takes it; false (and `why`) when it cannot serve: its
// headers do not decrypt, or the row is not one the admin API would have written.
bool mcpServerFromStore(const store::McpServer& m, const SecretBox* box, config::McpServerConfig& out,
                        std::string& why) {
  out.name = m.name;
  out.url = m.url;
  out.timeout = std::chrono::milliseconds(std::max<std::int64_t>(m.timeout_ms, 1));
  out.store_id = m.id;
  boost::system::error_code ec;
  auto command = sluice::parseJson(m.command, ec);
  if (!ec && command.is_array()) {
    for (const auto& a : command.as_array())
      if (a.is_string()) out.command.emplace_back(a.as_string());
  }
  if (out.url.empty() == out.command.empty()) {
    why = "it has neither a url nor a command";
    return false;
  }
  if (!m.headers_encrypted.empty()) {
    std::optional<std::string> plain = box ? box->open(m.headers_encrypted) : std::nullopt;
    if (!plain) {
      why = box ? "its headers cannot be decrypted with store.secret_key (was it changed?)"
                : "its headers cannot be decrypted: store.secret_key / SLUICE_SECRET_KEY is not set";
      return false;
    }
    auto headers = sluice::parseJson(*plain, ec);
    if (ec) {
      why = "its headers are not a JSON object";
      return false;
    }
    out.headers = jsonStringMap(&headers);
  }
  return true;
}

}  // namespace

ControlPlane::ControlPlane(std::shared_ptr<const config::Config> file_cfg, cluster::Limiter& limiter,
                           routing::HealthRegistry& health)
    : limiter_(limiter), health_(health), file_cfg_(std::move(file_cfg)), shared_health_(file_cfg_->redis.url) {}

ControlPlane::~ControlPlane() { stop(); }

std::shared_ptr<const Snapshot> ControlPlane::initial() {
  refreshFromStore(true);
  std::lock_guard lk(publish_mu_);
  current_ = makeSnapshot(file_cfg_, store_state_);
  return current_;
}

void ControlPlane::start(Publish publish) {
  {
    std::lock_guard lk(publish_mu_);
    publish_ = std::move(publish);
  }
  thread_ = std::thread([this] { refreshLoop(); });
}

void ControlPlane::stop() {
  {
    std::lock_guard lk(refresh_mu_);
    refresh_stop_ = true;
  }
  refresh_cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

std::shared_ptr<const config::Config> ControlPlane::fileConfig() const {
  std::lock_guard lk(publish_mu_);
  return file_cfg_;
}

std::shared_ptr<const Snapshot> ControlPlane::current() const {
  std::lock_guard lk(publish_mu_);
  return current_;
}

std::shared_ptr<const Snapshot> ControlPlane::applyConfig(std::shared_ptr<const config::Config> cfg) {
  std::lock_guard lk(publish_mu_);
  auto next = makeSnapshot(cfg, store_state_);
  file_cfg_ = std::move(cfg);
  publish(next);
  return next;
}

// The running state: the config file's channels plus the store's, the virtual keys, prices.
std::shared_ptr<const Snapshot> ControlPlane::makeSnapshot(const std::shared_ptr<const config::Config>& fileCfg,
                                                           const StoreState& st) {
  auto merged = std::make_shared<config::Config>(*fileCfg);
  std::unique_ptr<SecretBox> box;
  if (!fileCfg->store.secret_key.empty()) box = std::make_unique<SecretBox>(fileCfg->store.secret_key);
  std::set<std::string> problems;
  for (const auto& c : st.channels) {
    if (!c.enabled) continue;
    bool clash = std::any_of(fileCfg->channels.begin(), fileCfg->channels.end(),
                             [&](const config::ChannelConfig& f) { return f.name == c.name; });
    config::ChannelConfig cc;
    std::string why;
    if (clash) {
      why = "a channel of the config file has the same name";
    } else if (channelFromStore(c, st.upstream_keys, box.get(), cc, why) || why.empty()) {
      merged->channels.push_back(std::move(cc));
    }
    if (!why.empty()) problems.insert(fmt::format("store channel \"{}\": {}", c.name, why));
  }
  for (const auto& m : st.mcp_servers) {
    std::string why;
    config::McpServerConfig mc;
    if (std::any_of(fileCfg->mcp.servers.begin(), fileCfg->mcp.servers.end(),
                    [&](const config::McpServerConfig& f) { return f.name == m.name; })) {
      why = "an MCP server of the config file has the same name";
    } else if (mcpServerFromStore(m, box.get(), mc, why)) {
      merged->mcp.servers.push_back(std::move(mc));
    }
    if (!why.empty()) problems.insert(fmt::format("store MCP server \"{}\": {}", m.name, why));
  }
  for (const auto& p : problems)
    if (!reported_problems_.contains(p)) spdlog::warn("{}", p);
  reported_problems_ = std::move(problems);
  auto s = std::make_shared<Snapshot>();
  std::shared_ptr<const config::Config> cfg = std::move(merged);
  s->router = std::make_unique<routing::Router>(cfg, health_);
  s->cfg = std::move(cfg);
  s->keys = std::make_shared<const pipeline::KeyTable>(st.virtual_keys, st.teams);
  s->prices = std::make_shared<const pipeline::PriceTable>(s->cfg->pricing);
  s->scrubber = pipeline::SecretScrubber::fromConfig(*s->cfg);
  // Rules, detector and webhook come from the config file alone: rebuilt when it changes, not
  // on every store refresh (the cipher cache survives those).
  if (safety_for_ != fileCfg || !safety_) {
    safety_ = pipeline::Safety::build(*fileCfg);
    safety_for_ = fileCfg;
  }
  s->safety = safety_;
  s->switches = switchesFrom(st.gateway_settings);
  s->stages = buildStages(*s);
  // A key disabled by hand in the store is disabled here; one enabled there comes back.
  std::map<std::int64_t, const store::UpstreamKey*> byId;
  for (const auto& k : st.upstream_keys) byId[k.id] = &k;
  for (const auto& ch : s->router->channels()) {
    for (const auto& k : ch->keys) {
      if (k.store_id == 0) continue;
      auto it = byId.find(k.store_id);
      if (it == byId.end()) continue;
      if (it->second->state == store::UpstreamKeyState::Disabled) {
        if (!k.health->disabled.load()) k.health->disable(it->second->disabled_reason);
        k.health->manual.store(true);
      } else if (k.health->manual.load()) {
        k.health->enable();
      }
    }
  }
  return s;
}

void ControlPlane::publish(const std::shared_ptr<const Snapshot>& next) {
  current_ = next;
  if (publish_) publish_(next);
}

void ControlPlane::poke() {
  {
    std::lock_guard lk(refresh_mu_);
    ++poke_seq_;
  }
  refresh_cv_.notify_all();
}

// After an admin write: the change is in force on this instance when this returns (or after
// a few seconds if the store does not answer), so a key created is usable at once and a key
// revoked is refused at once.
void ControlPlane::refreshNowAndWait() {
  std::unique_lock lk(refresh_mu_);
  const auto mine = ++poke_seq_;
  refresh_cv_.notify_all();
  refresh_cv_.wait_for(lk, std::chrono::seconds(3), [&] { return done_seq_ >= mine || refresh_stop_; });
}

// Reads the control plane from the store when it changed. True when the snapshot must be
// rebuilt. Refresher thread only (and the constructor, before it starts).
bool ControlPlane::refreshFromStore(bool force) {
  try {
    if (!cp_store_) {
      cp_store_ = store::Store::open(file_cfg_->store.url);
      cp_store_->migrate();
    }
    std::string stamp = cp_store_->controlPlaneStamp();
    if (!store_down_since_.empty()) {
      spdlog::info("store: reachable again; virtual keys and channels refresh from it");
      store_down_since_.clear();
    }
    if (!force && stamp == cp_stamp_) return false;
    StoreState st;
    st.channels = cp_store_->listChannels();
    st.upstream_keys = cp_store_->listUpstreamKeys(std::nullopt);
    st.virtual_keys = cp_store_->listVirtualKeys();
    st.gateway_settings = cp_store_->gatewaySettings();
    st.mcp_servers = cp_store_->listMcpServers();
    st.teams = cp_store_->listTeams();
    std::lock_guard lk(publish_mu_);
    store_state_ = std::move(st);
    cp_stamp_ = std::move(stamp);
    return true;
  } catch (const std::exception& e) {
    cp_store_.reset();
    if (store_down_since_.empty()) {
      store_down_since_ = e.what();
      spdlog::warn("store: cannot read virtual keys and channels ({}); serving with the last ones read", e.what());
    }
    return false;
  }
}

// Budgets count what the request log says was spent (this instance's and others'), so a
// restart or a second instance does not reset them.
void ControlPlane::seedSpend() {
  if (!cp_store_) return;
  try {
    auto now = unixNowMs();
    auto day = cluster::dayIndex(now), month = cluster::monthIndex(now);
    auto spend = cp_store_->spendByKey(cluster::dayStartMs(day), cluster::monthStartMs(month));
    for (const auto& [id, sp] : spend) {
      limiter_.seedSpend("vk:" + std::to_string(id), cluster::SpendSeed{day, month, sp.day_usd, sp.month_usd, sp.total_usd});
    }
    // A team has spent what its keys have (the keys in it now; store_state_ is written on this
    // thread only).
    std::map<std::int64_t, cluster::SpendSeed> teams;
    for (const auto& k : store_state_.virtual_keys) {
      if (!k.team_id) continue;
      const auto it = spend.find(k.id);
      if (it == spend.end()) continue;
      auto& t = teams.try_emplace(*k.team_id, cluster::SpendSeed{day, month, 0, 0, 0}).first->second;
      t.day_usd += it->second.day_usd;
      t.month_usd += it->second.month_usd;
      t.total_usd += it->second.total_usd;
    }
    for (const auto& [id, seed] : teams) limiter_.seedSpend("team:" + std::to_string(id), seed);
  } catch (const std::exception& e) {
    cp_store_.reset();
    spdlog::warn("store: cannot read key spend: {}", e.what());
  }
}

// Two-way sync of key health with Redis: what changed here since the last sync is
// published (this instance learned it); then what changed there is applied here.
void ControlPlane::syncHealth() {
  std::shared_ptr<const Snapshot> snap;
  {
    std::lock_guard lk(publish_mu_);
    snap = current_;
  }
  const auto steadyNow = routing::nowMs();
  const auto wallNow = unixNowMs();
  auto localState = [&](const routing::KeyHealth& h) {
    cluster::SharedKeyState st;
    st.disabled = h.disabled.load();
    st.manual = st.disabled && h.manual.load();
    auto until = h.cooldown_until_ms.load();
    if (until > steadyNow) st.cooldown_until_unix_ms = wallNow + (until - steadyNow);
    if (st.disabled || st.cooldown_until_unix_ms) st.reason = h.why();
    return st;
  };
  auto healthy = [&](const cluster::SharedKeyState& st) { return !st.disabled && st.cooldown_until_unix_ms <= wallNow; };
  auto same = [&](const cluster::SharedKeyState& a, const cluster::SharedKeyState& b) {
    if (healthy(a) && healthy(b)) return true;
    return a.disabled == b.disabled && a.manual == b.manual &&
           std::llabs(std::max(a.cooldown_until_unix_ms, wallNow) - std::max(b.cooldown_until_unix_ms, wallNow)) < 250;
  };
  std::vector<std::string> refs;
  std::map<std::string, const routing::UpstreamKey*> byRef;
  for (const auto& ch : snap->router->channels())
    for (const auto& k : ch->keys) {
      refs.push_back(k.ref);
      byRef[k.ref] = &k;
    }
  for (const auto& [ref, k] : byRef) {
    auto local = localState(*k->health);
    auto& synced = health_synced_[ref];
    if (same(local, synced)) continue;
    bool ok = healthy(local) ? shared_health_.clear(ref) : shared_health_.put(ref, local);
    if (!ok) return;  // Redis unreachable: try again next time
    synced = local;
  }
  auto remote = shared_health_.get(refs);
  if (!remote) return;
  for (const auto& [ref, k] : byRef) {
    auto it = remote->find(ref);
    cluster::SharedKeyState there = it == remote->end() ? cluster::SharedKeyState{} : it->second;
    auto& synced = health_synced_[ref];
    if (same(there, synced)) continue;
    auto& h = *k->health;
    if (there.disabled && !h.disabled.load()) {
      h.disable(there.reason);
      h.manual.store(there.manual);
    } else if (!there.disabled && h.disabled.load() && synced.disabled) {
      h.enable();  // enabled on another instance
    }
    if (there.cooldown_until_unix_ms > wallNow)
      h.coolDown(steadyNow + (there.cooldown_until_unix_ms - wallNow), there.reason);
    synced = there;
  }
}

void ControlPlane::refreshLoop() {
  auto lastSeed = Clock::now() - std::chrono::hours(1);
  std::uint64_t seen = 0;
  for (;;) {
    std::uint64_t seq = 0;
    {
      std::unique_lock lk(refresh_mu_);
      refresh_cv_.wait_for(lk, std::chrono::milliseconds(500), [&] { return refresh_stop_ || poke_seq_ != seen; });
      if (refresh_stop_) return;
      seq = poke_seq_;
    }
    const bool poked = seq != seen;
    seen = seq;
    if (refreshFromStore(poked)) {
      std::lock_guard lk(publish_mu_);
      try {
        publish(makeSnapshot(file_cfg_, store_state_));
      } catch (const std::exception& e) {
        spdlog::error("store: the keys and channels read could not be applied: {}", e.what());
      }
    }
    if (poked) {
      {
        std::lock_guard lk(refresh_mu_);
        done_seq_ = seq;
      }
      refresh_cv_.notify_all();
    }
    if (shared_health_.enabled()) syncHealth();
    if (Clock::now() - lastSeed >= std::chrono::seconds(5)) {
      seedSpend();
      lastSeed = Clock::now();
    }
  }
}

}  // namespace sluice::gateway
