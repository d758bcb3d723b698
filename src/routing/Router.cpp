#include "routing/Router.hpp"

#include "cloud/OAuthToken.hpp"

#include <openssl/evp.h>
#include <re2/re2.h>

#include <algorithm>
#include <charconv>
#include <random>
#include <set>

#include "routing/ModelName.hpp"

namespace sluice::routing {

std::int64_t nowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

void KeyHealth::coolDown(std::int64_t until_ms, std::string why) {
  std::int64_t cur = cooldown_until_ms.load();
  while (cur < until_ms && !cooldown_until_ms.compare_exchange_weak(cur, until_ms)) {
  }
  std::lock_guard lk(mu);
  reason = std::move(why);
}

void KeyHealth::disable(std::string why) {
  disabled.store(true);
  std::lock_guard lk(mu);
  reason = std::move(why);
}

void KeyHealth::enable() {
  disabled.store(false);
  manual.store(false);
  cooldown_until_ms.store(0);
  std::lock_guard lk(mu);
  reason.clear();
}

std::string KeyHealth::why() const {
  std::lock_guard lk(mu);
  return reason;
}

std::shared_ptr<ChannelHealth> HealthRegistry::channel(const std::string& name) {
  std::lock_guard lk(mu_);
  auto& p = channels_[name];
  if (!p) p = std::make_shared<ChannelHealth>();
  return p;
}

std::shared_ptr<KeyHealth> HealthRegistry::key(const std::string& channel, const std::string& secret) {
  std::lock_guard lk(mu_);
  auto& p = keys_[channel + '\n' + secret];
  if (!p) p = std::make_shared<KeyHealth>();
  return p;
}

bool globMatch(std::string_view pat, std::string_view s) {
  std::size_t p = 0, i = 0, star = std::string_view::npos, mark = 0;
  while (i < s.size()) {
    if (p < pat.size() && (pat[p] == '?' || pat[p] == s[i])) {
      ++p;
      ++i;
    } else if (p < pat.size() && pat[p] == '*') {
      star = p++;
      mark = i;
    } else if (star != std::string_view::npos) {
      p = star + 1;
      i = ++mark;
    } else {
      return false;
    }
  }
  while (p < pat.size() && pat[p] == '*') ++p;
  return p == pat.size();
}

std::string keyRef(std::string_view channel, std::string_view secret) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  EVP_DigestInit_ex(ctx, EVP_sha256(), nullptr);
  EVP_DigestUpdate(ctx, channel.data(), channel.size());
  EVP_DigestUpdate(ctx, "\n", 1);
  EVP_DigestUpdate(ctx, secret.data(), secret.size());
  EVP_DigestFinal_ex(ctx, md, &len);
  EVP_MD_CTX_free(ctx);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out = "k";
  for (int i = 0; i < 6; ++i) {
    out.push_back(kHex[md[i] >> 4]);
    out.push_back(kHex[md[i] & 15]);
  }
  return out;
}

std::string maskSecret(std::string_view secret) {
  if (secret.empty()) return "(none)";
  if (secret.size() < 12) return "***";
  if (secret.front() == '{') return "{credential}";  // a subscription's credential JSON: nothing of it shown
  return std::string(secret.substr(0, 3)) + "..." + std::string(secret.substr(secret.size() - 4));
}

std::string Channel::upstreamModel(std::string_view model) const {
  if (auto it = cfg.model_map.find(std::string(model)); it != cfg.model_map.end()) return it->second;
  return std::string(model);
}

bool Channel::servesModel(std::string_view model) const { return servesModel(model, isModelName(model)); }

bool Channel::discovers() const {
  // Bedrock lists its models on another service (bedrock, not bedrock-runtime) with other rights:
  // its channels name their models.
  // Vertex: its publisher models are listed by another API (Model Garden); its channels name theirs.
  if (cfg.type == config::ChannelType::Bedrock || cfg.type == config::ChannelType::Vertex) return false;
  // A subscription's endpoints list no models to its OAuth token: its channels name them.
  if (!cfg.subscription.empty()) return false;
  return std::any_of(cfg.models.begin(), cfg.models.end(), [](const std::string& m) { return isGlob(m); });
}

bool ChannelHealth::discoveryDue(const std::string& source, std::int64_t now_ms, std::int64_t every_ms) {
  std::lock_guard lock(discovery_mu_);
  if (discovery_.source == source && discovery_.attempted_ms != 0 && now_ms - discovery_.attempted_ms < every_ms)
    return false;
  if (discovery_.source != source) discovery_ = DiscoveredModels{};
  discovery_.source = source;
  discovery_.attempted_ms = now_ms;
  return true;
}

bool ChannelHealth::discoverySucceeded(std::vector<std::string> models, std::int64_t unix_ms) {
  std::lock_guard lock(discovery_mu_);
  const bool changed = models != discovery_.models || discovery_.refreshed_unix_ms == 0;
  discovery_.models = std::move(models);
  discovery_.refreshed_unix_ms = unix_ms;
  discovery_.error.clear();
  return changed;
}

void ChannelHealth::discoveryFailed(std::string why) {
  std::lock_guard lock(discovery_mu_);
  discovery_.error = std::move(why);
}

bool Channel::servesModel(std::string_view model, bool valid) const {
  // A glob matches only names that follow the model-name rule: "gemini-*" must not carry
  // "gemini-x/../../admin" or "gemini-x?key=" into a URL. The gateway refuses such names before
  // routing; this keeps the glob safe for any other caller.
  for (const auto& m : cfg.models) {
    if (!isGlob(m) ? m == model : valid && globMatch(m, model)) return true;
  }
  return false;
}

namespace {
bool keyRequired(config::ChannelType t) {
  return t == config::ChannelType::OpenAI || t == config::ChannelType::Anthropic ||
         t == config::ChannelType::Gemini || t == config::ChannelType::Azure || t == config::ChannelType::Vertex;
}

thread_local std::minstd_rand tRng{std::random_device{}()};
}  // namespace

Router::Router(std::shared_ptr<const config::Config> cfg, HealthRegistry& health)
    : cfg_(std::move(cfg)), rules_(std::make_unique<const ErrorRules>(cfg_->routing.rules)) {
  for (const auto& cc : cfg_->channels) {
    auto ch = std::make_unique<Channel>();
    ch->cfg = cc;
    ch->index = channels_.size();
    auto err = upstream::parseBaseUrl(cc.base_url, ch->endpoint);
    if (!err.empty()) throw config::ConfigError("channel " + cc.name + ": base_url: " + err, cc.line, 0);
    ch->health = health.channel(cc.name);
    std::size_t i = 0;
    for (std::size_t j = 0; j < cc.keys.size(); ++j) {
      const auto& k = cc.keys[j];
      if (k.empty()) continue;
      std::int64_t storeId = j < cc.key_store_ids.size() ? cc.key_store_ids[j] : 0;
      // A vertex key is a service account's JSON: shown by its client_email, never by its text.
      std::string shown = cc.type == config::ChannelType::Vertex ? cloud::serviceAccountLabel(k) : maskSecret(k);
      ch->keys.push_back(UpstreamKey{k, shown + "#" + std::to_string(i++), health.key(cc.name, k),
                                     keyRef(cc.name, k), storeId});
    }
    // Entra ID: the application's token is one more key of the channel (its secret "": the
    // signing stage gets its token; its health is the application's).
    if (cc.type == config::ChannelType::Azure && cc.entra()) {
      const std::string handle = "entra:" + cc.client_id;
      ch->keys.push_back(UpstreamKey{"", handle + "#" + std::to_string(i++), health.key(cc.name, handle),
                                     keyRef(cc.name, handle), 0});
    }
    if (ch->keys.empty() && !keyRequired(cc.type)) {
      ch->keys.push_back(UpstreamKey{"", "(none)#0", health.key(cc.name, ""), keyRef(cc.name, ""), 0});
    }
    channels_.push_back(std::move(ch));
  }
}

const Channel* Router::channelByName(std::string_view name) const {
  for (const auto& c : channels_)
    if (c->cfg.name == name) return c.get();
  return nullptr;
}

std::vector<const Channel*> Router::candidates(std::string_view requested, std::string& upstream_model) const {
  std::vector<const Channel*> out;
  std::string_view model = requested;
  if (auto a = cfg_->routing.aliases.find(std::string(requested)); a != cfg_->routing.aliases.end()) model = a->second;
  upstream_model = std::string(model);
  if (auto slash = model.find('/'); slash != std::string_view::npos) {
    if (const Channel* pinned = channelByName(model.substr(0, slash))) {
      auto rest = model.substr(slash + 1);
      if (!pinned->keys.empty() && pinned->servesModel(rest)) {
        upstream_model = std::string(rest);
        out.push_back(pinned);
      }
      return out;
    }
  }
  const bool valid = isModelName(model);  // once, not per channel
  for (const auto& c : channels_)
    if (!c->keys.empty() && c->servesModel(model, valid)) out.push_back(c.get());
  // Priority ascending; within one priority a weighted random order (weight 0 goes last).
  std::vector<std::pair<double, const Channel*>> keyed;
  keyed.reserve(out.size());
  std::uniform_real_distribution<double> u(0.0, 1.0);
  for (const auto* c : out) {
    // Efraimidis-Spirakis: sorting by u^(1/w) descending is a weighted shuffle.
    double k = c->cfg.weight > 0 ? std::pow(u(tRng), 1.0 / c->cfg.weight) : -1.0 + u(tRng) * 1e-3;
    keyed.emplace_back(k, c);
  }
  std::stable_sort(keyed.begin(), keyed.end(), [](const auto& a, const auto& b) {
    if (a.second->cfg.priority != b.second->cfg.priority) return a.second->cfg.priority < b.second->cfg.priority;
    return a.first > b.first;
  });
  for (std::size_t i = 0; i < keyed.size(); ++i) out[i] = keyed[i].second;
  // Power of two choices: the first two of a weighted shuffle are two weighted picks without
  // replacement; the one that recently answered sooner (and failed less) goes first. Only the
  // first place is chosen so; the rest keep the shuffle's order (failover order).
  if (cfg_->routing.balance == config::Balance::Latency) {
    for (std::size_t i = 0; i + 1 < out.size();) {
      std::size_t j = i + 1;
      while (j < out.size() && out[j]->cfg.priority == out[i]->cfg.priority) ++j;
      if (j - i >= 2 && out[i + 1]->cfg.weight > 0 && out[i + 1]->health->latency.cost() < out[i]->health->latency.cost())
        std::swap(out[i], out[i + 1]);
      i = j;
    }
  }
  return out;
}

void Ewma::add(double first_byte_ms, bool failed) {
  const bool first = samples.fetch_add(1, std::memory_order_relaxed) == 0;
  const double e = errors.load(std::memory_order_relaxed);
  errors.store(first ? (failed ? 1.0 : 0.0) : e + kAlpha * ((failed ? 1.0 : 0.0) - e), std::memory_order_relaxed);
  if (first_byte_ms < 0) return;
  const double t = ttfb_ms.load(std::memory_order_relaxed);
  ttfb_ms.store(t < 0 ? first_byte_ms : t + kAlpha * (first_byte_ms - t), std::memory_order_relaxed);
}

void TtfbWindow::add(double v) {
  const auto i = n.fetch_add(1, std::memory_order_relaxed);
  ms[i % kSize].store(static_cast<float>(v), std::memory_order_relaxed);
}

double TtfbWindow::p95() const {
  const auto have = std::min<std::size_t>(n.load(std::memory_order_relaxed), kSize);
  if (have < kMin) return -1;
  std::array<float, kSize> v{};
  for (std::size_t i = 0; i < have; ++i) v[i] = ms[i].load(std::memory_order_relaxed);
  const std::size_t k = (have * 95 + 99) / 100 - 1;  // nearest rank
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(k), v.begin() + static_cast<std::ptrdiff_t>(have));
  return v[k];
}

double Ewma::cost() const {
  const double t = ttfb_ms.load(std::memory_order_relaxed);
  const double e = errors.load(std::memory_order_relaxed);
  if (t < 0 && e <= 0) return 0;
  // The expected attempts until an answer, 1 / (1 - e), times the time to first byte, weighed
  // once more by (1 + 10e) because a failure costs a failover besides: an error rate of 10%
  // about doubles the cost, one of 50% multiplies it by 12, one that never answers by 1100.
  return (std::max(t, 0.0) + 1.0) * (1.0 + 10.0 * e) / (1.0 - std::min(e, 0.99));
}

std::vector<std::string> Router::modelNames() const {
  std::set<std::string> names;
  for (const auto& [alias, target] : cfg_->routing.aliases) names.insert(alias);
  for (const auto& c : channels_) {
    if (c->keys.empty()) continue;
    for (const auto& m : c->cfg.models) {
      if (isGlob(m)) continue;
      names.insert(m);
      names.insert(c->cfg.name + "/" + m);
    }
    // A glob stands for the models the provider listed that it matches (model discovery).
    if (c->discovers())
      for (const auto& m : c->health->discovered().models) {
        names.insert(m);
        names.insert(c->cfg.name + "/" + m);
      }
  }
  return {names.begin(), names.end()};
}

// ---------------------------------------------------------------- ErrorRules

struct ErrorRules::Compiled {
  std::vector<int> status;
  std::unique_ptr<re2::RE2> body;  // null: any body
  config::ErrorAction action;
  std::int64_t cooldown_ms;
};

ErrorRules::ErrorRules(const std::vector<config::ErrorRule>& rules) {
  rules_.reserve(rules.size());
  for (const auto& r : rules) {
    Compiled c{r.status, nullptr, r.action, r.cooldown.count()};
    // Checked when the config was read; a pattern RE2 refuses here matches nothing.
    if (!r.body.empty()) c.body = std::make_unique<re2::RE2>(r.body, re2::RE2::Quiet);
    rules_.push_back(std::move(c));
  }
}

ErrorRules::~ErrorRules() = default;

ErrorVerdict ErrorRules::classify(int status, std::string_view body) const {
  for (std::size_t i = 0; i < rules_.size(); ++i) {
    const Compiled& r = rules_[i];
    if (!r.status.empty() && std::find(r.status.begin(), r.status.end(), status) == r.status.end()) continue;
    if (r.body && (!r.body->ok() || !re2::RE2::PartialMatch(re2::StringPiece(body.data(), body.size()), *r.body)))
      continue;
    ErrorVerdict v;
    v.rule = static_cast<int>(i);
    switch (r.action) {
      case config::ErrorAction::Retry: v.outcome = Outcome::KeyRetry; break;
      case config::ErrorAction::Failover: v.outcome = Outcome::ChannelFailure; break;
      case config::ErrorAction::Cooldown:
        v.outcome = Outcome::KeyCooldown;
        v.cooldown_ms = r.cooldown_ms;
        break;
      case config::ErrorAction::Disable: v.outcome = Outcome::KeyDisable; break;
      case config::ErrorAction::Fallback: v.outcome = Outcome::Fallback; break;
      case config::ErrorAction::Return: v.outcome = Outcome::ClientError; break;
    }
    return v;
  }
  ErrorVerdict v;
  if (status == 429)
    v.outcome = Outcome::KeyCooldown;
  else if (status == 401 || status == 403)
    v.outcome = Outcome::KeyDisable;
  else if (status >= 500 || status == 408)
    v.outcome = Outcome::ChannelFailure;
  else
    v.outcome = Outcome::ClientError;
  return v;
}

std::int64_t resetDurationMs(std::string_view v) {
  double total = 0;
  bool any = false;
  while (!v.empty()) {
    std::size_t i = 0;
    while (i < v.size() && ((v[i] >= '0' && v[i] <= '9') || v[i] == '.')) ++i;
    if (i == 0 || i > 18) return 0;
    double x = 0;
    const auto [end, ec] = std::from_chars(v.data(), v.data() + i, x);
    if (ec != std::errc() || end != v.data() + i) return 0;
    v.remove_prefix(i);
    double unit = 0;
    if (v.starts_with("ms")) {
      unit = 1;
      v.remove_prefix(2);
    } else if (v.starts_with("h") || v.starts_with("m") || v.starts_with("s")) {
      unit = v[0] == 'h' ? 3'600'000 : v[0] == 'm' ? 60'000 : 1000;
      v.remove_prefix(1);
    } else {
      return 0;
    }
    total += x * unit;
    any = true;
  }
  // Past a day is no rate-limit window anyone means: the default cool-down decides instead.
  return any && total <= 86'400'000.0 ? static_cast<std::int64_t>(total) : 0;
}

const std::vector<std::string>& Router::fallbacks(std::string_view requested, std::string_view routed) const {
  static const std::vector<std::string> kNone;
  const auto& f = cfg_->routing.fallbacks;
  if (f.empty()) return kNone;
  if (auto it = f.find(std::string(requested)); it != f.end()) return it->second;
  if (auto it = f.find(std::string(routed)); it != f.end()) return it->second;
  return kNone;
}

void Router::report(const Pick& p, Outcome o, int status, std::int64_t retry_after_ms, const std::string& why,
                    double first_byte_ms) const {
  auto& ch = *p.channel->health;
  auto& key = *p.key->health;
  auto now = nowMs();
  // Latency and errors: the channel's for a failure of the channel, the key's for any failure.
  // A failure's time is not an answer's: it moves the errors only.
  const bool answered = o == Outcome::Success || o == Outcome::ClientError || o == Outcome::Fallback;
  const double sample = answered ? first_byte_ms : -1;
  key.latency.add(sample, !answered);
  if (answered || o == Outcome::ChannelFailure) ch.latency.add(sample, !answered);
  if (sample >= 0) ch.recent.add(sample);
  switch (o) {
    case Outcome::Success:
    case Outcome::ClientError:
    case Outcome::Fallback:  // the channel answered; the request was the trouble
      if (o == Outcome::Success) key.successes.fetch_add(1, std::memory_order_relaxed);
      ch.consecutive_failures.store(0, std::memory_order_relaxed);
      if (ch.open_until_ms.load(std::memory_order_relaxed) != 0) ch.open_until_ms.store(0);
      if (p.probe) ch.probing.store(false);
      break;
    case Outcome::ChannelFailure: {
      key.failures.fetch_add(1, std::memory_order_relaxed);
      int n = ch.consecutive_failures.fetch_add(1) + 1;
      if (p.probe || n >= cfg_->routing.breaker_failures) {
        ch.open_until_ms.store(now + cfg_->routing.breaker_cooldown.count());
      }
      if (p.probe) ch.probing.store(false);
      break;
    }
    case Outcome::KeyDisable:
      key.failures.fetch_add(1, std::memory_order_relaxed);
      // A subscription's access token refused: no probe brings such a key back, so it rests a
      // minute instead (a refresh token that is refused too disables it for good, saying why).
      if (!p.channel->cfg.subscription.empty()) {
        key.coolDown(now + 60'000, "upstream answered " + std::to_string(status) + ": " + why);
        if (p.probe) ch.probing.store(false);
        break;
      }
      key.disable("upstream answered " + std::to_string(status) + ": " + why);
      if (p.probe) ch.probing.store(false);
      break;
    case Outcome::KeyCooldown: {
      key.failures.fetch_add(1, std::memory_order_relaxed);
      auto d = retry_after_ms > 0 ? retry_after_ms : cfg_->routing.cooldown_default.count();
      key.coolDown(now + d, "upstream answered " + std::to_string(status) + ": " + why);
      if (p.probe) ch.probing.store(false);
      break;
    }
    case Outcome::KeyRetry:
      key.failures.fetch_add(1, std::memory_order_relaxed);
      if (p.probe) ch.probing.store(false);
      break;
  }
}

// ---------------------------------------------------------------- Attempts

Attempts::Attempts(const Router& router, std::vector<const Channel*> candidates)
    : router_(router), candidates_(std::move(candidates)), channel_excluded_(candidates_.size(), 0) {}

bool Attempts::anyChannelLeft() const {
  return std::find(channel_excluded_.begin(), channel_excluded_.end(), 0) != channel_excluded_.end();
}

Pick Attempts::next(std::int64_t& retry_after_ms) {
  auto now = nowMs();
  retry_after_ms = 0;
  const bool byLatency = router_.config().routing.balance == config::Balance::Latency;
  auto pickKey = [&](const Channel* ch) -> const UpstreamKey* {
    auto n = ch->keys.size();
    auto start = ch->health->next_key.fetch_add(1, std::memory_order_relaxed);
    const UpstreamKey* best = nullptr;  // balance: latency: the better of the first two usable
    for (std::size_t i = 0; i < n; ++i) {
      const auto& k = ch->keys[(start + i) % n];
      bool tried = std::any_of(tried_.begin(), tried_.end(),
                               [&](const auto& t) { return t.first == ch && t.second == &k; });
      if (tried) continue;
      if (!k.health->available(now)) {
        auto until = k.health->cooldown_until_ms.load(std::memory_order_relaxed);
        if (!k.health->disabled.load() && until > now && (retry_after_ms == 0 || until - now < retry_after_ms))
          retry_after_ms = until - now;
        continue;
      }
      // A pool of subscription accounts: of the first two usable, the one whose usage window has
      // more left (as its rate-limit headers last said) goes first.
      const bool byUsage = !ch->cfg.subscription.empty();
      if (!byLatency && !byUsage) return &k;
      if (!best) {
        best = &k;
        continue;
      }
      if (byUsage) {
        const int mine = std::max(0, k.health->usage_permille.load(std::memory_order_relaxed));
        const int theirs = std::max(0, best->health->usage_permille.load(std::memory_order_relaxed));
        if (mine != theirs) return mine < theirs ? &k : best;
      }
      return k.health->latency.cost() < best->health->latency.cost() ? &k : best;
    }
    return best;
  };
  // Pass 1: closed breakers, or a half-open one whose probe we win.
  for (std::size_t i = 0; i < candidates_.size(); ++i) {
    if (channel_excluded_[i]) continue;
    const Channel* ch = candidates_[i];
    auto open_until = ch->health->open_until_ms.load(std::memory_order_relaxed);
    bool probe = false;
    if (open_until != 0) {
      if (open_until > now) continue;
      bool expected = false;
      if (!ch->health->probing.compare_exchange_strong(expected, true)) continue;
      probe = true;
    }
    if (const auto* k = pickKey(ch)) {
      tried_.emplace_back(ch, k);
      return Pick{ch, k, probe};
    }
    if (probe) ch->health->probing.store(false);
  }
  // Pass 2: nothing healthy is left, so rather than lose the request, try channels whose
  // breaker is open anyway.
  for (std::size_t i = 0; i < candidates_.size(); ++i) {
    if (channel_excluded_[i]) continue;
    if (const auto* k = pickKey(candidates_[i])) {
      tried_.emplace_back(candidates_[i], k);
      return Pick{candidates_[i], k, false};
    }
  }
  return Pick{};
}

void Attempts::skipChannel(const Pick& p) {
  if (p.probe) p.channel->health->probing.store(false);
  for (std::size_t i = 0; i < candidates_.size(); ++i)
    if (candidates_[i] == p.channel) channel_excluded_[i] = 2;
}

void Attempts::failed(const Pick& p, Outcome o) {
  if (o != Outcome::ChannelFailure) return;
  // A channel-level failure: prefer other channels; come back to this one's other keys only
  // when no other channel is left.
  for (std::size_t i = 0; i < candidates_.size(); ++i)
    if (candidates_[i] == p.channel) channel_excluded_[i] = 1;
  // Every channel has failed once: their untried keys are all that is left (the tried set
  // keeps a failed key from being picked twice).
  if (!anyChannelLeft())
    for (auto& e : channel_excluded_)
      if (e == 1) e = 0;  // 2: skipped for its rate limit, stays out
}

}  // namespace sluice::routing
