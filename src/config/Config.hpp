// Config: the immutable snapshot built from YAML. Shared as std::shared_ptr<const Config>;
// never mutated after load, so any thread may read it without locks.
#pragma once
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "http/ClientAddress.hpp"

namespace boost::urls {
class url_view;
}  // namespace boost::urls

namespace sluice::config {

using Millis = std::chrono::milliseconds;

// The edge's own certificate: PEM files, the certificate file holding the chain (leaf first).
// Unset (both empty): the public listener speaks plain HTTP.
struct ServerTlsConfig {
  std::string cert;
  std::string key;
  bool enabled() const { return !cert.empty(); }
  bool operator==(const ServerTlsConfig&) const = default;
};

struct ServerConfig {
  std::string listen = "127.0.0.1:8080";  // host:port; port 0 picks a free one
  int workers = 0;                         // 0 = one per core
  int pack_connections = 0;                // >0: the first worker takes new connections up to this many (http/Server.hpp)
  std::uint64_t max_body_bytes = 32ull << 20;  // 413 past it
  std::size_t max_header_bytes = 64u * 1024;    // 431 past it
  Millis header_timeout{10'000};   // whole request header must arrive within this once started
  Millis keepalive_timeout{75'000};  // idle keep-alive connections are closed after this
  Millis shutdown_grace{15'000};   // in-flight requests get this long after SIGTERM
  // Peers whose X-Forwarded-For / Forwarded headers name the client (see http/ClientAddress).
  http::TrustedProxies trusted_proxies;
  ServerTlsConfig tls;
};

// The admin plane's own listener. Set: the admin API and the console are served only there
// (plain HTTP, meant for loopback or a private network) and the public listener answers 404 for
// them. Empty: everything on server.listen.
struct AdminConfig {
  std::string listen;
};

// auth.oidc: console sign-in through an OpenID Provider (authorization code flow with PKCE).
// Empty issuer: off. role_map keeps the file's order; the highest role any group maps to wins,
// "*" is the default for a caller none matches (absent: such a caller is refused).
struct OidcConfig {
  std::string issuer;  // https://idp.example.com/realms/acme (http only on loopback, for tests)
  std::string client_id;
  std::string client_secret;
  std::string redirect_url;  // https://gateway.example.com/auth/callback
  std::string roles_claim = "groups";
  std::vector<std::pair<std::string, std::string>> role_map;  // group -> admin|operator|viewer|member
  std::vector<std::string> scopes{"openid", "email", "profile"};
  Millis session_idle{std::chrono::hours(1)};   // a session unused this long ends
  Millis session_max{std::chrono::hours(12)};   // and any session ends this long after sign-in
  Millis timeout{std::chrono::seconds(5)};      // each call to the IdP (discovery, JWKS, token)
  std::string post_logout_redirect_url;         // sent to end_session_endpoint on sign-out
  bool enabled() const { return !issuer.empty(); }
};

struct AuthConfig {
  std::string master_key;
  OidcConfig oidc;
};

// store.responses: the Responses API answers the gateway keeps (store absent or true on a
// POST /v1/responses), so that GET/DELETE /v1/responses/{id}, input_items and
// previous_response_id work on every channel, translated ones included.
struct StoredResponsesConfig {
  bool enabled = true;
  Millis ttl{30LL * 24 * 3'600'000};     // a response is kept this long after it was made
  std::uint64_t max_bytes = 4ull << 20;  // a response bigger than this (input + output) is not kept
};

struct StoreConfig {
  std::string url = "sqlite://./sluice.db";
  bool request_logs = true;  // one row per request in the store (written off the response path)
  int log_retention_days = 30;  // request-log rows older than this are deleted; 0 keeps them forever
  bool log_bodies = false;      // also store request and response bodies (after redaction)
  std::uint64_t log_body_max_bytes = 64u * 1024;  // each body is cut to this
  // Encrypts upstream keys added through the admin API (AES-256-GCM). Defaults to the
  // SLUICE_SECRET_KEY environment variable; empty: such keys cannot be stored.
  std::string secret_key;
  StoredResponsesConfig responses;
};

struct RedisConfig {
  std::string url;
};

struct Timeouts {
  Millis connect{5'000};
  Millis first_byte{60'000};
  Millis idle{60'000};
  Millis total{600'000};
};

// What an upstream error answer leads to (routing.rules): another key of the same channel, the
// next channel, a cool-down or a disable of the key (then the next key or channel), the
// fallback models (routing.fallbacks), or the answer passed to the client now.
enum class ErrorAction { Retry, Failover, Cooldown, Disable, Fallback, Return };
// How the channels of one priority are ordered: a weighted random shuffle, or (latency) the
// better of two weighted random picks by their recent time to first byte and errors first.
enum class Balance { Weighted, Latency };
const char* balanceName(Balance b);
std::optional<Balance> parseBalance(std::string_view s);
// What a stream that stalls (routing.stall_timeout), is cut or reports an error after its first
// byte leads to: the format's error event, or the answer resumed on the next candidate.
enum class OnStall { Error, Continue };
const char* onStallName(OnStall s);
std::optional<OnStall> parseOnStall(std::string_view s);
const char* errorActionName(ErrorAction a);
std::optional<ErrorAction> parseErrorAction(std::string_view s);

// One routing.rules entry: matches an upstream answer of status 400 or more whose status is in
// `status` (empty: any) and whose body holds a match of `body` (an RE2 pattern; empty: any).
struct ErrorRule {
  std::vector<int> status;
  std::string body;
  ErrorAction action = ErrorAction::Failover;
  // cooldown: how long the key rests; 0: the provider's Retry-After (or rate-limit reset)
  // header, else routing.cooldown_default.
  Millis cooldown{0};
};

struct RoutingConfig {
  int max_retries = 2;  // extra attempts after the first, across keys and channels (per model)
  Timeouts timeouts;
  Millis cooldown_default{30'000};        // 429 without Retry-After
  int breaker_failures = 5;               // consecutive failures that open a channel's breaker
  Millis breaker_cooldown{30'000};        // open -> half-open after this
  std::map<std::string, std::string> aliases;  // model alias -> model name, resolved before routing
  // How often cooled-down and automatically disabled upstream keys are probed to bring them
  // back early; 0 turns the checks off.
  Millis recovery_interval{60'000};
  // Model discovery: how often a channel whose `models` hold globs has its provider's model list
  // read (the first time at start, or when the channel appears); 0 turns it off.
  Millis discovery_interval{600'000};
  // First match wins; the built-in rules (routing/Router.hpp) come after these.
  std::vector<ErrorRule> rules;
  // model -> the models tried in order once every channel of it has failed, or on a `fallback`
  // rule. Looked up by the name the client sent, then by the name an alias resolved it to.
  std::map<std::string, std::vector<std::string>> fallbacks;
  // After the first byte: no byte from the upstream for this long is a stall (0: off; the idle
  // timeout still applies).
  Millis stall_timeout{0};
  OnStall on_stall = OnStall::Error;
  Balance balance = Balance::Weighted;
  // No first byte (a stream's first meaningful event) this long after an attempt began: the next
  // candidate is started too, and the first to answer is given. 0: off. hedge_auto: the
  // channel's recent p95 time to first byte instead (no hedge until it has enough samples).
  Millis hedge_after{0};
  bool hedge_auto = false;
};

// USD per million tokens. A rate < 0 is unset: cache reads (cached_input) and cache writes
// (cache_write) then cost the input rate, reasoning tokens the output rate.
struct Price {
  double input = 0;
  double output = 0;
  double cached_input = -1;
  double cache_write = -1;
  double reasoning = -1;
};

inline constexpr const char* kAzureApiVersion = "2024-10-21";

enum class ChannelType { OpenAI, Anthropic, Gemini, Azure, OpenAICompatible, Mock, Bedrock, Vertex };

// What the prompt-injection screen does with a request it flags (and with a deny-list hit):
// nothing, a log line and counter, also a response header (x-sluice-screening: flagged), or a
// 400 in the caller's format.
enum class ScreenAction { Off, Log, Warn, Block };
const char* screenActionName(ScreenAction a);
std::optional<ScreenAction> parseScreenAction(std::string_view s);  // "off" | "log" | "warn" | "block"

// The exact response cache (src/cache). Per channel and per virtual key it may be switched on
// or off and given a shorter TTL; a request opts out with Cache-Control: no-cache / no-store.
struct CacheConfig {
  bool enabled = false;
  Millis ttl{3'600'000};
  std::uint64_t max_bytes = 256ull << 20;       // in memory: the whole cache (Redis: its own maxmemory)
  std::uint64_t max_entry_bytes = 1ull << 20;   // answers bigger than this are not stored
  // Entries are namespaced per virtual key unless this is set (then every caller shares them).
  bool shared = false;
};

struct RedactionRuleConfig {
  std::string name;
  std::string pattern;
  std::string action = "encrypt";   // mask | encrypt | block
  std::vector<std::string> fields;  // system | user | assistant | tool | tool_arguments | all
  std::string validator;            // luhn | iban | ssn | ipv4 | ipv6 | phone | jwt | openai_key
  int line = 0;
};

// Redaction before a request leaves (src/redact). `encrypt` hits become tokens sealed with
// `key` (HKDF per virtual key) that are restored in the answer.
struct RedactionConfig {
  bool enabled = false;
  std::string key;       // default: the SLUICE_REDACT_KEY environment variable
  bool builtin = true;   // the built-in rule pack (e-mail, cards, IBAN, keys, ...)
  // Built-in rule name -> "mask" | "encrypt" | "block" | "off".
  std::map<std::string, std::string> actions;
  std::vector<RedactionRuleConfig> rules;  // after the built-in ones
};

struct ScreeningConfig {
  ScreenAction action = ScreenAction::Off;
  double threshold = 0;            // 0: the model's tuned threshold
  std::vector<std::string> deny;   // RE2 patterns; a hit counts as flagged whatever the score
  std::string model;               // another model file (default: the built-in one)
  // What is screened: the last user turn and/or every tool result / function output of the
  // request (each scored on its own). `scope: [user, tool]`, the default.
  bool scope_user = true;
  bool scope_tool = true;
};

// An external review webhook: the outgoing text (after redaction) is POSTed to `url`; the reply
// {"action": "allow" | "warn" | "block", "reason": ...} decides. `on_failure` must be stated.
struct GuardrailConfig {
  std::string url;
  Millis timeout{2'000};
  bool fail_open = true;          // on_failure: fail_open | fail_closed
  bool review_response = false;   // also review non-streamed answers before they are sent
  std::map<std::string, std::string> headers;
};

// OpenTelemetry traces (telemetry/Tracer.hpp): spans exported over OTLP/HTTP (JSON) to
// `otlp_endpoint` (the collector's base URL; /v1/traces is appended unless the path already ends
// with it). Empty: no tracing at all.
struct TelemetryConfig {
  std::string otlp_endpoint;
  std::string service_name = "sluice";
  double sample_ratio = 1.0;                   // of the traces Sluice starts; a client's traceparent decides its own
  std::map<std::string, std::string> headers;  // sent with each export (e.g. the collector's API key)
  bool capture_content = false;                // the prompt and the answer as span attributes (after redaction)
};

// One MCP server behind /mcp (mcp/McpHub.hpp): reached over Streamable HTTP (`url`, with
// `headers` sent on every request: secrets, never logged) or run as a child process speaking
// newline-delimited JSON-RPC on stdio (`command`, argv, no shell). Exactly one of the two.
struct McpServerConfig {
  std::string name;  // [A-Za-z0-9_-]{1,64}, no "__", no trailing '_': it prefixes the server's names as NAME__TOOL
  std::string url;
  std::map<std::string, std::string> headers;
  std::vector<std::string> command;
  Millis timeout{30'000};  // per request to the server (initialize, lists, each tool call)
  int line = 0;
  std::int64_t store_id = 0;  // != 0: added through the admin API (the store's row), not the file's
};

struct McpConfig {
  std::vector<McpServerConfig> servers;
};

struct ChannelConfig {
  std::string name;
  ChannelType type = ChannelType::OpenAI;
  std::string base_url;              // API root as the provider SDK takes it; http(s), no trailing '/'
  std::vector<std::string> keys;     // upstream API keys (secrets: never logged); empty entries
                                     // (unset env vars) are dropped, so this may be empty
  std::vector<std::string> models;   // exact names or globs (*, ?)
  int priority = 1;                  // lower is tried first
  // Share among equal priorities. 0 is allowed: such a channel is a standby, only picked when
  // no channel of the same priority with weight >= 1 is available (all cooling down or open).
  int weight = 1;
  std::map<std::string, std::string> headers;  // extra headers sent upstream
  std::map<std::string, std::string> model_map;  // client model name -> the name sent upstream
  std::string api_version;  // azure: the api-version query parameter (default kAzureApiVersion)
  // bedrock: the AWS region requests are signed for (SigV4's scope); base_url defaults to
  // https://bedrock-runtime.{region}.amazonaws.com. Keys are ACCESS_KEY_ID:SECRET[:SESSION_TOKEN].
  std::string region;
  // Subscription accounts: "claude" (an anthropic channel) or "chatgpt" (an openai channel): its
  // keys are the OAuth credential files Claude Code and Codex sign in with (pasted JSON or a file
  // path, read when the config loads), refreshed at token_url (the provider's by default).
  std::string subscription;
  // vertex: the Google Cloud project and location of the model URLs (base_url defaults to
  // https://{location}-aiplatform.googleapis.com). Keys are service-account JSON (the config file
  // names files, read when the config is loaded; the admin API takes the JSON itself), held as
  // compact JSON: each signs its own token requests at its token_uri.
  std::string project;
  std::string location;
  // token_url: a subscription's OAuth token endpoint (above), or for
  // azure with Entra ID: a client-credentials token from token_url (default
  // https://login.microsoftonline.com/{tenant_id}/oauth2/v2.0/token), sent as a Bearer. The
  // channel then has one key more (secret "", id "entra:CLIENT_ID#N"), besides any api-key keys.
  std::string tenant_id;
  std::string client_id;
  std::string client_secret;  // a secret: masked in every answer, never logged
  std::string token_url;
  bool entra() const { return !client_id.empty(); }
  // The Entra token endpoint this channel posts to.
  std::string entraTokenUrl() const;
  // Provider quotas (0 = none): requests and tokens per minute and requests in flight for the
  // whole channel, and requests and tokens per minute for each of its keys. A channel or key at
  // its limit is skipped; when every candidate is, the client gets 429 with Retry-After.
  std::int64_t rpm = 0;
  std::int64_t tpm = 0;
  std::int64_t max_concurrent = 0;
  std::int64_t key_rpm = 0;
  std::int64_t key_tpm = 0;
  // Overrides of the gateway's cache and screening settings for this channel (unset: inherit).
  std::optional<bool> cache;
  std::optional<Millis> cache_ttl;
  std::optional<ScreenAction> screening;
  // A channel added through the admin API (0: declared in the config file): its store id, and
  // the store id of each of its keys (parallel to `keys`).
  std::int64_t store_id = 0;
  std::vector<std::int64_t> key_store_ids;
  int line = 0;                      // where it was declared (1-based), for messages
};

struct Config {
  ServerConfig server;
  AuthConfig auth;
  StoreConfig store;
  RedisConfig redis;
  RoutingConfig routing;
  std::vector<ChannelConfig> channels;
  // Prices by model name or glob, over the shipped table (pipeline/Pricing).
  std::map<std::string, Price> pricing;
  CacheConfig cache;
  RedactionConfig redaction;
  ScreeningConfig screening;
  GuardrailConfig guardrail;
  AdminConfig admin;
  TelemetryConfig telemetry;
  McpConfig mcp;
  std::string source_path;  // file it was loaded from ("" when built in code)
};

// Thrown by the loader; what() reads "FILE:LINE:COL: message" (1-based). When the file cannot
// be read at all, what() is "cannot read FILE: REASON" and line() == column() == 0.
class ConfigError : public std::runtime_error {
 public:
  ConfigError(const std::string& msg, int line, int column)
      : std::runtime_error(msg), line_(line), column_(column) {}
  int line() const { return line_; }
  int column() const { return column_; }

 private:
  int line_;
  int column_;
};

// Parses YAML text (after ${VAR} / ${VAR:-default} interpolation of scalars), validates it,
// and returns the snapshot. Unknown keys and wrong types are errors with line numbers.
// `name` is used as the FILE part of messages.
std::shared_ptr<const Config> parseConfig(const std::string& yaml_text, const std::string& name);
// Reads and parses a file; sets source_path to `path`.
std::shared_ptr<const Config> loadConfigFile(const std::string& path);

const char* channelTypeName(ChannelType t);  // "openai", "openai-compatible", ...
std::optional<ChannelType> parseChannelType(std::string_view name);

// "sk-…yz" (first 3 + "…" + last 2), "***" when shorter than 8, "" when empty.
std::string maskSecret(std::string_view secret);
// A URL with the password of user:pass@ and any password=... query value masked.
std::string maskedUrl(const std::string& url);
// An AWS region name's shape (us-east-1); and the region of a bedrock-runtime.REGION.amazonaws.com
// base URL ("" for any other host).
bool validAwsRegion(std::string_view region);
// A Google Cloud location (us-central1, europe-west4, global) or project id: lowercase letters,
// digits and '-' (a project id may hold ':' and '.' for domain-scoped projects), nothing a URL
// host or path would read as structure.
bool validGcpLocation(std::string_view location);
bool validGcpProject(std::string_view project);
// An Entra tenant: a GUID or a domain name (contoso.onmicrosoft.com): letters, digits, '-' and '.',
// never "." or ".." alone.
bool validEntraTenant(std::string_view tenant);
// Why a parsed URL that a credential is sent to (an IdP, a token endpoint) is not acceptable, or
// empty: it needs a host, https (http only on a loopback host: a test's service) and no fragment.
std::string credentialUrlProblem(const boost::urls::url_view& url);
// A vertex key as the config file or the admin API gives it: the service-account JSON itself
// (starting with '{') or, from the config file only, the path of a file holding it. Returns the
// compact JSON; throws std::runtime_error saying why (never quoting the key) when it is unusable.
std::string vertexKeyJson(const std::string& key, bool allow_path);
std::string regionFromBedrockHost(std::string_view base_url);

// The effective config as YAML, every secret masked: master key, channel keys, channel header
// values and passwords inside store/redis URLs. For the admin API and `sluice check`.
std::string describeConfig(const Config& config);

}  // namespace sluice::config
