// YAML -> Config. The loader walks every mapping itself (never Node::operator[]) so that unknown
// and duplicate keys are caught, and interpolates ${VAR} per scalar so marks stay exact.
#include "config/Config.hpp"

#include <yaml-cpp/yaml.h>
#include <yaml-cpp/eventhandler.h>
#include <fmt/format.h>
#include <re2/re2.h>

#include <sstream>

#include <boost/url/parse.hpp>
#include <boost/url/url_view.hpp>

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <limits>
#include <set>
#include <span>
#include <stdexcept>
#include <string_view>
#include <utility>

#include "cloud/OAuthToken.hpp"
#include "cloud/SigV4.hpp"
#include "cloud/Subscription.hpp"
#include "cluster/RedisUrl.hpp"
#include "config/Scalars.hpp"
#include "http/ServerTls.hpp"
#include "http/HostPort.hpp"
#include "redact/Rules.hpp"

namespace sluice::config {
namespace {

// The whole of a key file the config names (a service account's JSON, a CLI's credential file),
// up to 1 MiB (no key is near it; a larger file is not a key and fails its parser). nullopt with
// *why set (strerror) when it cannot be opened.
std::optional<std::string> readKeyFile(const std::string& path, std::string* why) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) {
    *why = std::strerror(errno);
    return std::nullopt;
  }
  std::string text;
  char buf[4096];
  std::size_t n = 0;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0 && text.size() < (1u << 20)) text.append(buf, n);
  std::fclose(f);
  return text;
}

using Keys = std::span<const std::string_view>;

constexpr std::array<std::string_view, 14> kTopKeys = {"server",    "auth",    "store",     "redis",     "routing",
                                                       "channels",  "pricing", "cache",     "redaction", "screening",
                                                       "guardrail", "admin",   "telemetry", "mcp"};
constexpr std::array<std::string_view, 1> kMcpKeys = {"servers"};
constexpr std::array<std::string_view, 5> kMcpServerKeys = {"name", "url", "headers", "command", "timeout"};
constexpr std::array<std::string_view, 5> kTelemetryKeys = {"otlp_endpoint", "service_name", "sample_ratio", "headers",
                                                            "capture_content"};
constexpr std::array<std::string_view, 5> kCacheKeys = {"enabled", "ttl", "max_bytes", "max_entry_bytes", "shared"};
constexpr std::array<std::string_view, 5> kRedactionKeys = {"enabled", "key", "builtin", "actions", "rules"};
constexpr std::array<std::string_view, 5> kRuleKeys = {"name", "pattern", "action", "fields", "validator"};
constexpr std::array<std::string_view, 5> kScreeningKeys = {"action", "threshold", "deny", "model", "scope"};
constexpr std::array<std::string_view, 5> kGuardrailKeys = {"url", "timeout", "on_failure", "review_response",
                                                            "headers"};
constexpr std::array<std::string_view, 10> kServerKeys = {
    "listen",         "workers",           "max_body_bytes", "max_header_bytes", "header_timeout",
    "keepalive_timeout", "shutdown_grace", "trusted_proxies", "tls",             "pack_connections"};
constexpr std::array<std::string_view, 2> kServerTlsKeys = {"cert", "key"};
constexpr std::array<std::string_view, 1> kAdminKeys = {"listen"};
constexpr std::array<std::string_view, 2> kAuthKeys = {"master_key", "oidc"};
constexpr std::array<std::string_view, 11> kOidcKeys = {
    "issuer",       "client_id",    "client_secret", "redirect_url", "roles_claim",            "role_map",
    "scopes",       "session_idle", "session_max",   "timeout",      "post_logout_redirect_url"};
constexpr std::array<std::string_view, 1> kUrlKeys = {"url"};
constexpr std::array<std::string_view, 7> kStoreKeys = {
    "url", "request_logs", "log_retention_days", "log_bodies", "log_body_max_bytes", "secret_key", "responses"};
constexpr std::array<std::string_view, 3> kStoredResponsesKeys = {"enabled", "ttl", "max_bytes"};
constexpr std::array<std::string_view, 14> kRoutingKeys = {
    "max_retries",       "timeouts", "cooldown_default", "breaker_failures", "breaker_cooldown",
    "aliases",           "recovery_interval", "rules",   "fallbacks",        "stall_timeout",
    "on_stall",          "balance",  "hedge_after",      "discovery_interval"};
constexpr std::array<std::string_view, 4> kErrorRuleKeys = {"status", "body", "action", "for"};
constexpr std::array<std::string_view, 5> kPriceKeys = {"input", "output", "cached_input", "cache_write", "reasoning"};
constexpr std::array<std::string_view, 4> kTimeoutKeys = {"connect", "first_byte", "idle", "total"};
constexpr std::array<std::string_view, 26> kChannelKeys = {
    "name",      "type",    "base_url",  "keys",     "models",         "priority", "weight",
    "headers",   "model_map", "api_version", "rpm",  "tpm",            "max_concurrent", "key_rpm",
    "key_tpm",   "cache",   "cache_ttl", "screening", "region",        "subscription", "project",
    "location",  "tenant_id", "client_id", "client_secret", "token_url"};

struct ChannelTypeEntry {
  ChannelType type;
  const char* name;
};
constexpr std::array<ChannelTypeEntry, 8> kChannelTypes = {{
    {ChannelType::OpenAI, "openai"},
    {ChannelType::Anthropic, "anthropic"},
    {ChannelType::Gemini, "gemini"},
    {ChannelType::Azure, "azure"},
    {ChannelType::OpenAICompatible, "openai-compatible"},
    {ChannelType::Mock, "mock"},
    {ChannelType::Bedrock, "bedrock"},
    {ChannelType::Vertex, "vertex"},
}};

constexpr std::size_t kMaxConfigBytes = 16u << 20;

std::string join(Keys keys) {
  std::string out;
  for (const auto k : keys) {
    if (!out.empty()) out += ", ";
    out += k;
  }
  return out;
}

std::string quote(std::string_view s) {
  constexpr std::size_t kMax = 80;
  std::string out = "\"";
  for (const char c : s.substr(0, kMax)) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      out += c == '\n' ? "\\n" : c == '\t' ? "\\t" : "?";
    } else {
      out += c;
    }
  }
  if (s.size() > kMax) out += "...";
  return out + "\"";
}

std::size_t editDistance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diag = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

std::string describeNode(const YAML::Node& n) {
  switch (n.Type()) {
    case YAML::NodeType::Sequence: return "a list";
    case YAML::NodeType::Map: return "a mapping";
    case YAML::NodeType::Null: return "null";
    default: return quote(n.Scalar());
  }
}

// host:port with a numeric port; IPv6 hosts in brackets.
bool validListen(std::string_view s, std::string& why) {
  std::string_view host;
  std::string_view port;
  if (!s.empty() && s.front() == '[') {
    const auto close = s.find(']');
    if (close == std::string_view::npos) {
      why = "missing ']' after the IPv6 address";
      return false;
    }
    host = s.substr(1, close - 1);
    const auto rest = s.substr(close + 1);
    if (rest.empty() || rest.front() != ':') {
      why = "missing \":PORT\" after \"]\"";
      return false;
    }
    port = rest.substr(1);
    const bool ok = !host.empty() && host.find(':') != std::string_view::npos &&
                    std::all_of(host.begin(), host.end(), [](char c) {
                      return std::isxdigit(static_cast<unsigned char>(c)) != 0 || c == ':' ||
                             c == '.' || c == '%' || std::isalnum(static_cast<unsigned char>(c)) != 0;
                    });
    if (!ok) {
      why = "bad IPv6 address";
      return false;
    }
  } else {
    const auto colon = s.rfind(':');
    if (colon == std::string_view::npos) {
      why = "missing \":PORT\"";
      return false;
    }
    host = s.substr(0, colon);
    port = s.substr(colon + 1);
    if (host.find(':') != std::string_view::npos) {
      why = "an IPv6 address needs brackets, as in \"[::1]:8080\"";
      return false;
    }
    if (host.empty()) {
      why = "missing host (use 0.0.0.0 or [::] for every interface)";
      return false;
    }
    const bool ok = std::all_of(host.begin(), host.end(), [](char c) {
      return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '.' || c == '-' || c == '_';
    });
    if (!ok) {
      why = "bad host name";
      return false;
    }
  }
  unsigned value = 0;
  const auto* end = port.data() + port.size();
  const auto [ptr, ec] = std::from_chars(port.data(), end, value);
  if (port.empty() || port.size() > 5 || ec != std::errc() || ptr != end || value > 65535) {
    why = "the port must be a number from 0 to 65535";
    return false;
  }
  return true;
}

std::string_view schemeOf(std::string_view url) {
  const auto pos = url.find("://");
  return pos == std::string_view::npos ? std::string_view{} : url.substr(0, pos);
}

// Sees the parser's events and keeps nothing but where the last document started.
struct DocumentCounter final : YAML::EventHandler {
  YAML::Mark last_start;
  void OnDocumentStart(const YAML::Mark& mark) override { last_start = mark; }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
  void OnAlias(const YAML::Mark&, YAML::anchor_t) override {}
  void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t, const std::string&) override {}
  void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {}
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {}
  void OnMapEnd() override {}
};

class Loader {
 public:
  explicit Loader(std::string name) : name_(std::move(name)) {}

  Config load(const std::string& text) {
    // Count documents without building them, and stop at the second: yaml-cpp 0.7 never
    // consumes a stray ',' at document level, so LoadAll on "," makes empty documents until
    // memory runs out (found by the config fuzzer; jbeder/yaml-cpp#1040).
    YAML::Node root;
    bool empty = true;
    bool secretKeySet = false;
    bool redactKeySet = false;
    try {
      DocumentCounter counter;
      std::istringstream in(text);
      YAML::Parser parser(in);
      int n = 0;
      while (parser.HandleNextDocument(counter)) {
        if (++n > 1) fail(counter.last_start, "expected one YAML document; a second one starts here");
      }
      empty = n == 0;
      if (!empty) root = YAML::Load(text);
    } catch (const YAML::Exception& e) {
      YAML::Mark mark = e.mark;
      if (mark.is_null()) mark = endMark(text);
      fail(mark, "invalid YAML: " + e.msg);
    }
    Config cfg;
    if (empty) return cfg;
    if (root.IsNull()) return cfg;
    if (!root.IsMap()) fail(root, "the top level must be a mapping, got " + describeNode(root));
    walk(root, "", kTopKeys, [&](const std::string& key, const YAML::Node& v) {
      if (key == "server") {
        server(v, cfg.server);
      } else if (key == "auth") {
        walk(v, "auth", kAuthKeys, [&](const std::string& akey, const YAML::Node& n) {
          if (akey == "master_key")
            cfg.auth.master_key = str(n, "auth.master_key");
          else
            oidc(n, cfg.auth.oidc);
        });
      } else if (key == "store") {
        walk(v, "store", kStoreKeys, [&](const std::string& skey, const YAML::Node& n) {
          if (skey == "url") {
            cfg.store.url = str(n, "store.url");
            checkStoreUrl(n, cfg.store.url);
          } else if (skey == "request_logs") {
            cfg.store.request_logs = boolean(n, "store.request_logs");
          } else if (skey == "log_bodies") {
            cfg.store.log_bodies = boolean(n, "store.log_bodies");
          } else if (skey == "log_retention_days") {
            cfg.store.log_retention_days = static_cast<int>(integer(n, "store.log_retention_days", 0, 36500));
          } else if (skey == "log_body_max_bytes") {
            cfg.store.log_body_max_bytes = bytes(n, "store.log_body_max_bytes", std::uint64_t{16} << 20);
          } else if (skey == "secret_key") {
            cfg.store.secret_key = str(n, "store.secret_key");
            secretKeySet = true;
          } else if (skey == "responses") {
            storedResponses(n, cfg.store.responses);
          }
        });
      } else if (key == "redis") {
        walk(v, "redis", kUrlKeys, [&](const std::string&, const YAML::Node& n) {
          cfg.redis.url = str(n, "redis.url");
          checkRedisUrl(n, cfg.redis.url);
        });
      } else if (key == "routing") {
        routing(v, cfg.routing);
      } else if (key == "channels") {
        channels(v, cfg.channels);
      } else if (key == "pricing") {
        pricing(v, cfg.pricing);
      } else if (key == "cache") {
        cache(v, cfg.cache);
      } else if (key == "redaction") {
        redactKeySet = redaction(v, cfg.redaction);
      } else if (key == "screening") {
        screening(v, cfg.screening);
      } else if (key == "guardrail") {
        guardrail(v, cfg.guardrail);
      } else if (key == "telemetry") {
        telemetry(v, cfg.telemetry);
      } else if (key == "admin") {
        admin(v, cfg.admin);
      } else if (key == "mcp") {
        walk(v, "mcp", kMcpKeys, [&](const std::string&, const YAML::Node& n) { mcpServers(n, cfg.mcp.servers); });
      }
    });
    checkAdminListen(cfg);
    if (!secretKeySet) {
      if (const char* env = std::getenv("SLUICE_SECRET_KEY")) cfg.store.secret_key = env;
    }
    if (!redactKeySet) {
      if (const char* env = std::getenv("SLUICE_REDACT_KEY")) cfg.redaction.key = env;
    }
    for (const auto& ch : cfg.channels) {
      // The live credential (its refresh token rotates) is kept in the store, sealed.
      if (!ch.subscription.empty() && cfg.store.secret_key.empty())
        fail(lineMark(ch.line),
             "channel " + quote(ch.name) +
                 ": a subscription channel keeps its refreshed credentials sealed in the store: set store.secret_key "
                 "(or SLUICE_SECRET_KEY)");
      if (!ch.subscription.empty() && cfg.store.url.empty())
        fail(lineMark(ch.line),
             "channel " + quote(ch.name) + ": a subscription channel needs store.url (its live credential is kept there)");
    }
    return cfg;
  }

 private:
  static YAML::Mark lineMark(int line) {
    YAML::Mark m;
    m.line = std::max(0, line - 1);
    return m;
  }
  static YAML::Mark endMark(const std::string& text) {
    YAML::Mark m;
    m.pos = static_cast<int>(text.size());
    m.line = static_cast<int>(std::count(text.begin(), text.end(), '\n'));
    m.column = 0;
    return m;
  }

  [[noreturn]] void fail(const YAML::Mark& mark, const std::string& msg) const {
    const int line = mark.is_null() ? 1 : mark.line + 1;
    const int column = mark.is_null() ? 1 : mark.column + 1;
    throw ConfigError(name_ + ":" + std::to_string(line) + ":" + std::to_string(column) + ": " + msg,
                      line, column);
  }
  [[noreturn]] void fail(const YAML::Node& node, const std::string& msg) const {
    fail(node.Mark(), msg);
  }

  static std::string child(const std::string& path, const std::string& key) {
    return path.empty() ? key : path + "." + key;
  }

  // Calls onKey(key, value) for each entry of a mapping, in order. A null node is an empty
  // mapping ("server:" with nothing under it).
  template <class F>
  void walk(const YAML::Node& map, const std::string& path, Keys valid, F&& onKey) {
    if (map.IsNull()) return;
    if (!map.IsMap()) fail(map, path + ": expected a mapping, got " + describeNode(map));
    std::map<std::string, int> seen;
    for (const auto& kv : map) {
      const YAML::Node& k = kv.first;
      if (!k.IsScalar()) fail(k, (path.empty() ? "top level" : path) + ": keys must be plain strings");
      const std::string& key = k.Scalar();
      if (std::find(valid.begin(), valid.end(), key) == valid.end()) {
        std::string msg = "unknown key " + quote(key) + (path.empty() ? " at the top level" : " in " + path);
        std::string_view best;
        std::size_t best_d = 3;  // suggest only close misspellings
        for (const auto v : valid) {
          const std::size_t d = editDistance(key, v);
          if (d < best_d) {
            best_d = d;
            best = v;
          }
        }
        if (!best.empty()) msg += " (did you mean " + quote(best) + "?)";
        fail(k, msg + "; valid keys: " + join(valid));
      }
      if (const auto [it, inserted] = seen.emplace(key, k.Mark().line + 1); !inserted) {
        fail(k, "duplicate key " + quote(key) + " in " + (path.empty() ? "the top level" : path) +
                    " (first at line " + std::to_string(it->second) + ")");
      }
      onKey(key, kv.second);
    }
  }

  // The interpolated text of a scalar. `what` completes "expected ..." in type errors.
  std::string scalar(const YAML::Node& n, const std::string& path, const char* what) {
    if (!n.IsScalar()) fail(n, path + ": expected " + what + ", got " + describeNode(n));
    try {
      return expandEnv(n.Scalar());
    } catch (const std::invalid_argument& e) {
      fail(n, path + ": " + e.what());
    }
  }

  // "got X" for a scalar whose text did not parse, naming the raw text when ${...} changed it.
  static std::string got(const YAML::Node& n, const std::string& value) {
    std::string out = "got " + quote(value);
    if (value != n.Scalar()) out += " (from " + quote(n.Scalar()) + ")";
    return out;
  }

  std::string str(const YAML::Node& n, const std::string& path) {
    if (n.IsNull()) return {};
    return scalar(n, path, "a string");
  }

  bool boolean(const YAML::Node& n, const std::string& path) {
    const std::string b = scalar(n, path, "true or false");
    if (b != "true" && b != "false") fail(n, path + ": expected true or false, " + got(n, b));
    return b == "true";
  }

  double number(const YAML::Node& n, const std::string& path, double lo, double hi) {
    const std::string v = scalar(n, path, "a number");
    double value = 0;
    const auto [ptr, ec] = std::from_chars(v.data(), v.data() + v.size(), value);
    if (v.empty() || ptr != v.data() + v.size() || ec != std::errc() || !std::isfinite(value))
      fail(n, path + ": expected a number, " + got(n, v));
    if (value < lo || value > hi) fail(n, path + ": must be from " + fmtNumber(lo) + " to " + fmtNumber(hi) + ", got " + v);
    return value;
  }

  static std::string fmtNumber(double d) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", d);
    return buf;
  }

  ScreenAction screenAction(const YAML::Node& n, const std::string& path) {
    const std::string v = scalar(n, path, "off, log, warn or block");
    const auto a = parseScreenAction(v);
    if (!a) fail(n, path + ": expected off, log, warn or block, got " + quote(v));
    return *a;
  }

  void storedResponses(const YAML::Node& node, StoredResponsesConfig& c) {
    walk(node, "store.responses", kStoredResponsesKeys, [&](const std::string& key, const YAML::Node& v) {
      const std::string path = "store.responses." + key;
      if (key == "enabled") {
        c.enabled = boolean(v, path);
      } else if (key == "ttl") {
        c.ttl = duration(v, path, false);
      } else if (key == "max_bytes") {
        c.max_bytes = bytes(v, path, std::uint64_t{256} << 20);
      }
    });
  }

  void cache(const YAML::Node& node, CacheConfig& c) {
    walk(node, "cache", kCacheKeys, [&](const std::string& key, const YAML::Node& v) {
      const std::string path = "cache." + key;
      if (key == "enabled") {
        c.enabled = boolean(v, path);
      } else if (key == "ttl") {
        c.ttl = duration(v, path, false);
      } else if (key == "max_bytes") {
        c.max_bytes = bytes(v, path, std::uint64_t{1} << 40);
      } else if (key == "max_entry_bytes") {
        c.max_entry_bytes = bytes(v, path, std::uint64_t{64} << 20);
      } else if (key == "shared") {
        c.shared = boolean(v, path);
      }
    });
    if (c.max_entry_bytes > c.max_bytes) fail(node, "cache: max_entry_bytes must not exceed max_bytes");
  }

  // True when `key` was given (even empty), so the environment default is not applied.
  bool redaction(const YAML::Node& node, RedactionConfig& r) {
    bool keySet = false;
    std::vector<redact::RuleSpec> specs;
    walk(node, "redaction", kRedactionKeys, [&](const std::string& key, const YAML::Node& v) {
      const std::string path = "redaction." + key;
      if (key == "enabled") {
        r.enabled = boolean(v, path);
      } else if (key == "key") {
        r.key = str(v, path);
        keySet = true;
      } else if (key == "builtin") {
        r.builtin = boolean(v, path);
      } else if (key == "actions") {
        if (v.IsNull()) return;
        if (!v.IsMap()) fail(v, path + ": expected a mapping of built-in rule names to mask, encrypt, block or off");
        std::set<std::string> builtinNames;
        for (const auto& spec : redact::builtinRules()) builtinNames.insert(spec.name);
        for (const auto& kv : v) {
          const std::string name = kv.first.IsScalar() ? kv.first.Scalar() : std::string();
          if (!builtinNames.contains(name)) {
            std::string all;
            for (const auto& n : builtinNames) {
              if (!all.empty()) all += ", ";
              all += n;
            }
            fail(kv.first, fmt::format("{}: {} is not a built-in rule; built-in rules: {}", path, quote(name), all));
          }
          const std::string apath = fmt::format("{}.{}", path, name);
          std::string action = str(kv.second, apath);
          if (action != "off" && !redact::parseAction(action))
            fail(kv.second, fmt::format("{}: expected mask, encrypt, block or off, got {}", apath, quote(action)));
          if (!r.actions.emplace(name, action).second) fail(kv.first, path + ": duplicate rule " + quote(name));
        }
      } else if (key == "rules") {
        if (v.IsNull()) return;
        if (!v.IsSequence()) fail(v, path + ": expected a list of rules {name, pattern, action, fields}");
        std::size_t i = 0;
        for (const auto& item : v) {
          const std::string rpath = path + "[" + std::to_string(i++) + "]";
          RedactionRuleConfig rule;
          rule.line = item.Mark().line + 1;
          std::set<std::string> present;
          walk(item, rpath, kRuleKeys, [&](const std::string& rk, const YAML::Node& rv) {
            present.insert(rk);
            const std::string kp = fmt::format("{}.{}", rpath, rk);
            if (rk == "name") rule.name = str(rv, kp);
            else if (rk == "pattern") rule.pattern = str(rv, kp);
            else if (rk == "action") rule.action = str(rv, kp);
            else if (rk == "validator") rule.validator = str(rv, kp);
            else if (rk == "fields") {
              for (auto& [f, fnode] : stringList(rv, kp)) rule.fields.push_back(std::move(f));
            }
          });
          for (const char* required : {"name", "pattern"}) {
            if (!present.contains(required)) fail(item, rpath + ": missing required key \"" + required + "\"");
          }
          const auto action = redact::parseAction(rule.action);
          if (!action) fail(item, rpath + ".action: expected mask, encrypt or block, got " + quote(rule.action));
          redact::RuleSpec spec{rule.name, rule.pattern, *action, rule.fields, rule.validator};
          try {
            (void)redact::RuleSet::compile({spec});
          } catch (const std::invalid_argument& e) {
            fail(item, rpath + ": " + e.what());
          }
          r.rules.push_back(std::move(rule));
        }
      }
    });
    // Names must not collide with each other or with a built-in rule that is in use.
    std::set<std::string> names;
    if (r.builtin)
      for (const auto& spec : redact::builtinRules()) names.insert(spec.name);
    for (const auto& rule : r.rules) {
      if (!names.insert(rule.name).second)
        fail(node, "redaction.rules: the rule name " + quote(rule.name) + " (line " + std::to_string(rule.line) +
                       ") is used twice (built-in rules: set their action under redaction.actions)");
    }
    return keySet;
  }

  void screening(const YAML::Node& node, ScreeningConfig& s) {
    walk(node, "screening", kScreeningKeys, [&](const std::string& key, const YAML::Node& v) {
      const std::string path = "screening." + key;
      if (key == "action") {
        s.action = screenAction(v, path);
      } else if (key == "threshold") {
        s.threshold = number(v, path, 0, 1);
      } else if (key == "model") {
        s.model = str(v, path);
      } else if (key == "scope") {
        s.scope_user = s.scope_tool = false;
        std::size_t i = 0;
        for (auto& [part, pnode] : stringList(v, path)) {
          const std::string ppath = path + "[" + std::to_string(i++) + "]";
          if (part == "user") {
            s.scope_user = true;
          } else if (part == "tool") {
            s.scope_tool = true;
          } else {
            fail(pnode, ppath +
                            ": expected user (the last user turn) or tool (tool results and function outputs), got " +
                            quote(part));
          }
        }
        if (!s.scope_user && !s.scope_tool)
          fail(v, path + ": name at least one of user, tool (to screen nothing, set screening.action: off)");
      } else if (key == "deny") {
        std::size_t i = 0;
        for (auto& [pattern, pnode] : stringList(v, path)) {
          const std::string ppath = path + "[" + std::to_string(i++) + "]";
          re2::RE2 re(pattern, re2::RE2::Quiet);
          if (pattern.empty()) fail(pnode, ppath + ": empty pattern");
          if (!re.ok()) fail(pnode, ppath + ": not a valid RE2 pattern: " + re.error());
          s.deny.push_back(std::move(pattern));
        }
      }
    });
  }

  void guardrail(const YAML::Node& node, GuardrailConfig& g) {
    bool failureSet = false;
    walk(node, "guardrail", kGuardrailKeys, [&](const std::string& key, const YAML::Node& v) {
      const std::string path = "guardrail." + key;
      if (key == "url") {
        g.url = str(v, path);
        if (!g.url.empty()) g.url = baseUrl(v, path);
      } else if (key == "timeout") {
        g.timeout = duration(v, path, false);
      } else if (key == "on_failure") {
        const std::string f = str(v, path);
        if (f != "fail_open" && f != "fail_closed")
          fail(v, path + ": expected fail_open (the request goes on) or fail_closed (it is refused), got " + quote(f));
        g.fail_open = f == "fail_open";
        failureSet = true;
      } else if (key == "review_response") {
        g.review_response = boolean(v, path);
      } else if (key == "headers") {
        walkHeaders(v, path, g.headers);
      }
    });
    if (!g.url.empty() && !failureSet)
      fail(node, "guardrail: say what happens when the webhook fails or times out: on_failure: fail_open or fail_closed");
  }

  // An OpenID Provider's URL: https, or http on a loopback host (a test IdP); kept as written
  // (a trailing slash is part of an issuer: it is compared byte for byte with the tokens' iss).
  std::string idpUrl(const YAML::Node& n, const std::string& path) {
    std::string url = scalar(n, path, "a URL");
    const auto parsed = boost::urls::parse_uri(url);
    const std::string why = parsed ? credentialUrlProblem(*parsed) : "not an absolute URL with a host";
    if (!why.empty()) fail(n, path + ": " + why + ", got " + quote(url));
    return url;
  }

  void oidc(const YAML::Node& node, OidcConfig& o) {
    walk(node, "auth.oidc", kOidcKeys, [&](const std::string& key, const YAML::Node& v) {
      const std::string path = "auth.oidc." + key;
      if (key == "issuer") {
        o.issuer = idpUrl(v, path);
        if (o.issuer.find('?') != std::string::npos) fail(v, path + ": an issuer has no query");
      } else if (key == "client_id") {
        o.client_id = str(v, path);
      } else if (key == "client_secret") {
        o.client_secret = str(v, path);
      } else if (key == "redirect_url") {
        o.redirect_url = idpUrl(v, path);
      } else if (key == "post_logout_redirect_url") {
        o.post_logout_redirect_url = idpUrl(v, path);
      } else if (key == "roles_claim") {
        o.roles_claim = str(v, path);
        if (o.roles_claim.empty()) fail(v, path + ": name the claim that holds the caller's groups or roles");
      } else if (key == "role_map") {
        if (!v.IsMap()) fail(v, path + ": expected a mapping of group names to roles, got " + describeNode(v));
        for (const auto& kv : v) {
          if (!kv.first.IsScalar()) fail(kv.first, path + ": group names must be plain strings");
          const std::string role = str(kv.second, path + "." + kv.first.Scalar());
          if (role != "admin" && role != "operator" && role != "viewer" && role != "member")
            fail(kv.second, path + "." + kv.first.Scalar() + ": expected admin, operator, viewer or member, got " +
                                quote(role));
          o.role_map.emplace_back(kv.first.Scalar(), role);
        }
      } else if (key == "scopes") {
        if (!v.IsSequence()) fail(v, path + ": expected a list of scopes, got " + describeNode(v));
        o.scopes.clear();
        for (const auto& s : v) {
          std::string scope = str(s, path);
          if (scope.empty() || scope.find_first_of(" \"\\") != std::string::npos || hasControlChar(scope))
            fail(s, path + ": " + quote(scope) + " is not a scope");
          o.scopes.push_back(std::move(scope));
        }
        if (std::find(o.scopes.begin(), o.scopes.end(), "openid") == o.scopes.end())
          fail(v, path + ": must include openid");
      } else if (key == "session_idle") {
        o.session_idle = duration(v, path, false);
      } else if (key == "session_max") {
        o.session_max = duration(v, path, false);
      } else if (key == "timeout") {
        o.timeout = duration(v, path, false);
      }
    });
    if (o.issuer.empty()) {
      if (!o.client_id.empty() || !o.redirect_url.empty()) fail(node, "auth.oidc: issuer is required");
      return;
    }
    if (o.client_id.empty()) fail(node, "auth.oidc: client_id is required");
    if (o.redirect_url.empty())
      fail(node, "auth.oidc: redirect_url is required (https://YOUR-GATEWAY/auth/callback, as registered at the IdP)");
    if (o.role_map.empty())
      fail(node, "auth.oidc: role_map is required: which groups get which role, e.g. {platform-admins: admin, \"*\": member}");
  }

  void telemetry(const YAML::Node& node, TelemetryConfig& t) {
    walk(node, "telemetry", kTelemetryKeys, [&](const std::string& key, const YAML::Node& v) {
      const std::string path = "telemetry." + key;
      if (key == "otlp_endpoint") {
        t.otlp_endpoint = str(v, path);
        if (!t.otlp_endpoint.empty()) t.otlp_endpoint = baseUrl(v, path);
      } else if (key == "service_name") {
        t.service_name = str(v, path);
        if (t.service_name.empty() || t.service_name.size() > 128)
          fail(v, path + ": expected a name of 1 to 128 characters");
      } else if (key == "sample_ratio") {
        t.sample_ratio = number(v, path, 0, 1);
      } else if (key == "headers") {
        walkHeaders(v, path, t.headers);
      } else if (key == "capture_content") {
        t.capture_content = boolean(v, path);
      }
    });
  }

  // pricing: {MODEL_OR_GLOB: {input, output, cached_input, cache_write, reasoning}}, each USD per
  // million tokens; input and output required (pipeline/Pricing.hpp has the cost rule).
  void pricing(const YAML::Node& node, std::map<std::string, Price>& out) {
    if (node.IsNull()) return;
    if (!node.IsMap()) fail(node, "pricing: expected a mapping of model names to prices, got " + describeNode(node));
    for (const auto& kv : node) {
      const YAML::Node& k = kv.first;
      if (!k.IsScalar() || k.Scalar().empty() || hasControlChar(k.Scalar()))
        fail(k, "pricing: " + (k.IsScalar() ? quote(k.Scalar()) : describeNode(k)) + " is not a model name");
      const std::string path = "pricing." + k.Scalar();
      Price p;
      std::set<std::string> present;
      walk(kv.second, path, kPriceKeys, [&](const std::string& pk, const YAML::Node& v) {
        present.insert(pk);
        std::string ppath = path;
        ppath.append(".").append(pk);
        double usd = number(v, ppath, 0, 1'000'000);
        (pk == "input"          ? p.input
         : pk == "output"       ? p.output
         : pk == "cached_input" ? p.cached_input
         : pk == "cache_write"  ? p.cache_write
                                : p.reasoning) = usd;
      });
      if (!present.contains("input") || !present.contains("output"))
        fail(kv.second, path + ": needs input and output (USD per million tokens), e.g. {input: 2.5, output: 10}");
      if (!out.emplace(k.Scalar(), p).second) fail(k, "pricing: duplicate entry " + quote(k.Scalar()));
    }
  }

  long long integer(const YAML::Node& n, const std::string& path, long long lo, long long hi) {
    const std::string v = scalar(n, path, "an integer");
    long long value = 0;
    const char* begin = v.data();
    const char* end = v.data() + v.size();
    if (begin != end && *begin == '+') ++begin;
    const auto [ptr, ec] = std::from_chars(begin, end, value);
    if (begin == end || ptr != end || ec == std::errc::invalid_argument) {
      fail(n, path + ": expected an integer, " + got(n, v));
    }
    if (ec == std::errc::result_out_of_range || value < lo || value > hi) {
      std::string range = hi == std::numeric_limits<int>::max()
                              ? "at least " + std::to_string(lo)
                              : "from " + std::to_string(lo) + " to " + std::to_string(hi);
      fail(n, path + ": must be " + range + ", got " + v);
    }
    return value;
  }

  Millis duration(const YAML::Node& n, const std::string& path, bool allow_zero) {
    const std::string v = scalar(n, path, "a duration");
    const auto d = parseDuration(v);
    if (!d) {
      fail(n, path + ": expected a duration such as \"5s\", \"250ms\", \"2m\", \"1h\" or whole seconds (at most " +
                  formatDuration(kMaxDuration) + "), " + got(n, v));
    }
    if (!allow_zero && d->count() <= 0) fail(n, path + ": must be greater than 0, got " + quote(v));
    return *d;
  }

  std::uint64_t bytes(const YAML::Node& n, const std::string& path, std::uint64_t hi) {
    const std::string v = scalar(n, path, "a byte size");
    const auto b = parseByteSize(v);
    if (!b) {
      fail(n, path + ": expected a byte size such as 1048576, \"64KiB\", \"32MiB\" or \"1MB\", " + got(n, v));
    }
    if (*b == 0 || *b > hi) {
      fail(n, path + ": must be from 1 to " + formatByteSize(hi) + ", got " + quote(v));
    }
    return *b;
  }

  std::vector<std::pair<std::string, YAML::Node>> stringList(const YAML::Node& n, const std::string& path) {
    if (n.IsNull()) return {};
    if (!n.IsSequence()) fail(n, path + ": expected a list of strings, got " + describeNode(n));
    std::vector<std::pair<std::string, YAML::Node>> out;
    std::size_t i = 0;
    for (const auto& item : n) {
      const std::string item_path = path + "[" + std::to_string(i++) + "]";
      if (item.IsNull()) {
        out.emplace_back(std::string{}, item);
      } else {
        out.emplace_back(scalar(item, item_path, "a string"), item);
      }
    }
    return out;
  }

  void server(const YAML::Node& node, ServerConfig& s) {
    walk(node, "server", kServerKeys, [&](const std::string& key, const YAML::Node& v) {
      const std::string path = "server." + key;
      if (key == "listen") {
        s.listen = scalar(v, path, "a string");
        std::string why;
        if (!validListen(s.listen, why)) {
          fail(v, path + ": expected host:port such as \"127.0.0.1:8080\" or \"[::1]:8080\", got " +
                      quote(s.listen) + ": " + why);
        }
      } else if (key == "workers") {
        s.workers = static_cast<int>(integer(v, path, 0, 1024));
      } else if (key == "pack_connections") {
        s.pack_connections = static_cast<int>(integer(v, path, 0, 1'000'000));
      } else if (key == "max_body_bytes") {
        s.max_body_bytes = bytes(v, path, std::uint64_t{1} << 40);
      } else if (key == "max_header_bytes") {
        // Beast's header_limit is 32-bit.
        s.max_header_bytes = bytes(v, path, std::numeric_limits<std::uint32_t>::max());
      } else if (key == "header_timeout") {
        s.header_timeout = duration(v, path, false);
      } else if (key == "keepalive_timeout") {
        s.keepalive_timeout = duration(v, path, false);
      } else if (key == "shutdown_grace") {
        s.shutdown_grace = duration(v, path, true);
      } else if (key == "trusted_proxies") {
        s.trusted_proxies = trustedProxies(v, path);
      } else if (key == "tls") {
        serverTls(v, s.tls);
      }
    });
  }

  // Parsed here, once per snapshot: requests only compare bytes.
  http::TrustedProxies trustedProxies(const YAML::Node& node, const std::string& path) {
    std::vector<http::Cidr> cidrs;
    std::size_t i = 0;
    for (const auto& [text, item] : stringList(node, path)) {
      const std::string item_path = path + "[" + std::to_string(i++) + "]";
      std::string why;
      if (text.empty()) fail(item, item_path + ": expected an IP address or CIDR such as \"10.0.0.0/8\" or \"::1\"");
      auto cidr = http::parseCidr(text, why);
      if (!cidr) fail(item, fmt::format("{}: {} is not an IP address or CIDR: {}", item_path, quote(text), why));
      cidrs.push_back(*cidr);
    }
    return http::TrustedProxies(std::move(cidrs));
  }

  // server.tls: {cert, key}. The files are loaded here as the server will load them, so a
  // certificate that would not serve fails `sluice check` and a reload, not the first handshake.
  void serverTls(const YAML::Node& node, ServerTlsConfig& t) {
    if (node.IsNull()) fail(node, "server.tls: expected a mapping {cert: FILE, key: FILE}");
    walk(node, "server.tls", kServerTlsKeys, [&](const std::string& key, const YAML::Node& v) {
      (key == "cert" ? t.cert : t.key) = scalar(v, "server.tls." + key, "a file name");
    });
    if (t.cert.empty() || t.key.empty())
      fail(node, std::string("server.tls: ") + (t.cert.empty() ? "cert" : "key") +
                     " is missing; set both cert (PEM certificate chain) and key (PEM private key)");
    std::string error;
    if (!http::ServerTls::load(t.cert, t.key, error)) fail(node, "server.tls: " + error);
  }

  // admin: {listen}. Its address must not overlap server.listen's: both acceptors use
  // SO_REUSEPORT, so the same address would bind twice and split connections between them.
  void admin(const YAML::Node& node, AdminConfig& a) {
    walk(node, "admin", kAdminKeys, [&](const std::string&, const YAML::Node& v) {
      a.listen = scalar(v, "admin.listen", "a string");
      if (a.listen.empty()) return;
      std::string why;
      if (!validListen(a.listen, why)) {
        fail(v, "admin.listen: expected host:port such as \"127.0.0.1:9091\", got " + quote(a.listen) + ": " + why);
      }
      adminListenNode_ = v;
    });
  }

  void checkAdminListen(const Config& cfg) {
    if (cfg.admin.listen.empty()) return;
    std::string ah, sh;
    std::uint16_t ap = 0, sp = 0;
    if (!http::splitHostPort(cfg.admin.listen, ah, ap) || !http::splitHostPort(cfg.server.listen, sh, sp)) return;
    auto wildcard = [](const std::string& h) { return h == "0.0.0.0" || h == "::"; };
    if (ap != 0 && ap == sp && (ah == sh || wildcard(ah) || wildcard(sh)))
      fail(adminListenNode_, "admin.listen " + quote(cfg.admin.listen) + " overlaps server.listen " +
                                 quote(cfg.server.listen) + "; give the admin listener its own port");
  }

  void routing(const YAML::Node& node, RoutingConfig& r) {
    walk(node, "routing", kRoutingKeys, [&](const std::string& key, const YAML::Node& v) {
      const std::string path = "routing." + key;
      if (key == "max_retries") {
        r.max_retries = static_cast<int>(integer(v, path, 0, 20));
      } else if (key == "timeouts") {
        walk(v, path, kTimeoutKeys, [&](const std::string& tkey, const YAML::Node& t) {
          const std::string tpath = path + "." + tkey;
          Millis& slot = tkey == "connect"      ? r.timeouts.connect
                         : tkey == "first_byte" ? r.timeouts.first_byte
                         : tkey == "idle"       ? r.timeouts.idle
                                                : r.timeouts.total;
          slot = duration(t, tpath, false);
        });
      } else if (key == "cooldown_default") {
        r.cooldown_default = duration(v, path, false);
      } else if (key == "breaker_failures") {
        r.breaker_failures = static_cast<int>(integer(v, path, 1, std::numeric_limits<int>::max()));
      } else if (key == "breaker_cooldown") {
        r.breaker_cooldown = duration(v, path, false);
      } else if (key == "aliases") {
        modelMap(v, path, r.aliases);
      } else if (key == "discovery_interval") {
        r.discovery_interval = duration(v, path, true);
      } else if (key == "recovery_interval") {
        r.recovery_interval = duration(v, path, true);
      } else if (key == "rules") {
        errorRules(v, path, r.rules);
      } else if (key == "fallbacks") {
        fallbacks(v, path, r.fallbacks);
      } else if (key == "stall_timeout") {
        r.stall_timeout = duration(v, path, true);
      } else if (key == "on_stall") {
        const std::string a = scalar(v, path, "error");
        const auto s = parseOnStall(a);
        if (!s) fail(v, path + ": expected error or continue, " + got(v, a));
        r.on_stall = *s;
      } else if (key == "hedge_after") {
        if (v.IsScalar() && v.Scalar() == "auto") {
          r.hedge_auto = true;
          r.hedge_after = Millis(0);
        } else {
          r.hedge_auto = false;
          r.hedge_after = duration(v, path, true);
        }
      } else if (key == "balance") {
        const std::string a = scalar(v, path, "weighted or latency");
        const auto b = parseBalance(a);
        if (!b) fail(v, path + ": expected weighted or latency, " + got(v, a));
        r.balance = *b;
      }
    });
  }

  // routing.rules: [{status: [N...], body: RE2, action: A, for: DURATION}...]
  void errorRules(const YAML::Node& node, const std::string& path, std::vector<ErrorRule>& out) {
    if (node.IsNull()) return;
    if (!node.IsSequence()) fail(node, path + ": expected a list of rules, got " + describeNode(node));
    std::size_t i = 0;
    for (const auto& item : node) {
      const std::string rpath = path + "[" + std::to_string(i++) + "]";
      ErrorRule rule;
      bool haveAction = false;
      bool haveFor = false;
      YAML::Node forNode;
      walk(item, rpath, kErrorRuleKeys, [&](const std::string& key, const YAML::Node& v) {
        std::string kpath = rpath;
        kpath.append(".").append(key);
        if (key == "status") {
          if (v.IsScalar()) {
            rule.status.push_back(static_cast<int>(integer(v, kpath, 400, 599)));
          } else if (v.IsSequence()) {
            std::size_t j = 0;
            for (const auto& st : v)
              rule.status.push_back(static_cast<int>(integer(st, kpath + "[" + std::to_string(j++) + "]", 400, 599)));
            if (rule.status.empty()) fail(v, kpath + ": an empty list matches nothing; leave the key out to match any status");
          } else {
            fail(v, kpath + ": expected a status from 400 to 599 or a list of them, got " + describeNode(v));
          }
        } else if (key == "body") {
          rule.body = str(v, kpath);
          if (rule.body.empty()) fail(v, kpath + ": empty pattern; leave the key out to match any body");
          re2::RE2 re(rule.body, re2::RE2::Quiet);
          if (!re.ok()) fail(v, kpath + ": not a valid RE2 pattern: " + re.error());
        } else if (key == "action") {
          const std::string a = scalar(v, kpath, "an action");
          const auto act = parseErrorAction(a);
          if (!act) fail(v, kpath + ": expected retry, failover, cooldown, disable, fallback or return, got " + quote(a));
          rule.action = *act;
          haveAction = true;
        } else if (key == "for") {
          rule.cooldown = duration(v, kpath, false);
          haveFor = true;
          forNode = v;
        }
      });
      if (!haveAction)
        fail(item, rpath + ": a rule needs an action (retry, failover, cooldown, disable, fallback or return)");
      if (haveFor && rule.action != ErrorAction::Cooldown)
        fail(forNode, rpath + ".for: only a cooldown rule takes a duration");
      out.push_back(std::move(rule));
    }
  }

  // routing.fallbacks: {MODEL: [MODEL...]}
  void fallbacks(const YAML::Node& node, const std::string& path, std::map<std::string, std::vector<std::string>>& out) {
    if (node.IsNull()) return;
    if (!node.IsMap()) fail(node, path + ": expected a mapping of model names to lists of model names, got " + describeNode(node));
    for (const auto& kv : node) {
      const YAML::Node& k = kv.first;
      if (!k.IsScalar() || k.Scalar().empty() || hasControlChar(k.Scalar()))
        fail(k, path + ": " + (k.IsScalar() ? quote(k.Scalar()) : describeNode(k)) + " is not a model name");
      const std::string mpath = path + "." + k.Scalar();
      std::vector<std::string> models;
      std::size_t i = 0;
      for (auto& [m, mnode] : stringList(kv.second, mpath)) {
        const std::string ipath = mpath + "[" + std::to_string(i++) + "]";
        if (m.empty() || hasControlChar(m)) fail(mnode, ipath + ": expected a model name");
        if (m == k.Scalar()) fail(mnode, ipath + ": a model cannot be its own fallback");
        if (std::find(models.begin(), models.end(), m) != models.end()) fail(mnode, ipath + ": " + quote(m) + " is listed twice");
        models.push_back(std::move(m));
      }
      if (!out.emplace(k.Scalar(), std::move(models)).second) fail(k, path + ": duplicate entry " + quote(k.Scalar()));
    }
  }

  // A mapping of model name -> model name (aliases, a channel's model_map).
  void modelMap(const YAML::Node& node, const std::string& path, std::map<std::string, std::string>& out) {
    if (node.IsNull()) return;
    if (!node.IsMap()) fail(node, path + ": expected a mapping of model names to model names, got " + describeNode(node));
    for (const auto& kv : node) {
      const YAML::Node& k = kv.first;
      if (!k.IsScalar() || k.Scalar().empty() || hasControlChar(k.Scalar()))
        fail(k, path + ": " + (k.IsScalar() ? quote(k.Scalar()) : describeNode(k)) + " is not a model name");
      const std::string vpath = path + "." + k.Scalar();
      std::string to = str(kv.second, vpath);
      if (to.empty() || hasControlChar(to)) fail(kv.second, vpath + ": expected a model name");
      if (!out.emplace(k.Scalar(), std::move(to)).second) fail(k, path + ": duplicate entry " + quote(k.Scalar()));
    }
  }

  void checkStoreUrl(const YAML::Node& n, const std::string& url) {
    const auto scheme = schemeOf(url);
    if (scheme != "sqlite" && scheme != "postgres" && scheme != "postgresql") {
      fail(n, "store.url: expected sqlite://PATH or postgres://USER:PASS@HOST:PORT/DB, got " +
                  (scheme.empty() ? quote(url.substr(0, 12)) : "scheme " + quote(scheme)));
    }
    if (url.size() == scheme.size() + 3) fail(n, "store.url: missing the part after \"://\"");
  }

  void checkRedisUrl(const YAML::Node& n, const std::string& url) {
    if (url.empty()) return;  // no Redis: state stays in process
    try {
      cluster::parseRedisUrl(url);
    } catch (const std::invalid_argument& e) {
      fail(n, std::string("redis.url: expected \"\" or redis://[:PASSWORD@]HOST:PORT[/DB]: ") + e.what());
    }
  }

  // Returns the URL without trailing slashes, so providers can append "/chat/completions".
  std::string baseUrl(const YAML::Node& n, const std::string& path) {
    std::string url = scalar(n, path, "a string");
    const auto parsed = boost::urls::parse_uri(url);
    std::string why;
    if (!parsed) {
      why = "not a valid URL";
    } else if (parsed->scheme_id() != boost::urls::scheme::http &&
               parsed->scheme_id() != boost::urls::scheme::https) {
      why = "the scheme must be http or https";
    } else if (!parsed->has_authority() || parsed->encoded_host().empty()) {
      why = "missing host";
    } else if (parsed->has_fragment()) {
      why = "a fragment (#...) is not allowed";
    }
    if (!why.empty()) {
      fail(n, path + ": expected an http:// or https:// URL, got " + quote(url) + ": " + why);
    }
    if (!parsed->has_query()) {
      while (!url.empty() && url.back() == '/') url.pop_back();
    }
    return url;
  }

  // A bedrock channel: its region (what SigV4 signs for), its base URL (the region's endpoint
  // unless given) and keys of AWS's shape. A malformed key is named by its position, never
  // quoted: it holds a secret.
  void bedrockChannel(const YAML::Node& item, const std::string& path, ChannelConfig& ch, bool has_base_url) {
    if (ch.region.empty()) {
      if (!has_base_url) fail(item, path + ": a bedrock channel needs \"region\" (e.g. us-east-1)");
      ch.region = regionFromBedrockHost(ch.base_url);
      if (ch.region.empty())
        fail(item, path + ": a bedrock channel whose base_url is not bedrock-runtime.REGION.amazonaws.com needs "
                          "\"region\" (what requests are signed for)");
    }
    if (!has_base_url) ch.base_url = "https://bedrock-runtime." + ch.region + ".amazonaws.com";
    // "${AWS_ACCESS_KEY_ID}:${AWS_SECRET_ACCESS_KEY}" with neither set leaves only the colons: an
    // unset key, dropped as an empty one is.
    std::erase_if(ch.keys, [](const std::string& k) { return k.find_first_not_of(':') == std::string::npos; });
    const YAML::Node keys = item["keys"];
    for (std::size_t i = 0; i < ch.keys.size(); ++i) {
      if (!cloud::parseAwsKey(ch.keys[i]))
        fail(keys ? keys : item, fmt::format("{}.keys[{}]: a bedrock key is ACCESS_KEY_ID:SECRET_ACCESS_KEY[:SESSION_TOKEN] "
                                             "(the key is not shown: it holds a secret)",
                                             path, i));
    }
  }

  // A subscription channel: an anthropic (claude) or openai (chatgpt) channel whose keys are the
  // CLI's credential files, pasted as JSON or named by path (read now; "~/" is $HOME). A key that
  // is not one is named by its position, never quoted: it holds a secret.
  void subscriptionChannel(const YAML::Node& item, const std::string& path, ChannelConfig& ch, bool has_base_url) {
    const auto kind = *cloud::parseSubscriptionKind(ch.subscription);
    const ChannelType want = kind == cloud::SubscriptionKind::Claude ? ChannelType::Anthropic : ChannelType::OpenAI;
    if (ch.type != want)
      fail(item, fmt::format("{}.subscription: a {} subscription is a channel of type {}", path, ch.subscription,
                             kind == cloud::SubscriptionKind::Claude ? "anthropic" : "openai"));
    if (!ch.region.empty()) fail(item, path + ".region: only a bedrock channel takes a region");
    if (!has_base_url) ch.base_url = std::string(cloud::defaultSubscriptionBaseUrl(kind));
    if (ch.token_url.empty()) ch.token_url = std::string(cloud::defaultTokenUrl(kind));
    const YAML::Node keys = item["keys"];
    for (std::size_t i = 0; i < ch.keys.size(); ++i) {
      std::string& k = ch.keys[i];
      if (k.front() != '{') {
        std::string file = k;
        if (file.starts_with("~/")) {
          const char* home = std::getenv("HOME");
          file = std::string(home ? home : "") + file.substr(1);
        }
        std::string unused;
        auto text = readKeyFile(file, &unused);
        if (!text)
          fail(keys ? keys : item, fmt::format("{}.keys[{}]: cannot read the credential file {} (a key of a "
                                               "subscription channel is the file's JSON or its path)",
                                               path, i, quote(file)));
        k = std::move(*text);
      }
      std::string why;
      auto cred = cloud::parseCredential(kind, k, &why);
      if (!cred)
        fail(keys ? keys : item, fmt::format("{}.keys[{}]: not a {} credential: {} (the key is not shown: it holds a secret)",
                                             path, i, ch.subscription, why));
      k = cloud::serializeCredential(*cred);  // one spelling per credential, whatever the file's layout
    }
  }

  // A vertex channel: its project and location (the model URLs name both), its base URL (the
  // location's endpoint unless given) and keys that are service-account JSON, each read from its
  // file when it is a path. A key is named by its position, never quoted: it holds a secret.
  void vertexChannel(const YAML::Node& item, const std::string& path, ChannelConfig& ch, bool has_base_url) {
    if (ch.project.empty()) fail(item, path + ": a vertex channel needs \"project\" (the Google Cloud project id)");
    if (ch.location.empty()) fail(item, path + ": a vertex channel needs \"location\" (e.g. us-central1 or global)");
    if (!has_base_url)
      ch.base_url = ch.location == "global" ? std::string("https://aiplatform.googleapis.com")
                                            : "https://" + ch.location + "-aiplatform.googleapis.com";
    const YAML::Node keys = item["keys"];
    for (std::size_t i = 0; i < ch.keys.size(); ++i) {
      try {
        ch.keys[i] = vertexKeyJson(ch.keys[i], true);
      } catch (const std::exception& e) {
        fail(keys ? keys : item, fmt::format("{}.keys[{}]: {}", path, i, e.what()));
      }
    }
  }

  void channels(const YAML::Node& node, std::vector<ChannelConfig>& out) {
    if (node.IsNull()) return;
    if (!node.IsSequence()) fail(node, "channels: expected a list of channels, got " + describeNode(node));
    std::map<std::string, int> names;  // name -> line
    std::size_t index = 0;
    for (const auto& item : node) {
      const std::string path = "channels[" + std::to_string(index++) + "]";
      if (!item.IsMap()) fail(item, path + ": expected a mapping, got " + describeNode(item));
      ChannelConfig ch;
      ch.line = item.Mark().line + 1;
      std::set<std::string> present;
      walk(item, path, kChannelKeys, [&](const std::string& key, const YAML::Node& v) {
        const std::string kpath = fmt::format("{}.{}", path, key);
        present.insert(key);
        if (key == "name") {
          ch.name = str(v, kpath);
          if (!validChannelName(ch.name)) {
            fail(v, kpath + ": " + quote(ch.name) +
                        " is not a valid channel name: use 1 to 64 letters, digits, '_', '.' or '-' "
                        "(it prefixes models as CHANNEL/MODEL)");
          }
          if (const auto [it, inserted] = names.emplace(ch.name, v.Mark().line + 1); !inserted) {
            fail(v, kpath + ": duplicate channel name " + quote(ch.name) + " (first declared at line " +
                        std::to_string(it->second) + ")");
          }
        } else if (key == "type") {
          const std::string t = str(v, kpath);
          const auto type = parseChannelType(t);
          if (!type) {
            std::array<std::string_view, kChannelTypes.size()> valid{};
            for (std::size_t i = 0; i < kChannelTypes.size(); ++i) valid[i] = kChannelTypes[i].name;
            fail(v, kpath + ": unknown channel type " + quote(t) + "; valid types: " + join(valid));
          }
          ch.type = *type;
        } else if (key == "base_url") {
          ch.base_url = baseUrl(v, kpath);
        } else if (key == "keys") {
          // An unset ${VAR} leaves an empty key: dropped, so a template config works with
          // whichever provider keys the environment has. Such a channel may end with no keys.
          for (auto& [k, knode] : stringList(v, kpath)) {
            if (k.empty()) continue;
            if (hasControlChar(k)) fail(knode, kpath + ": a key contains a control character (stray newline?)");
            ch.keys.push_back(std::move(k));
          }
        } else if (key == "models") {
          std::size_t i = 0;
          for (auto& [m, mnode] : stringList(v, kpath)) {
            const std::string mpath = kpath + "[" + std::to_string(i++) + "]";
            if (m.empty()) fail(mnode, mpath + ": empty model name");
            if (hasControlChar(m)) fail(mnode, mpath + ": model name contains a control character");
            ch.models.push_back(std::move(m));
          }
          if (ch.models.empty()) fail(v, kpath + ": must list at least one model");
        } else if (key == "priority") {
          ch.priority = static_cast<int>(integer(v, kpath, -1'000'000, 1'000'000));
        } else if (key == "weight") {
          ch.weight = static_cast<int>(integer(v, kpath, 0, 1'000'000));
        } else if (key == "headers") {
          walkHeaders(v, kpath, ch.headers);
        } else if (key == "model_map") {
          modelMap(v, kpath, ch.model_map);
        } else if (key == "region") {
          ch.region = str(v, kpath);
          if (!validAwsRegion(ch.region))
            fail(v, kpath + ": " + quote(ch.region) + " is not an AWS region (lowercase letters, digits and '-', e.g. us-east-1)");
        } else if (key == "subscription") {
          ch.subscription = str(v, kpath);
          if (!cloud::parseSubscriptionKind(ch.subscription))
            fail(v, kpath + ": " + quote(ch.subscription) + " is not a subscription kind; valid: claude, chatgpt");
        } else if (key == "project") {
          ch.project = str(v, kpath);
          if (!validGcpProject(ch.project))
            fail(v, kpath + ": " + quote(ch.project) + " is not a Google Cloud project id (lowercase letters, digits, '-')");
        } else if (key == "location") {
          ch.location = str(v, kpath);
          if (!validGcpLocation(ch.location))
            fail(v, kpath + ": " + quote(ch.location) + " is not a Google Cloud location (e.g. us-central1, global)");
        } else if (key == "tenant_id") {
          ch.tenant_id = str(v, kpath);
          if (!validEntraTenant(ch.tenant_id))
            fail(v, kpath + ": " + quote(ch.tenant_id) +
                        " is not an Entra tenant (a GUID or a domain such as contoso.onmicrosoft.com)");
        } else if (key == "client_id") {
          ch.client_id = str(v, kpath);
          if (ch.client_id.empty() || hasControlChar(ch.client_id)) fail(v, kpath + ": expected the application (client) id");
        } else if (key == "client_secret") {
          ch.client_secret = str(v, kpath);
          if (hasControlChar(ch.client_secret)) fail(v, kpath + ": the client secret contains a control character (not shown)");
        } else if (key == "token_url") {
          // A refresh token or a client secret is sent to it: https (http on loopback only).
          ch.token_url = baseUrl(v, kpath);
          if (const auto why = credentialUrlProblem(*boost::urls::parse_uri(ch.token_url)); !why.empty())
            fail(v, kpath + ": " + why);
        } else if (key == "api_version") {
          ch.api_version = str(v, kpath);
          if (ch.api_version.empty() || hasControlChar(ch.api_version)) fail(v, kpath + ": expected a version string");
        } else if (key == "rpm" || key == "tpm" || key == "max_concurrent" || key == "key_rpm" || key == "key_tpm") {
          std::int64_t n = integer(v, kpath, 0, std::numeric_limits<int>::max());
          (key == "rpm"              ? ch.rpm
           : key == "tpm"            ? ch.tpm
           : key == "max_concurrent" ? ch.max_concurrent
           : key == "key_rpm"        ? ch.key_rpm
                                     : ch.key_tpm) = n;
        } else if (key == "cache") {
          ch.cache = boolean(v, kpath);
        } else if (key == "cache_ttl") {
          ch.cache_ttl = duration(v, kpath, false);
        } else if (key == "screening") {
          ch.screening = screenAction(v, kpath);
        }
      });
      for (const char* required : {"name", "type", "models"}) {
        if (!present.contains(required)) fail(item, path + ": missing required key \"" + required + "\"");
      }
      if (!ch.subscription.empty()) {
        subscriptionChannel(item, path, ch, present.contains("base_url"));
      } else if (ch.type == ChannelType::Bedrock) {
        bedrockChannel(item, path, ch, present.contains("base_url"));
      } else if (ch.type == ChannelType::Vertex) {
        vertexChannel(item, path, ch, present.contains("base_url"));
      } else {
        if (!present.contains("base_url")) fail(item, path + ": missing required key \"base_url\"");
        if (!ch.region.empty()) fail(item, path + ".region: only a bedrock channel takes a region");
      }
      if (ch.type != ChannelType::Vertex && (present.contains("project") || present.contains("location")))
        fail(item, path + ": only a vertex channel takes \"project\" and \"location\"");
      // token_url is a subscription's OAuth endpoint, or else Entra ID's.
      const bool anyEntra = present.contains("tenant_id") || present.contains("client_id") ||
                            present.contains("client_secret") ||
                            (present.contains("token_url") && ch.subscription.empty());
      if (present.contains("token_url") && ch.subscription.empty() && ch.type != ChannelType::Azure)
        fail(item, path + ".token_url: only a subscription channel or an azure channel with Entra ID takes a token_url");
      if (anyEntra) {
        if (ch.type != ChannelType::Azure)
          fail(item, path + ": only an azure channel takes tenant_id, client_id, client_secret and token_url (Entra ID)");
        if (ch.client_id.empty() || ch.client_secret.empty() || (ch.tenant_id.empty() && ch.token_url.empty()))
          fail(item, path + ": Entra ID needs tenant_id, client_id and client_secret (an unset ${VAR}?)");
      }
      out.push_back(std::move(ch));
    }
  }

  // mcp.servers: each {name, url, headers} (Streamable HTTP) or {name, command} (stdio).
  void mcpServers(const YAML::Node& node, std::vector<McpServerConfig>& out) {
    if (node.IsNull()) return;
    if (!node.IsSequence()) fail(node, "mcp.servers: expected a list of servers, got " + describeNode(node));
    std::map<std::string, int> names;  // name -> line
    std::size_t index = 0;
    for (const auto& item : node) {
      const std::string path = "mcp.servers[" + std::to_string(index++) + "]";
      if (!item.IsMap()) fail(item, path + ": expected a mapping, got " + describeNode(item));
      McpServerConfig s;
      s.line = item.Mark().line + 1;
      std::set<std::string> present;
      walk(item, path, kMcpServerKeys, [&](const std::string& key, const YAML::Node& v) {
        const std::string kpath = path + "." + key;
        present.insert(key);
        if (key == "name") {
          s.name = str(v, kpath);
          if (!validMcpServerName(s.name)) {
            fail(v, kpath + ": " + quote(s.name) +
                        " is not a valid MCP server name: use 1 to 64 letters, digits, '_' or '-', without \"__\" "
                        "or a final '_' (it prefixes the server's tools as NAME__TOOL)");
          }
          if (const auto [it, inserted] = names.emplace(s.name, v.Mark().line + 1); !inserted) {
            fail(v, kpath + ": duplicate MCP server name " + quote(s.name) + " (first declared at line " +
                        std::to_string(it->second) + ")");
          }
        } else if (key == "url") {
          s.url = baseUrl(v, kpath);
        } else if (key == "headers") {
          walkHeaders(v, kpath, s.headers);
        } else if (key == "command") {
          std::size_t i = 0;
          for (auto& [arg, anode] : stringList(v, kpath)) {
            const std::string apath = kpath + "[" + std::to_string(i++) + "]";
            if (arg.find('\0') != std::string::npos || (i == 1 && arg.empty()))
              fail(anode, apath + ": expected a program (the first element) or an argument");
            s.command.push_back(std::move(arg));
          }
          if (s.command.empty())
            fail(v, kpath + ": expected the program and its arguments, e.g. [\"node\", \"server.js\"]");
        } else if (key == "timeout") {
          s.timeout = duration(v, kpath, false);
        }
      });
      if (!present.contains("name")) fail(item, path + ": missing required key \"name\"");
      if (present.contains("url") == present.contains("command"))
        fail(item, path + ": give exactly one of url (a Streamable HTTP server) or command (a stdio server)");
      if (present.contains("headers") && !present.contains("url"))
        fail(item, path + ": headers are sent to a url; a command server takes none");
      out.push_back(std::move(s));
    }
  }

  void walkHeaders(const YAML::Node& node, const std::string& path, std::map<std::string, std::string>& out) {
    if (node.IsNull()) return;
    if (!node.IsMap()) fail(node, path + ": expected a mapping of header names to values, got " + describeNode(node));
    std::map<std::string, int> seen;  // lower-cased: header names are case-insensitive
    for (const auto& kv : node) {
      const YAML::Node& k = kv.first;
      if (!k.IsScalar() || !validHeaderName(k.Scalar())) {
        fail(k, path + ": " + (k.IsScalar() ? quote(k.Scalar()) : describeNode(k)) + " is not a valid header name");
      }
      std::string lowered = k.Scalar();
      for (char& c : lowered) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      if (const auto [it, inserted] = seen.emplace(lowered, k.Mark().line + 1); !inserted) {
        fail(k, path + ": duplicate header " + quote(k.Scalar()) + " (first at line " +
                    std::to_string(it->second) + ")");
      }
      const std::string vpath = path + "." + k.Scalar();
      std::string value = str(kv.second, vpath);
      if (hasControlChar(value)) fail(kv.second, vpath + ": header value contains a control character");
      out.emplace(k.Scalar(), std::move(value));
    }
  }

  std::string name_;
  YAML::Node adminListenNode_;  // where admin.listen was set, for the overlap message
};

// Replaces the password of scheme://user:pass@host/... and any password=... query parameter.
std::string maskUrl(const std::string& url) {
  std::string out = url;
  const auto start = out.find("://");
  if (start != std::string::npos) {
    const auto auth_begin = start + 3;
    const auto auth_end = std::min(out.find_first_of("/?#", auth_begin), out.size());
    const auto at = out.rfind('@', auth_end);
    if (at != std::string::npos && at >= auth_begin) {
      const auto colon = out.find(':', auth_begin);
      if (colon != std::string::npos && colon < at) out.replace(colon + 1, at - colon - 1, "***");
    }
  }
  std::size_t pos = 0;
  while ((pos = out.find("password=", pos)) != std::string::npos) {
    if (pos > 0 && out[pos - 1] != '?' && out[pos - 1] != '&') {
      pos += 9;
      continue;
    }
    const auto value_begin = pos + 9;
    const auto value_end = std::min(out.find_first_of("&#", value_begin), out.size());
    out.replace(value_begin, value_end - value_begin, "***");
    pos = value_begin + 3;
  }
  return out;
}

}  // namespace

std::string maskedUrl(const std::string& url) {
  return maskUrl(url);
}

const char* screenActionName(ScreenAction a) {
  switch (a) {
    case ScreenAction::Off: return "off";
    case ScreenAction::Log: return "log";
    case ScreenAction::Warn: return "warn";
    case ScreenAction::Block: return "block";
  }
  return "off";
}

std::optional<ScreenAction> parseScreenAction(std::string_view s) {
  for (auto a : {ScreenAction::Off, ScreenAction::Log, ScreenAction::Warn, ScreenAction::Block}) {
    if (s == screenActionName(a)) return a;
  }
  return std::nullopt;
}

const char* errorActionName(ErrorAction a) {
  switch (a) {
    case ErrorAction::Retry: return "retry";
    case ErrorAction::Failover: return "failover";
    case ErrorAction::Cooldown: return "cooldown";
    case ErrorAction::Disable: return "disable";
    case ErrorAction::Fallback: return "fallback";
    case ErrorAction::Return: return "return";
  }
  return "failover";
}

std::optional<ErrorAction> parseErrorAction(std::string_view s) {
  for (auto a : {ErrorAction::Retry, ErrorAction::Failover, ErrorAction::Cooldown, ErrorAction::Disable,
                 ErrorAction::Fallback, ErrorAction::Return}) {
    if (s == errorActionName(a)) return a;
  }
  return std::nullopt;
}

const char* balanceName(Balance b) { return b == Balance::Latency ? "latency" : "weighted"; }

std::optional<Balance> parseBalance(std::string_view s) {
  if (s == "weighted") return Balance::Weighted;
  if (s == "latency") return Balance::Latency;
  return std::nullopt;
}

const char* onStallName(OnStall s) { return s == OnStall::Continue ? "continue" : "error"; }

std::optional<OnStall> parseOnStall(std::string_view s) {
  if (s == "error") return OnStall::Error;
  if (s == "continue") return OnStall::Continue;
  return std::nullopt;
}

const char* channelTypeName(ChannelType t) {
  for (const auto& e : kChannelTypes) {
    if (e.type == t) return e.name;
  }
  return "unknown";
}

std::optional<ChannelType> parseChannelType(std::string_view name) {
  for (const auto& e : kChannelTypes) {
    if (name == e.name) return e.type;
  }
  return std::nullopt;
}

std::shared_ptr<const Config> parseConfig(const std::string& yaml_text, const std::string& name) {
  return std::make_shared<const Config>(Loader(name).load(yaml_text));
}

std::shared_ptr<const Config> loadConfigFile(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) throw ConfigError("cannot read " + path + ": " + std::strerror(errno), 0, 0);
  std::string text;
  std::array<char, 65536> buf{};
  int err = 0;
  while (true) {
    const std::size_t n = std::fread(buf.data(), 1, buf.size(), f);
    text.append(buf.data(), n);
    if (text.size() > kMaxConfigBytes) {
      std::fclose(f);
      throw ConfigError("cannot read " + path + ": larger than " + formatByteSize(kMaxConfigBytes), 0, 0);
    }
    if (n < buf.size()) {
      if (std::ferror(f) != 0) err = errno != 0 ? errno : EIO;
      break;
    }
  }
  std::fclose(f);
  if (err != 0) throw ConfigError("cannot read " + path + ": " + std::strerror(err), 0, 0);
  Config cfg = Loader(path).load(text);
  cfg.source_path = path;
  return std::make_shared<const Config>(std::move(cfg));
}

bool validAwsRegion(std::string_view r) {
  if (r.empty() || r.size() > 32 || r.front() == '-' || r.back() == '-') return false;
  return std::all_of(r.begin(), r.end(), [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-'; });
}

namespace {
bool lowerDigitDash(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-'; }
}  // namespace

bool validGcpLocation(std::string_view l) {
  if (l.empty() || l.size() > 40 || l.front() == '-' || l.back() == '-') return false;
  return std::all_of(l.begin(), l.end(), lowerDigitDash);
}

bool validGcpProject(std::string_view p) {
  if (p.empty() || p.size() > 100 || p.front() == '-' || p.back() == '-' || p.front() == '.' || p.front() == ':')
    return false;
  return std::all_of(p.begin(), p.end(), [](char c) { return lowerDigitDash(c) || c == '.' || c == ':'; });
}

bool validEntraTenant(std::string_view t) {
  if (t.empty() || t.size() > 253 || t.front() == '.' || t.front() == '-' || t.find("..") != std::string_view::npos)
    return false;
  return std::all_of(t.begin(), t.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '.';
  });
}

std::string credentialUrlProblem(const boost::urls::url_view& url) {
  if (!url.has_authority() || url.encoded_host().empty()) return "not an absolute URL with a host";
  if (url.has_fragment()) return "a fragment (#...) is not allowed";
  if (url.scheme_id() == boost::urls::scheme::http) {
    const std::string host(url.encoded_host());
    if (host != "localhost" && !host.starts_with("127.") && host != "[::1]")
      return "the scheme must be https (http only for a loopback host)";
    return "";
  }
  if (url.scheme_id() != boost::urls::scheme::https) return "the scheme must be https";
  return "";
}

std::string ChannelConfig::entraTokenUrl() const {
  if (!token_url.empty()) return token_url;
  return "https://login.microsoftonline.com/" + tenant_id + "/oauth2/v2.0/token";
}

std::string vertexKeyJson(const std::string& key, bool allow_path) {
  std::string text = key;
  if (key.find_first_not_of(" \t\r\n") == std::string::npos)
    throw std::runtime_error("an empty service-account key");
  if (key[key.find_first_not_of(" \t\r\n")] != '{') {
    if (!allow_path)
      throw std::runtime_error("a vertex key is the service-account JSON itself (a file path is only read from the config file)");
    std::string why;
    auto file = readKeyFile(key, &why);
    if (!file) throw std::runtime_error("cannot read the service-account file " + key + ": " + why);
    text = std::move(*file);
  }
  std::string why;
  if (!cloud::ServiceAccount::parse(text, &why)) throw std::runtime_error("not a usable service-account key: " + why);
  // Compact: one line, whatever the file's layout (it travels as a key, through the store).
  return cloud::compactJson(text);
}

std::string regionFromBedrockHost(std::string_view base_url) {
  const auto parsed = boost::urls::parse_uri(base_url);
  if (!parsed) return {};
  std::string host = parsed->host();
  static constexpr std::string_view kPrefix = "bedrock-runtime.", kSuffix = ".amazonaws.com";
  std::string_view h = host;
  if (!h.starts_with(kPrefix) || !h.ends_with(kSuffix)) return {};
  std::string region(h.substr(kPrefix.size(), h.size() - kPrefix.size() - kSuffix.size()));
  return validAwsRegion(region) ? region : std::string();
}

std::string maskSecret(std::string_view secret) {
  if (secret.empty()) return {};
  if (secret.size() < 8) return "***";
  if (secret.front() == '{') return "{credential}";  // a subscription's credential JSON: nothing of it shown
  return std::string(secret.substr(0, 3)) + "\u2026" + std::string(secret.substr(secret.size() - 2));
}

namespace {
// A section's configured headers (a webhook's, a collector's): the values are credentials.
void emitMaskedHeaders(YAML::Emitter& e, const std::map<std::string, std::string>& headers) {
  if (headers.empty()) return;
  e << YAML::Key << "headers" << YAML::Value << YAML::BeginMap;
  for (const auto& [name, value] : headers)
    e << YAML::Key << name << YAML::Value << YAML::DoubleQuoted << maskSecret(value);
  e << YAML::EndMap;
}
}  // namespace

std::string describeConfig(const Config& c) {
  YAML::Emitter e;
  e.SetIndent(2);
  e << YAML::BeginMap;
  e << YAML::Key << "server" << YAML::Value << YAML::BeginMap;
  e << YAML::Key << "listen" << YAML::Value << c.server.listen;
  e << YAML::Key << "workers" << YAML::Value << c.server.workers;
  e << YAML::Key << "pack_connections" << YAML::Value << c.server.pack_connections;
  e << YAML::Key << "max_body_bytes" << YAML::Value << formatByteSize(c.server.max_body_bytes);
  e << YAML::Key << "max_header_bytes" << YAML::Value << formatByteSize(c.server.max_header_bytes);
  e << YAML::Key << "header_timeout" << YAML::Value << formatDuration(c.server.header_timeout);
  e << YAML::Key << "keepalive_timeout" << YAML::Value << formatDuration(c.server.keepalive_timeout);
  e << YAML::Key << "shutdown_grace" << YAML::Value << formatDuration(c.server.shutdown_grace);
  if (!c.server.trusted_proxies.empty()) {
    e << YAML::Key << "trusted_proxies" << YAML::Value << YAML::Flow << YAML::BeginSeq;
    for (const auto& cidr : c.server.trusted_proxies.cidrs()) e << cidr.text();
    e << YAML::EndSeq;
  }
  if (c.server.tls.enabled()) {
    e << YAML::Key << "tls" << YAML::Value << YAML::BeginMap;
    e << YAML::Key << "cert" << YAML::Value << YAML::DoubleQuoted << c.server.tls.cert;
    e << YAML::Key << "key" << YAML::Value << YAML::DoubleQuoted << c.server.tls.key << YAML::EndMap;
  }
  e << YAML::EndMap;
  if (!c.admin.listen.empty()) {
    e << YAML::Key << "admin" << YAML::Value << YAML::BeginMap;
    e << YAML::Key << "listen" << YAML::Value << YAML::DoubleQuoted << c.admin.listen << YAML::EndMap;
  }
  e << YAML::Key << "auth" << YAML::Value << YAML::BeginMap;
  e << YAML::Key << "master_key" << YAML::Value << YAML::DoubleQuoted << maskSecret(c.auth.master_key);
  if (const auto& o = c.auth.oidc; o.enabled()) {
    e << YAML::Key << "oidc" << YAML::Value << YAML::BeginMap;
    e << YAML::Key << "issuer" << YAML::Value << YAML::DoubleQuoted << o.issuer;
    e << YAML::Key << "client_id" << YAML::Value << YAML::DoubleQuoted << o.client_id;
    e << YAML::Key << "client_secret" << YAML::Value << YAML::DoubleQuoted << maskSecret(o.client_secret);
    e << YAML::Key << "redirect_url" << YAML::Value << YAML::DoubleQuoted << o.redirect_url;
    e << YAML::Key << "roles_claim" << YAML::Value << YAML::DoubleQuoted << o.roles_claim;
    e << YAML::Key << "role_map" << YAML::Value << YAML::Flow << YAML::BeginMap;
    for (const auto& [group, role] : o.role_map) e << YAML::Key << group << YAML::Value << role;
    e << YAML::EndMap;
    e << YAML::Key << "scopes" << YAML::Value << YAML::Flow << o.scopes;
    e << YAML::Key << "session_idle" << YAML::Value << formatDuration(o.session_idle);
    e << YAML::Key << "session_max" << YAML::Value << formatDuration(o.session_max);
    e << YAML::Key << "timeout" << YAML::Value << formatDuration(o.timeout);
    if (!o.post_logout_redirect_url.empty())
      e << YAML::Key << "post_logout_redirect_url" << YAML::Value << YAML::DoubleQuoted << o.post_logout_redirect_url;
    e << YAML::EndMap;
  }
  e << YAML::EndMap;
  e << YAML::Key << "store" << YAML::Value << YAML::BeginMap;
  e << YAML::Key << "url" << YAML::Value << YAML::DoubleQuoted << maskUrl(c.store.url);
  e << YAML::Key << "request_logs" << YAML::Value << c.store.request_logs;
  e << YAML::Key << "log_retention_days" << YAML::Value << c.store.log_retention_days;
  e << YAML::Key << "log_bodies" << YAML::Value << c.store.log_bodies;
  e << YAML::Key << "log_body_max_bytes" << YAML::Value << formatByteSize(c.store.log_body_max_bytes);
  e << YAML::Key << "secret_key" << YAML::Value << YAML::DoubleQuoted << maskSecret(c.store.secret_key);
  e << YAML::Key << "responses" << YAML::Value << YAML::Flow << YAML::BeginMap;
  e << YAML::Key << "enabled" << YAML::Value << c.store.responses.enabled;
  e << YAML::Key << "ttl" << YAML::Value << formatDuration(c.store.responses.ttl);
  e << YAML::Key << "max_bytes" << YAML::Value << formatByteSize(c.store.responses.max_bytes) << YAML::EndMap;
  e << YAML::EndMap;
  e << YAML::Key << "redis" << YAML::Value << YAML::BeginMap;
  e << YAML::Key << "url" << YAML::Value << YAML::DoubleQuoted << maskUrl(c.redis.url) << YAML::EndMap;
  e << YAML::Key << "routing" << YAML::Value << YAML::BeginMap;
  e << YAML::Key << "max_retries" << YAML::Value << c.routing.max_retries;
  e << YAML::Key << "timeouts" << YAML::Value << YAML::Flow << YAML::BeginMap;
  e << YAML::Key << "connect" << YAML::Value << formatDuration(c.routing.timeouts.connect);
  e << YAML::Key << "first_byte" << YAML::Value << formatDuration(c.routing.timeouts.first_byte);
  e << YAML::Key << "idle" << YAML::Value << formatDuration(c.routing.timeouts.idle);
  e << YAML::Key << "total" << YAML::Value << formatDuration(c.routing.timeouts.total);
  e << YAML::EndMap;
  e << YAML::Key << "cooldown_default" << YAML::Value << formatDuration(c.routing.cooldown_default);
  e << YAML::Key << "breaker_failures" << YAML::Value << c.routing.breaker_failures;
  e << YAML::Key << "breaker_cooldown" << YAML::Value << formatDuration(c.routing.breaker_cooldown);
  e << YAML::Key << "recovery_interval" << YAML::Value << formatDuration(c.routing.recovery_interval);
  e << YAML::Key << "discovery_interval" << YAML::Value << formatDuration(c.routing.discovery_interval);
  e << YAML::Key << "stall_timeout" << YAML::Value << formatDuration(c.routing.stall_timeout);
  e << YAML::Key << "on_stall" << YAML::Value << onStallName(c.routing.on_stall);
  e << YAML::Key << "balance" << YAML::Value << balanceName(c.routing.balance);
  e << YAML::Key << "hedge_after" << YAML::Value
    << (c.routing.hedge_auto ? std::string("auto") : formatDuration(c.routing.hedge_after));
  if (!c.routing.aliases.empty()) {
    e << YAML::Key << "aliases" << YAML::Value << YAML::BeginMap;
    for (const auto& [from, to] : c.routing.aliases) e << YAML::Key << from << YAML::Value << to;
    e << YAML::EndMap;
  }
  if (!c.routing.rules.empty()) {
    e << YAML::Key << "rules" << YAML::Value << YAML::BeginSeq;
    for (const auto& rule : c.routing.rules) {
      e << YAML::Flow << YAML::BeginMap;
      if (!rule.status.empty()) {
        e << YAML::Key << "status" << YAML::Value << YAML::Flow << YAML::BeginSeq;
        for (int st : rule.status) e << st;
        e << YAML::EndSeq;
      }
      if (!rule.body.empty()) e << YAML::Key << "body" << YAML::Value << YAML::DoubleQuoted << rule.body;
      e << YAML::Key << "action" << YAML::Value << errorActionName(rule.action);
      if (rule.cooldown.count() > 0) e << YAML::Key << "for" << YAML::Value << formatDuration(rule.cooldown);
      e << YAML::EndMap;
    }
    e << YAML::EndSeq;
  }
  if (!c.routing.fallbacks.empty()) {
    e << YAML::Key << "fallbacks" << YAML::Value << YAML::BeginMap;
    for (const auto& [from, to] : c.routing.fallbacks) {
      e << YAML::Key << from << YAML::Value << YAML::Flow << YAML::BeginSeq;
      for (const auto& m : to) e << m;
      e << YAML::EndSeq;
    }
    e << YAML::EndMap;
  }
  e << YAML::EndMap;
  e << YAML::Key << "channels" << YAML::Value << YAML::BeginSeq;
  for (const auto& ch : c.channels) {
    e << YAML::BeginMap;
    e << YAML::Key << "name" << YAML::Value << ch.name;
    e << YAML::Key << "type" << YAML::Value << channelTypeName(ch.type);
    e << YAML::Key << "base_url" << YAML::Value << ch.base_url;
    if (!ch.region.empty()) e << YAML::Key << "region" << YAML::Value << ch.region;
    if (!ch.subscription.empty()) e << YAML::Key << "subscription" << YAML::Value << ch.subscription;
    if (!ch.token_url.empty()) e << YAML::Key << "token_url" << YAML::Value << ch.token_url;
    if (!ch.project.empty()) e << YAML::Key << "project" << YAML::Value << ch.project;
    if (!ch.location.empty()) e << YAML::Key << "location" << YAML::Value << ch.location;
    if (ch.entra()) {
      if (!ch.tenant_id.empty()) e << YAML::Key << "tenant_id" << YAML::Value << ch.tenant_id;
      e << YAML::Key << "client_id" << YAML::Value << ch.client_id;
      e << YAML::Key << "client_secret" << YAML::Value << YAML::DoubleQuoted << maskSecret(ch.client_secret);
    }
    e << YAML::Key << "keys" << YAML::Value << YAML::Flow << YAML::BeginSeq;
    for (const auto& k : ch.keys)
      e << YAML::DoubleQuoted << (ch.type == ChannelType::Vertex ? cloud::serviceAccountLabel(k) : maskSecret(k));
    e << YAML::EndSeq;
    e << YAML::Key << "models" << YAML::Value << YAML::Flow << YAML::BeginSeq;
    for (const auto& m : ch.models) e << YAML::DoubleQuoted << m;
    e << YAML::EndSeq;
    e << YAML::Key << "priority" << YAML::Value << ch.priority;
    e << YAML::Key << "weight" << YAML::Value << ch.weight;
    for (const auto& [name, v] : {std::pair<const char*, std::int64_t>{"rpm", ch.rpm}, {"tpm", ch.tpm},
                                  {"max_concurrent", ch.max_concurrent}, {"key_rpm", ch.key_rpm},
                                  {"key_tpm", ch.key_tpm}}) {
      if (v > 0) e << YAML::Key << name << YAML::Value << v;
    }
    if (!ch.model_map.empty()) {
      e << YAML::Key << "model_map" << YAML::Value << YAML::BeginMap;
      for (const auto& [from, to] : ch.model_map) e << YAML::Key << from << YAML::Value << to;
      e << YAML::EndMap;
    }
    if (!ch.headers.empty()) {
      // Header values often carry credentials (api-key, Authorization): masked like keys.
      e << YAML::Key << "headers" << YAML::Value << YAML::BeginMap;
      for (const auto& [name, value] : ch.headers) {
        e << YAML::Key << name << YAML::Value << YAML::DoubleQuoted << maskSecret(value);
      }
      e << YAML::EndMap;
    }
    if (ch.cache) e << YAML::Key << "cache" << YAML::Value << *ch.cache;
    if (ch.cache_ttl) e << YAML::Key << "cache_ttl" << YAML::Value << formatDuration(*ch.cache_ttl);
    if (ch.screening) e << YAML::Key << "screening" << YAML::Value << screenActionName(*ch.screening);
    e << YAML::EndMap;
  }
  e << YAML::EndSeq;
  e << YAML::Key << "cache" << YAML::Value << YAML::BeginMap;
  e << YAML::Key << "enabled" << YAML::Value << c.cache.enabled;
  e << YAML::Key << "ttl" << YAML::Value << formatDuration(c.cache.ttl);
  e << YAML::Key << "max_bytes" << YAML::Value << formatByteSize(c.cache.max_bytes);
  e << YAML::Key << "max_entry_bytes" << YAML::Value << formatByteSize(c.cache.max_entry_bytes);
  e << YAML::Key << "shared" << YAML::Value << c.cache.shared;
  e << YAML::EndMap;
  e << YAML::Key << "redaction" << YAML::Value << YAML::BeginMap;
  e << YAML::Key << "enabled" << YAML::Value << c.redaction.enabled;
  e << YAML::Key << "key" << YAML::Value << YAML::DoubleQuoted << maskSecret(c.redaction.key);
  e << YAML::Key << "builtin" << YAML::Value << c.redaction.builtin;
  if (!c.redaction.actions.empty()) {
    e << YAML::Key << "actions" << YAML::Value << YAML::BeginMap;
    for (const auto& [name, a] : c.redaction.actions) e << YAML::Key << name << YAML::Value << a;
    e << YAML::EndMap;
  }
  if (!c.redaction.rules.empty()) {
    e << YAML::Key << "rules" << YAML::Value << YAML::BeginSeq;
    for (const auto& r : c.redaction.rules) {
      e << YAML::BeginMap << YAML::Key << "name" << YAML::Value << r.name;
      e << YAML::Key << "pattern" << YAML::Value << YAML::SingleQuoted << r.pattern;
      e << YAML::Key << "action" << YAML::Value << r.action;
      if (!r.fields.empty()) {
        e << YAML::Key << "fields" << YAML::Value << YAML::Flow << YAML::BeginSeq;
        for (const auto& f : r.fields) e << f;
        e << YAML::EndSeq;
      }
      if (!r.validator.empty()) e << YAML::Key << "validator" << YAML::Value << r.validator;
      e << YAML::EndMap;
    }
    e << YAML::EndSeq;
  }
  e << YAML::EndMap;
  e << YAML::Key << "screening" << YAML::Value << YAML::BeginMap;
  e << YAML::Key << "action" << YAML::Value << screenActionName(c.screening.action);
  if (c.screening.threshold > 0) e << YAML::Key << "threshold" << YAML::Value << c.screening.threshold;
  if (!c.screening.deny.empty()) {
    e << YAML::Key << "deny" << YAML::Value << YAML::BeginSeq;
    for (const auto& d : c.screening.deny) e << YAML::SingleQuoted << d;
    e << YAML::EndSeq;
  }
  if (!c.screening.model.empty()) e << YAML::Key << "model" << YAML::Value << c.screening.model;
  if (!c.screening.scope_user || !c.screening.scope_tool) {
    e << YAML::Key << "scope" << YAML::Value << YAML::Flow << YAML::BeginSeq;
    if (c.screening.scope_user) e << "user";
    if (c.screening.scope_tool) e << "tool";
    e << YAML::EndSeq;
  }
  e << YAML::EndMap;
  e << YAML::Key << "guardrail" << YAML::Value << YAML::BeginMap;
  e << YAML::Key << "url" << YAML::Value << YAML::DoubleQuoted << maskUrl(c.guardrail.url);
  e << YAML::Key << "timeout" << YAML::Value << formatDuration(c.guardrail.timeout);
  e << YAML::Key << "on_failure" << YAML::Value << (c.guardrail.fail_open ? "fail_open" : "fail_closed");
  e << YAML::Key << "review_response" << YAML::Value << c.guardrail.review_response;
  emitMaskedHeaders(e, c.guardrail.headers);
  e << YAML::EndMap;
  e << YAML::Key << "telemetry" << YAML::Value << YAML::BeginMap;
  e << YAML::Key << "otlp_endpoint" << YAML::Value << YAML::DoubleQuoted << maskUrl(c.telemetry.otlp_endpoint);
  e << YAML::Key << "service_name" << YAML::Value << c.telemetry.service_name;
  e << YAML::Key << "sample_ratio" << YAML::Value << c.telemetry.sample_ratio;
  e << YAML::Key << "capture_content" << YAML::Value << c.telemetry.capture_content;
  emitMaskedHeaders(e, c.telemetry.headers);
  e << YAML::EndMap;
  if (!c.mcp.servers.empty()) {
    e << YAML::Key << "mcp" << YAML::Value << YAML::BeginMap << YAML::Key << "servers" << YAML::Value << YAML::BeginSeq;
    for (const auto& m : c.mcp.servers) {
      e << YAML::BeginMap << YAML::Key << "name" << YAML::Value << m.name;
      if (!m.url.empty()) e << YAML::Key << "url" << YAML::Value << YAML::DoubleQuoted << maskUrl(m.url);
      emitMaskedHeaders(e, m.headers);
      if (!m.command.empty()) {
        // Only the program: its arguments may carry a token.
        e << YAML::Key << "command" << YAML::Value << YAML::Flow << YAML::BeginSeq << m.command.front();
        if (m.command.size() > 1) e << "…";
        e << YAML::EndSeq;
      }
      e << YAML::Key << "timeout" << YAML::Value << formatDuration(m.timeout) << YAML::EndMap;
    }
    e << YAML::EndSeq << YAML::EndMap;
  }
  if (!c.pricing.empty()) {
    e << YAML::Key << "pricing" << YAML::Value << YAML::BeginMap;
    for (const auto& [model, p] : c.pricing) {
      e << YAML::Key << model << YAML::Value << YAML::Flow << YAML::BeginMap;
      e << YAML::Key << "input" << YAML::Value << p.input << YAML::Key << "output" << YAML::Value << p.output;
      if (p.cached_input >= 0) e << YAML::Key << "cached_input" << YAML::Value << p.cached_input;
      if (p.cache_write >= 0) e << YAML::Key << "cache_write" << YAML::Value << p.cache_write;
      if (p.reasoning >= 0) e << YAML::Key << "reasoning" << YAML::Value << p.reasoning;
      e << YAML::EndMap;
    }
    e << YAML::EndMap;
  }
  e << YAML::EndMap;
  return std::string(e.c_str()) + "\n";
}

}  // namespace sluice::config
