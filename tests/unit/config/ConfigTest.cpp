#include "config/Config.hpp"

#include <gtest/gtest.h>
#include <boost/json.hpp>
#include <openssl/pem.h>
#include <openssl/evp.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "config/Scalars.hpp"

namespace sluice::config {
namespace {
namespace config_test {

using std::chrono::milliseconds;

// Sets an environment variable for the life of the object.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value != nullptr) {
      ::setenv(name, value, 1);
    } else {
      ::unsetenv(name);
    }
  }
  ~ScopedEnv() {
    if (old_) {
      ::setenv(name_, old_->c_str(), 1);
    } else {
      ::unsetenv(name_);
    }
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  std::optional<std::string> old_;
};

std::shared_ptr<const Config> parse(const std::string& yaml) { return parseConfig(yaml, "t.yaml"); }

struct Failure {
  std::string what;
  int line = -1;
  int column = -1;
};

Failure failure(const std::string& yaml) {
  try {
    parse(yaml);
  } catch (const ConfigError& e) {
    return {e.what(), e.line(), e.column()};
  }
  ADD_FAILURE() << "expected a ConfigError for:\n" << yaml;
  return {};
}

// Line 1 is "channels:", the channel's mapping starts on line 2.
std::string channel(const std::string& extra_lines, const std::string& name = "a") {
  return "channels:\n"
         "  - name: " + name + "\n"
         "    type: openai\n"
         "    base_url: https://api.openai.com/v1\n"
         "    models: [gpt-4o-mini]\n" + extra_lines;
}

TEST(ConfigDefaults, EmptyDocumentGivesDefaults) {
  for (const char* text : {"", "\n", "# only a comment\n", "---\n", "server:\n"}) {
    const auto c = parse(text);
    EXPECT_EQ(c->server.listen, "127.0.0.1:8080") << text;
    EXPECT_EQ(c->server.workers, 0);
    EXPECT_EQ(c->server.pack_connections, 0);
    EXPECT_EQ(c->server.max_body_bytes, 32u << 20);
    EXPECT_EQ(c->server.max_header_bytes, 64u * 1024);
    EXPECT_EQ(c->server.header_timeout, milliseconds(10'000));
    EXPECT_EQ(c->server.keepalive_timeout, milliseconds(75'000));
    EXPECT_EQ(c->server.shutdown_grace, milliseconds(15'000));
    EXPECT_EQ(c->auth.master_key, "");
    EXPECT_EQ(c->store.url, "sqlite://./sluice.db");
    EXPECT_EQ(c->redis.url, "");
    EXPECT_EQ(c->routing.max_retries, 2);
    EXPECT_EQ(c->routing.timeouts.connect, milliseconds(5'000));
    EXPECT_EQ(c->routing.timeouts.first_byte, milliseconds(60'000));
    EXPECT_EQ(c->routing.timeouts.idle, milliseconds(60'000));
    EXPECT_EQ(c->routing.timeouts.total, milliseconds(600'000));
    EXPECT_EQ(c->routing.cooldown_default, milliseconds(30'000));
    EXPECT_EQ(c->routing.breaker_failures, 5);
    EXPECT_EQ(c->routing.breaker_cooldown, milliseconds(30'000));
    EXPECT_TRUE(c->channels.empty());
    EXPECT_EQ(c->source_path, "");
  }
}

constexpr const char* kDesignExample = R"(server:
  listen: "127.0.0.1:8080"
  workers: 0                 # 0 = one per core
auth:
  master_key: "${SLUICE_MASTER_KEY}"
store:
  url: "sqlite://./sluice.db"   # or postgres://user:pass@host:5432/db
redis:
  url: ""                       # redis://127.0.0.1:6379 to share state between instances
routing:
  max_retries: 2
  timeouts: {connect: 5s, first_byte: 60s, idle: 60s, total: 600s}
channels:
  - name: openai
    type: openai                # openai | anthropic | gemini | azure | openai-compatible | mock
    base_url: "https://api.openai.com/v1"   # the API root as the provider's official SDK takes it:
                                          # https://api.anthropic.com, https://generativelanguage.googleapis.com
    keys: ["${OPENAI_API_KEY}"]
    models: ["gpt-4o-mini", "gpt-4.1*"]
    priority: 1                 # lower is tried first; equal priorities share by weight
    weight: 1
)";

TEST(ConfigParse, DesignExample) {
  ScopedEnv master("SLUICE_MASTER_KEY", "sk-master-0123456789");
  ScopedEnv openai("OPENAI_API_KEY", "sk-openai-abcdef");
  const auto c = parse(kDesignExample);
  EXPECT_EQ(c->server.listen, "127.0.0.1:8080");
  EXPECT_EQ(c->auth.master_key, "sk-master-0123456789");
  EXPECT_EQ(c->store.url, "sqlite://./sluice.db");
  EXPECT_EQ(c->redis.url, "");
  EXPECT_EQ(c->routing.max_retries, 2);
  EXPECT_EQ(c->routing.timeouts.connect, milliseconds(5'000));
  EXPECT_EQ(c->routing.timeouts.total, milliseconds(600'000));
  ASSERT_EQ(c->channels.size(), 1u);
  const auto& ch = c->channels[0];
  EXPECT_EQ(ch.name, "openai");
  EXPECT_EQ(ch.type, ChannelType::OpenAI);
  EXPECT_EQ(ch.base_url, "https://api.openai.com/v1");
  EXPECT_EQ(ch.keys, std::vector<std::string>{"sk-openai-abcdef"});
  EXPECT_EQ(ch.models, (std::vector<std::string>{"gpt-4o-mini", "gpt-4.1*"}));
  EXPECT_EQ(ch.priority, 1);
  EXPECT_EQ(ch.weight, 1);
  EXPECT_EQ(ch.line, 14);
}

TEST(ConfigParse, DesignExampleWithoutEnvDropsTheEmptyKey) {
  ScopedEnv master("SLUICE_MASTER_KEY", nullptr);
  ScopedEnv openai("OPENAI_API_KEY", nullptr);
  const auto c = parse(kDesignExample);
  EXPECT_EQ(c->auth.master_key, "");
  EXPECT_TRUE(c->channels.at(0).keys.empty());
}

TEST(ConfigParse, EveryFieldSet) {
  const auto c = parse(R"(server:
  listen: "[::1]:0"
  workers: 4
  pack_connections: 128
  max_body_bytes: 1MB
  max_header_bytes: 16KiB
  header_timeout: 2s
  keepalive_timeout: 1m
  shutdown_grace: 0
auth: {master_key: sk-admin-123456}
store: {url: "postgres://u:p@db:5432/sluice"}
redis: {url: "redis://127.0.0.1:6379"}
routing:
  max_retries: 0
  timeouts: {connect: 250ms, first_byte: 1m30s, idle: 1.5s, total: 1h}
  cooldown_default: 10s
  breaker_failures: 3
  breaker_cooldown: 45
channels:
  - name: claude
    type: anthropic
    base_url: https://api.anthropic.com/
    keys: [k1, k2]
    models: ["claude-*"]
    priority: -1
    weight: 0
    headers: {anthropic-beta: tools-2024, X-Extra: "1"}
  - name: local.mock_1
    type: mock
    base_url: http://127.0.0.1:9999
    models: ["*"]
)");
  EXPECT_EQ(c->server.listen, "[::1]:0");
  EXPECT_EQ(c->server.workers, 4);
  EXPECT_EQ(c->server.pack_connections, 128);
  EXPECT_EQ(c->server.max_body_bytes, 1'000'000u);
  EXPECT_EQ(c->server.max_header_bytes, 16u * 1024);
  EXPECT_EQ(c->server.header_timeout, milliseconds(2'000));
  EXPECT_EQ(c->server.keepalive_timeout, milliseconds(60'000));
  EXPECT_EQ(c->server.shutdown_grace, milliseconds(0));
  EXPECT_EQ(c->auth.master_key, "sk-admin-123456");
  EXPECT_EQ(c->store.url, "postgres://u:p@db:5432/sluice");
  EXPECT_EQ(c->redis.url, "redis://127.0.0.1:6379");
  EXPECT_EQ(c->routing.max_retries, 0);
  EXPECT_EQ(c->routing.timeouts.connect, milliseconds(250));
  EXPECT_EQ(c->routing.timeouts.first_byte, milliseconds(90'000));
  EXPECT_EQ(c->routing.timeouts.idle, milliseconds(1'500));
  EXPECT_EQ(c->routing.timeouts.total, milliseconds(3'600'000));
  EXPECT_EQ(c->routing.cooldown_default, milliseconds(10'000));
  EXPECT_EQ(c->routing.breaker_failures, 3);
  EXPECT_EQ(c->routing.breaker_cooldown, milliseconds(45'000));
  ASSERT_EQ(c->channels.size(), 2u);
  EXPECT_EQ(c->channels[0].type, ChannelType::Anthropic);
  EXPECT_EQ(c->channels[0].base_url, "https://api.anthropic.com");  // trailing '/' dropped
  EXPECT_EQ(c->channels[0].keys, (std::vector<std::string>{"k1", "k2"}));
  EXPECT_EQ(c->channels[0].priority, -1);
  EXPECT_EQ(c->channels[0].weight, 0);
  EXPECT_EQ(c->channels[0].headers.at("anthropic-beta"), "tools-2024");
  EXPECT_EQ(c->channels[0].headers.at("X-Extra"), "1");
  EXPECT_EQ(c->channels[0].line, 20);
  EXPECT_EQ(c->channels[1].name, "local.mock_1");
  EXPECT_EQ(c->channels[1].type, ChannelType::Mock);
  EXPECT_TRUE(c->channels[1].keys.empty());
  EXPECT_EQ(c->channels[1].line, 28);
}

TEST(ConfigParse, ChannelTypesRoundTrip) {
  for (auto t : {ChannelType::OpenAI, ChannelType::Anthropic, ChannelType::Gemini, ChannelType::Azure,
                 ChannelType::OpenAICompatible, ChannelType::Mock, ChannelType::Bedrock}) {
    EXPECT_EQ(parseChannelType(channelTypeName(t)), t);
  }
  EXPECT_STREQ(channelTypeName(ChannelType::OpenAICompatible), "openai-compatible");
  EXPECT_FALSE(parseChannelType("OpenAI").has_value());
}

// A subscription channel: the provider's endpoints by default, keys as the CLI's credential file
// (a path, read now, or the JSON) kept in one stored form, the kind matching the type, a
// store.secret_key required (the live credentials are sealed), a bad key named by position only.
TEST(ConfigParse, SubscriptionChannels) {
  ScopedEnv no_key("SLUICE_SECRET_KEY", nullptr);
  const std::string dir = ::testing::TempDir();
  const std::string file = dir + "/claude-credentials.json";
  {
    std::ofstream out(file);
    out << "{\n  \"claudeAiOauth\": {\"accessToken\": \"sk-ant-oat01-A\", \"refreshToken\": \"sk-ant-ort01-B\",\n"
           "  \"expiresAt\": 1750000000000, \"scopes\": [\"user:inference\"]}\n}\n";
  }
  auto c = parse("store: {secret_key: k}\nchannels:\n"
                 "  - {name: c, type: anthropic, subscription: claude, models: [claude-*], keys: [\"" + file + "\"]}\n"
                 "  - {name: g, type: openai, subscription: chatgpt, models: [gpt-5*], token_url: \"http://127.0.0.1:9/oauth/token\","
                 " keys: ['{\"tokens\":{\"access_token\":\"at\",\"refresh_token\":\"rt\",\"account_id\":\"acct\"}}']}\n");
  const auto& claude = c->channels[0];
  EXPECT_EQ(claude.base_url, "https://api.anthropic.com");
  EXPECT_EQ(claude.token_url, "https://console.anthropic.com/v1/oauth/token");
  ASSERT_EQ(claude.keys.size(), 1u);
  EXPECT_EQ(claude.keys[0],
            R"({"access_token":"sk-ant-oat01-A","refresh_token":"sk-ant-ort01-B","expires_at_ms":1750000000000,"lifetime_ms":0})");
  const auto& gpt = c->channels[1];
  EXPECT_EQ(gpt.base_url, "https://chatgpt.com/backend-api/codex");
  EXPECT_EQ(gpt.token_url, "http://127.0.0.1:9/oauth/token");
  EXPECT_NE(gpt.keys[0].find("\"account_id\":\"acct\""), std::string::npos);

  auto f = failure("store: {secret_key: k}\nchannels:\n  - {name: c, type: openai, subscription: claude, models: [m]}\n");
  EXPECT_NE(f.what.find("a claude subscription is a channel of type anthropic"), std::string::npos) << f.what;
  f = failure("channels:\n  - {name: c, type: anthropic, subscription: claude, models: [m], keys: [\"" + file + "\"]}\n");
  EXPECT_NE(f.what.find("set store.secret_key"), std::string::npos) << f.what;
  f = failure("store: {secret_key: k}\nchannels:\n  - {name: c, type: anthropic, subscription: claude, models: [m], "
              "keys: ['{\"claudeAiOauth\":{\"accessToken\":\"SECRET one\",\"refreshToken\":\"r\"}}']}\n");
  EXPECT_NE(f.what.find("keys[0]: not a claude credential"), std::string::npos) << f.what;
  EXPECT_EQ(f.what.find("SECRET"), std::string::npos) << f.what;
  f = failure("store: {secret_key: k}\nchannels:\n  - {name: c, type: anthropic, subscription: claude, models: [m], "
              "keys: [\"" + dir + "/no-such-file.json\"]}\n");
  EXPECT_NE(f.what.find("cannot read the credential file"), std::string::npos) << f.what;
  f = failure("channels:\n  - {name: c, type: anthropic, subscription: pro, models: [m]}\n");
  EXPECT_NE(f.what.find("valid: claude, chatgpt"), std::string::npos) << f.what;
  f = failure(channel("    token_url: https://x/token\n"));
  EXPECT_NE(f.what.find("only a subscription channel or an azure channel with Entra ID takes a token_url"), std::string::npos) << f.what;
  // The refresh token goes to it: https, or http on a loopback host only.
  f = failure("channels:\n  - {name: c, type: anthropic, subscription: claude, models: [m], "
              "token_url: \"http://oauth.example.com/token\"}\n");
  EXPECT_NE(f.what.find("token_url: the scheme must be https (http only for a loopback host)"), std::string::npos) << f.what;
}

// A bedrock channel: the region (required unless the base URL names it), the region's endpoint
// as the default base URL, keys of AWS's shape; a malformed key is named by position, never shown.
// A service-account key file for the vertex tests: a fresh RSA key.
std::string serviceAccountJson(const std::string& email = "sluice@p.iam.gserviceaccount.com") {
  EVP_PKEY* pkey = EVP_RSA_gen(2048);
  BIO* bio = BIO_new(BIO_s_mem());
  PEM_write_bio_PrivateKey(bio, pkey, nullptr, nullptr, 0, nullptr, nullptr);
  char* data = nullptr;
  const long n = BIO_get_mem_data(bio, &data);
  std::string pem(data, static_cast<std::size_t>(n));
  BIO_free(bio);
  EVP_PKEY_free(pkey);
  return boost::json::serialize(boost::json::object{{"type", "service_account"},
                                                    {"private_key", pem},
                                                    {"client_email", email},
                                                    {"token_uri", "https://oauth2.googleapis.com/token"}});
}

TEST(ConfigParse, VertexChannel) {
  const std::string sa = serviceAccountJson();
  const std::string file = ::testing::TempDir() + "/vertex-sa.json";
  {
    std::ofstream out(file);
    out << "  " << sa << "\n";  // as a file holds it: padded, a newline at the end
  }
  auto c = parse("channels:\n"
                 "  - name: vertex\n"
                 "    type: vertex\n"
                 "    project: my-project\n"
                 "    location: us-central1\n"
                 "    keys: [\"" + file + "\"]\n"
                 "    models: [\"gemini-*\", \"claude-*\"]\n");
  const auto& ch = c->channels.at(0);
  EXPECT_EQ(ch.type, ChannelType::Vertex);
  EXPECT_EQ(ch.base_url, "https://us-central1-aiplatform.googleapis.com");
  ASSERT_EQ(ch.keys.size(), 1u);
  EXPECT_EQ(ch.keys[0].front(), '{');  // the file's JSON, compact
  EXPECT_EQ(ch.keys[0].find('\n'), std::string::npos);
  const std::string described = describeConfig(*c);
  EXPECT_NE(described.find("sa:sluice@p.iam.gserviceaccount.com"), std::string::npos) << described;
  EXPECT_EQ(described.find("PRIVATE KEY"), std::string::npos);
  EXPECT_NE(described.find("project: my-project"), std::string::npos);
  auto global = parse("channels:\n  - {name: v, type: vertex, project: p-1, location: global, models: [m]}\n");
  EXPECT_EQ(global->channels[0].base_url, "https://aiplatform.googleapis.com");

  EXPECT_NE(failure("channels:\n  - {name: v, type: vertex, location: us-central1, models: [m]}\n").what.find("needs \"project\""),
            std::string::npos);
  EXPECT_NE(failure("channels:\n  - {name: v, type: vertex, project: p, models: [m]}\n").what.find("needs \"location\""),
            std::string::npos);
  for (const char* bad : {"us-central1/../x", "US", "a?b", "a#b", "a b", "-x"})
    EXPECT_NE(failure(std::string("channels:\n  - {name: v, type: vertex, project: p, location: \"") + bad +
                      "\", models: [m]}\n")
                  .what.find("not a Google Cloud location"),
              std::string::npos)
        << bad;
  EXPECT_NE(failure("channels:\n  - {name: v, type: vertex, project: \"p/../q\", location: l, models: [m]}\n")
                .what.find("not a Google Cloud project"),
            std::string::npos);
  // A key that is not a service account: refused by position, never quoted.
  const Failure f = failure("channels:\n  - {name: v, type: vertex, project: p, location: l, keys: [\"{\\\"type\\\": "
                            "\\\"service_account\\\", \\\"private_key\\\": \\\"s3cr3tmaterial\\\"}\"], models: [m]}\n");
  EXPECT_NE(f.what.find("keys[0]: not a usable service-account key"), std::string::npos) << f.what;
  EXPECT_EQ(f.what.find("s3cr3tmaterial"), std::string::npos) << f.what;
  EXPECT_NE(failure("channels:\n  - {name: v, type: vertex, project: p, location: l, keys: [/nonexistent/sa.json], "
                    "models: [m]}\n")
                .what.find("cannot read the service-account file"),
            std::string::npos);
  EXPECT_NE(failure(channel("    project: p\n")).what.find("only a vertex channel"), std::string::npos);
  // The admin API's form: the JSON itself, never a path.
  EXPECT_THROW(vertexKeyJson(file, false), std::runtime_error);
  EXPECT_EQ(vertexKeyJson(sa, false), sa);
}

TEST(ConfigParse, AzureEntraChannel) {
  auto c = parse("channels:\n"
                 "  - name: az\n"
                 "    type: azure\n"
                 "    base_url: https://my-resource.openai.azure.com\n"
                 "    tenant_id: 72f988bf-86f1-41af-91ab-2d7cd011db47\n"
                 "    client_id: 0d5a1c2e-app\n"
                 "    client_secret: \"very~secret.value\"\n"
                 "    models: [gpt-4o]\n");
  const auto& ch = c->channels.at(0);
  EXPECT_TRUE(ch.entra());
  EXPECT_EQ(ch.entraTokenUrl(), "https://login.microsoftonline.com/72f988bf-86f1-41af-91ab-2d7cd011db47/oauth2/v2.0/token");
  const std::string described = describeConfig(*c);
  EXPECT_EQ(described.find("very~secret.value"), std::string::npos) << described;
  EXPECT_NE(described.find("client_id: 0d5a1c2e-app"), std::string::npos);
  auto local = parse("channels:\n  - {name: az, type: azure, base_url: \"http://127.0.0.1:1\", client_id: c, "
                     "client_secret: s, token_url: \"http://127.0.0.1:2/t/oauth2/v2.0/token\", models: [m]}\n");
  EXPECT_EQ(local->channels[0].entraTokenUrl(), "http://127.0.0.1:2/t/oauth2/v2.0/token");
  // The tenant goes into a URL path: nothing that could walk it.
  for (const char* bad : {"../common", "a/b", "a?b", "a#b", "a b", "..", "a%2Fb", "a\\b"})
    EXPECT_NE(failure(std::string("channels:\n  - {name: az, type: azure, base_url: \"http://h\", tenant_id: \"") + bad +
                      "\", client_id: c, client_secret: s, models: [m]}\n")
                  .what.find("not an Entra tenant"),
              std::string::npos)
        << bad;
  EXPECT_NE(failure("channels:\n  - {name: az, type: azure, base_url: \"http://h\", tenant_id: t, client_id: c, "
                    "models: [m]}\n")
                .what.find("Entra ID needs tenant_id, client_id and client_secret"),
            std::string::npos);
  EXPECT_NE(failure("channels:\n  - {name: o, type: openai, base_url: \"http://h\", tenant_id: t, client_id: c, "
                    "client_secret: s, models: [m]}\n")
                .what.find("only an azure channel"),
            std::string::npos);
}

TEST(ConfigParse, BedrockChannel) {
  auto c = parse("channels:\n"
                 "  - name: bedrock\n"
                 "    type: bedrock\n"
                 "    region: us-east-1\n"
                 "    keys: [\"AKIAEXAMPLE:secret/with+chars\", \"ASIAEXAMPLE:tempsecret:session/token==\"]\n"
                 "    models: [\"anthropic.claude-*\", \"us.anthropic.*\"]\n");
  ASSERT_EQ(c->channels.size(), 1u);
  const auto& ch = c->channels[0];
  EXPECT_EQ(ch.type, ChannelType::Bedrock);
  EXPECT_EQ(ch.region, "us-east-1");
  EXPECT_EQ(ch.base_url, "https://bedrock-runtime.us-east-1.amazonaws.com");
  EXPECT_EQ(ch.keys.size(), 2u);
  const std::string described = describeConfig(*c);
  EXPECT_NE(described.find("region: us-east-1"), std::string::npos);
  EXPECT_EQ(described.find("secret/with+chars"), std::string::npos);
  EXPECT_EQ(described.find("session/token"), std::string::npos);

  // The region from the endpoint's host; a base URL of another host needs it said.
  auto h = parse("channels:\n  - {name: b, type: bedrock, base_url: \"https://bedrock-runtime.eu-west-3.amazonaws.com\", "
                 "models: [m]}\n");
  EXPECT_EQ(h->channels[0].region, "eu-west-3");
  auto local = parse("channels:\n  - {name: b, type: bedrock, base_url: \"http://127.0.0.1:9000\", region: us-west-2, "
                     "models: [m]}\n");
  EXPECT_EQ(local->channels[0].base_url, "http://127.0.0.1:9000");
  EXPECT_EQ(local->channels[0].region, "us-west-2");

  // The pinned template with the AWS variables unset: the key is dropped, as an empty one is.
  {
    ScopedEnv id("SLUICE_T_AWS_ID", nullptr);
    ScopedEnv secret("SLUICE_T_AWS_SECRET", nullptr);
    auto unset = parse("channels:\n  - {name: b, type: bedrock, region: us-east-1, "
                       "keys: [\"${SLUICE_T_AWS_ID}:${SLUICE_T_AWS_SECRET}\"], models: [m]}\n");
    EXPECT_TRUE(unset->channels[0].keys.empty());
  }
  EXPECT_NE(failure("channels:\n  - {name: b, type: bedrock, models: [m]}\n").what.find("needs \"region\""),
            std::string::npos);
  EXPECT_NE(failure("channels:\n  - {name: b, type: bedrock, base_url: \"http://127.0.0.1:1\", models: [m]}\n")
                .what.find("needs \"region\""),
            std::string::npos);
  EXPECT_NE(failure("channels:\n  - {name: b, type: bedrock, region: \"US East\", models: [m]}\n").what.find("not an AWS region"),
            std::string::npos);
  EXPECT_NE(failure(channel("    region: us-east-1\n")).what.find("only a bedrock channel takes a region"),
            std::string::npos);
  for (const char* bad : {"noColonS3cr3tKey", "AKIA:", ":S3cr3tKey", "AKIA:S3cr3tKey:", "AK-IA:S3cr3tKey", "AKIA:S3cr 3tKey"}) {
    const std::string yaml = std::string("channels:\n  - {name: b, type: bedrock, region: us-east-1, keys: [\"") + bad +
                             "\"], models: [m]}\n";
    const Failure f = failure(yaml);
    EXPECT_NE(f.what.find("keys[0]: a bedrock key is ACCESS_KEY_ID:SECRET_ACCESS_KEY"), std::string::npos) << f.what;
    const std::string_view secret = std::string_view(bad).substr(std::string_view(bad).find(':') + 1);
    if (secret.size() > 3) {
      EXPECT_EQ(f.what.find(secret), std::string::npos) << "the secret is echoed: " << f.what;
    }
  }
}

// ---- interpolation ----

TEST(ConfigInterpolation, VariablesDefaultsAndEscapes) {
  ScopedEnv a("SLUICE_T_A", "alpha");
  ScopedEnv empty("SLUICE_T_EMPTY", "");
  ScopedEnv unset("SLUICE_T_UNSET", nullptr);
  EXPECT_EQ(expandEnv("${SLUICE_T_A}"), "alpha");
  EXPECT_EQ(expandEnv("x-${SLUICE_T_A}-y"), "x-alpha-y");
  EXPECT_EQ(expandEnv("${SLUICE_T_UNSET}"), "");
  EXPECT_EQ(expandEnv("${SLUICE_T_UNSET:-dflt}"), "dflt");
  EXPECT_EQ(expandEnv("${SLUICE_T_EMPTY:-dflt}"), "dflt");  // shell semantics: empty counts as unset
  EXPECT_EQ(expandEnv("${SLUICE_T_A:-dflt}"), "alpha");
  EXPECT_EQ(expandEnv("${SLUICE_T_UNSET:-}"), "");
  EXPECT_EQ(expandEnv("${SLUICE_T_UNSET:-${SLUICE_T_A}}"), "alpha");  // nested default
  EXPECT_EQ(expandEnv("${SLUICE_T_UNSET:-http://h:1/p}"), "http://h:1/p");
  EXPECT_EQ(expandEnv("$${SLUICE_T_A}"), "${SLUICE_T_A}");
  EXPECT_EQ(expandEnv("a$$b"), "a$b");
  EXPECT_EQ(expandEnv("cost $5 $"), "cost $5 $");  // a lone '$' stays
}

TEST(ConfigInterpolation, EnvValuesAreNotExpandedAgain) {
  ScopedEnv a("SLUICE_T_A", "${SLUICE_T_B}$$");
  ScopedEnv b("SLUICE_T_B", "nope");
  EXPECT_EQ(expandEnv("${SLUICE_T_A}"), "${SLUICE_T_B}$$");
}

TEST(ConfigInterpolation, MalformedReferences) {
  EXPECT_THROW(expandEnv("${SLUICE_T_A"), std::invalid_argument);
  EXPECT_THROW(expandEnv("${}"), std::invalid_argument);
  EXPECT_THROW(expandEnv("${1ABC}"), std::invalid_argument);
  EXPECT_THROW(expandEnv("${A-B}"), std::invalid_argument);
  EXPECT_THROW(expandEnv("${A:?msg}"), std::invalid_argument);
}

TEST(ConfigInterpolation, AppliesToEveryScalarValue) {
  ScopedEnv workers("SLUICE_T_WORKERS", "3");
  ScopedEnv key("SLUICE_T_KEY", "sk-from-env-1234");
  ScopedEnv url("SLUICE_T_URL", "http://127.0.0.1:7777/v1");
  ScopedEnv unset("SLUICE_T_UNSET", nullptr);
  const auto c = parse(R"(server:
  listen: "127.0.0.1:${SLUICE_T_PORT:-9090}"
  workers: ${SLUICE_T_WORKERS}
routing:
  timeouts: {total: "${SLUICE_T_UNSET:-2m}"}
channels:
  - name: m
    type: mock
    base_url: ${SLUICE_T_URL}
    keys: ["${SLUICE_T_KEY}", "${SLUICE_T_UNSET}", "literal-$$-key"]
    models: ["${SLUICE_T_UNSET:-mock-*}"]
    headers: {X-Key: "${SLUICE_T_KEY}"}
)");
  EXPECT_EQ(c->server.listen, "127.0.0.1:9090");
  EXPECT_EQ(c->server.workers, 3);
  EXPECT_EQ(c->routing.timeouts.total, milliseconds(120'000));
  EXPECT_EQ(c->channels[0].base_url, "http://127.0.0.1:7777/v1");
  EXPECT_EQ(c->channels[0].keys, (std::vector<std::string>{"sk-from-env-1234", "literal-$-key"}));
  EXPECT_EQ(c->channels[0].models, std::vector<std::string>{"mock-*"});
  EXPECT_EQ(c->channels[0].headers.at("X-Key"), "sk-from-env-1234");
}

TEST(ConfigInterpolation, ErrorsKeepTheLineAndShowTheRawText) {
  ScopedEnv retries("SLUICE_T_RETRIES", "lots");
  auto f = failure("routing:\n  max_retries: ${SLUICE_T_RETRIES}\n");
  EXPECT_EQ(f.what,
            "t.yaml:2:16: routing.max_retries: expected an integer, got \"lots\" (from \"${SLUICE_T_RETRIES}\")");
  f = failure("auth:\n  # comment\n  master_key: \"${OOPS\"\n");
  EXPECT_EQ(f.line, 3);
  EXPECT_NE(f.what.find("auth.master_key: unterminated \"${\""), std::string::npos) << f.what;
}

// ---- errors ----

TEST(ConfigErrors, WrongTypeNamesPathValueAndLine) {
  auto f = failure("server:\n  listen: 127.0.0.1:8080\nrouting:\n  max_retries: abc\n");
  EXPECT_EQ(f.what, "t.yaml:4:16: routing.max_retries: expected an integer, got \"abc\"");
  EXPECT_EQ(f.line, 4);
  EXPECT_EQ(f.column, 16);

  f = failure("server:\n  workers: [1, 2]\n");
  EXPECT_EQ(f.what, "t.yaml:2:12: server.workers: expected an integer, got a list");

  f = failure("server:\n  pack_connections: -1\n");
  EXPECT_NE(f.what.find("server.pack_connections"), std::string::npos) << f.what;

  f = failure("server: 8080\n");
  EXPECT_EQ(f.what, "t.yaml:1:9: server: expected a mapping, got \"8080\"");

  f = failure("auth:\n  master_key: {a: b}\n");
  EXPECT_EQ(f.what, "t.yaml:2:15: auth.master_key: expected a string, got a mapping");

  f = failure("- a\n- b\n");
  EXPECT_EQ(f.what, "t.yaml:1:1: the top level must be a mapping, got a list");

  f = failure("channels: {name: x}\n");
  EXPECT_EQ(f.line, 1);
  EXPECT_NE(f.what.find("channels: expected a list of channels, got a mapping"), std::string::npos);

  f = failure(channel("    keys: sk-one\n"));
  EXPECT_EQ(f.what, "t.yaml:6:11: channels[0].keys: expected a list of strings, got \"sk-one\"");

  f = failure(channel("    priority: high\n"));
  EXPECT_EQ(f.line, 6);
  EXPECT_NE(f.what.find("channels[0].priority: expected an integer, got \"high\""), std::string::npos);

  f = failure("routing:\n  max_retries: 1.5\n");
  EXPECT_EQ(f.line, 2);
  f = failure("routing:\n  max_retries: 99999999999999999999\n");
  EXPECT_EQ(f.line, 2);
  EXPECT_NE(f.what.find("must be from 0 to 20"), std::string::npos) << f.what;
}

TEST(ConfigErrors, UnknownKeysListTheValidOnes) {
  auto f = failure("server:\n  listen: 127.0.0.1:1\nlogging: {}\n");
  EXPECT_EQ(f.what,
            "t.yaml:3:1: unknown key \"logging\" at the top level; valid keys: server, auth, store, "
            "redis, routing, channels, pricing, cache, redaction, screening, guardrail, admin, telemetry, mcp");

  f = failure("server:\n  workers: 1\n  listn: 127.0.0.1:1\n");
  EXPECT_EQ(f.what,
            "t.yaml:3:3: unknown key \"listn\" in server (did you mean \"listen\"?); valid keys: listen, "
            "workers, max_body_bytes, max_header_bytes, header_timeout, keepalive_timeout, shutdown_grace, "
            "trusted_proxies, tls, pack_connections");
}

TEST(ConfigTrustedProxies, ParsedOnceIntoCidrsAndShownBack) {
  auto c = parse("server:\n  trusted_proxies: [\"10.0.0.0/8\", \"127.0.0.1\", \"2001:db8::/32\", \"::1\"]\n");
  const auto& t = c->server.trusted_proxies;
  ASSERT_EQ(t.cidrs().size(), 4u);
  EXPECT_EQ(t.cidrs()[0].text(), "10.0.0.0/8");
  EXPECT_EQ(t.cidrs()[1].text(), "127.0.0.1/32");
  EXPECT_EQ(t.cidrs()[2].text(), "2001:db8::/32");
  EXPECT_EQ(t.cidrs()[3].text(), "::1/128");
  EXPECT_TRUE(t.trusts("10.200.0.1"));
  EXPECT_TRUE(t.trusts("::ffff:127.0.0.1"));
  EXPECT_FALSE(t.trusts("127.0.0.2"));
  EXPECT_NE(describeConfig(*c).find("trusted_proxies: [10.0.0.0/8, 127.0.0.1/32, 2001:db8::/32, ::1/128]"),
            std::string::npos)
      << describeConfig(*c);
  EXPECT_TRUE(parse("server:\n  listen: 127.0.0.1:1\n")->server.trusted_proxies.empty());
  EXPECT_EQ(describeConfig(*parse("server:\n  listen: 127.0.0.1:1\n")).find("trusted_proxies"), std::string::npos);
}

TEST(ConfigErrors, TrustedProxiesNameTheBadEntryAndItsLine) {
  auto f = failure("server:\n  trusted_proxies:\n    - 10.0.0.0/8\n    - 10.0.0.300/32\n");
  EXPECT_EQ(f.what, "t.yaml:4:7: server.trusted_proxies[1]: \"10.0.0.300/32\" is not an IP address or CIDR: "
                    "not an IPv4 address");
  f = failure("server:\n  trusted_proxies: [\"10.0.0.0/33\"]\n");
  EXPECT_EQ(f.line, 2);
  EXPECT_NE(f.what.find("the prefix length after '/' must be from 0 to 32"), std::string::npos) << f.what;
  f = failure("server:\n  trusted_proxies: [\"2001:db8::/129\"]\n");
  EXPECT_NE(f.what.find("from 0 to 128"), std::string::npos) << f.what;
  f = failure("server:\n  trusted_proxies: [\"10.1.0.0/8\"]\n");
  EXPECT_NE(f.what.find("did you mean 10.0.0.0/8?"), std::string::npos) << f.what;
  f = failure("server:\n  trusted_proxies: [\"localhost\"]\n");
  EXPECT_NE(f.what.find("\"localhost\" is not an IP address or CIDR"), std::string::npos) << f.what;
  f = failure("server:\n  trusted_proxies: [\"\"]\n");
  EXPECT_NE(f.what.find("server.trusted_proxies[0]: expected an IP address or CIDR"), std::string::npos) << f.what;
  f = failure("server:\n  trusted_proxies: 10.0.0.0/8\n");
  EXPECT_EQ(f.what, "t.yaml:2:20: server.trusted_proxies: expected a list of strings, got \"10.0.0.0/8\"");
  for (const char* bad : {"10.0.0.0/", "10.0.0.0/8/8", "10.0.0.0/-1", "10.0.0.0/ 8", "[::1]", "::1%eth0", "1.2.3.4:80"})
    EXPECT_NE(failure(std::string("server:\n  trusted_proxies: [\"") + bad + "\"]\n").line, -1) << bad;
}

TEST(ConfigErrors, UnknownKeyNestedAtDepth) {
  auto f = failure(R"(routing:
  max_retries: 1
  timeouts:
    connect: 1s
    frist_byte: 2s
)");
  EXPECT_EQ(f.what,
            "t.yaml:5:5: unknown key \"frist_byte\" in routing.timeouts (did you mean \"first_byte\"?); "
            "valid keys: connect, first_byte, idle, total");

  f = failure("routing:\n  timeouts: {connect: 1s, bogus: 2s}\n");
  EXPECT_EQ(f.line, 2);
  EXPECT_EQ(f.column, 27);

  f = failure(channel("    zone: us\n"));
  EXPECT_EQ(f.what,
            "t.yaml:6:5: unknown key \"zone\" in channels[0]; valid keys: name, type, base_url, keys, "
            "models, priority, weight, headers, model_map, api_version, rpm, tpm, max_concurrent, key_rpm, key_tpm, "
            "cache, cache_ttl, screening, region, subscription, project, location, tenant_id, client_id, client_secret, token_url");

  f = failure(channel("", "a") + "  - name: b\n    type: mock\n    base_url: http://x\n    models: [m]\n"
                                 "    wieght: 2\n");
  EXPECT_EQ(f.line, 10);
  EXPECT_NE(f.what.find("unknown key \"wieght\" in channels[1] (did you mean \"weight\"?)"), std::string::npos);
}

TEST(ConfigErrors, DuplicateKeys) {
  auto f = failure("server:\n  workers: 1\n  workers: 2\n");
  EXPECT_EQ(f.what, "t.yaml:3:3: duplicate key \"workers\" in server (first at line 2)");
  f = failure(channel("    headers:\n      X-A: 1\n      x-a: 2\n"));
  EXPECT_EQ(f.line, 8);
  EXPECT_NE(f.what.find("duplicate header \"x-a\" (first at line 7)"), std::string::npos) << f.what;
}

TEST(ConfigErrors, DuplicateChannelNames) {
  const std::string yaml = channel("", "dup") +
                           "  - name: other\n    type: mock\n    base_url: http://127.0.0.1:1\n    models: [m]\n" +
                           "  - name: dup\n    type: gemini\n"
                           "    base_url: https://generativelanguage.googleapis.com\n    models: [g]\n";
  auto f = failure(yaml);
  EXPECT_EQ(f.what, "t.yaml:10:11: channels[2].name: duplicate channel name \"dup\" (first declared at line 2)");
}

TEST(ConfigErrors, BadChannelType) {
  auto f = failure("channels:\n  - name: x\n    type: palm\n    base_url: http://x\n    models: [m]\n");
  EXPECT_EQ(f.what,
            "t.yaml:3:11: channels[0].type: unknown channel type \"palm\"; valid types: openai, anthropic, "
            "gemini, azure, openai-compatible, mock, bedrock, vertex");
}

TEST(ConfigErrors, ChannelValidation) {
  auto f = failure(channel("", "open/ai"));
  EXPECT_EQ(f.line, 2);
  EXPECT_NE(f.what.find("channels[0].name: \"open/ai\" is not a valid channel name"), std::string::npos);
  EXPECT_EQ(failure(channel("", "\"\"")).line, 2);
  EXPECT_EQ(failure(channel("", std::string(65, 'x'))).line, 2);

  f = failure("channels:\n  - name: x\n    type: openai\n    models: [m]\n");
  EXPECT_EQ(f.what, "t.yaml:2:5: channels[0]: missing required key \"base_url\"");
  f = failure("channels:\n  - name: x\n    type: openai\n    base_url: http://x\n");
  EXPECT_EQ(f.what, "t.yaml:2:5: channels[0]: missing required key \"models\"");
  f = failure("channels:\n  - type: openai\n    base_url: http://x\n    models: [m]\n");
  EXPECT_EQ(f.what, "t.yaml:2:5: channels[0]: missing required key \"name\"");
  f = failure("channels:\n  - name: x\n    base_url: http://x\n    models: [m]\n");
  EXPECT_EQ(f.what, "t.yaml:2:5: channels[0]: missing required key \"type\"");
  f = failure("channels:\n  - just-a-string\n");
  EXPECT_EQ(f.what, "t.yaml:2:5: channels[0]: expected a mapping, got \"just-a-string\"");

  f = failure("channels:\n  - name: x\n    type: openai\n    base_url: http://x\n    models: []\n");
  EXPECT_EQ(f.what, "t.yaml:5:13: channels[0].models: must list at least one model");
  f = failure("channels:\n  - name: x\n    type: openai\n    base_url: http://x\n    models: [a, \"\"]\n");
  EXPECT_EQ(f.what, "t.yaml:5:17: channels[0].models[1]: empty model name");

  f = failure(channel("    weight: -1\n"));
  EXPECT_EQ(f.what, "t.yaml:6:13: channels[0].weight: must be from 0 to 1000000, got -1");
  f = failure(channel("    keys: [[nested]]\n"));
  EXPECT_EQ(f.line, 6);
  EXPECT_NE(f.what.find("channels[0].keys[0]: expected a string, got a list"), std::string::npos);
  f = failure(channel("    headers: {\"bad header\": x}\n"));
  EXPECT_EQ(f.line, 6);
  EXPECT_NE(f.what.find("\"bad header\" is not a valid header name"), std::string::npos);
}

TEST(ConfigErrors, KeysWithControlCharactersNeverEchoTheSecret) {
  ScopedEnv key("SLUICE_T_KEY", "sk-secret-value\n");
  auto f = failure(channel("    keys: [\"${SLUICE_T_KEY}\"]\n"));
  EXPECT_EQ(f.line, 6);
  EXPECT_EQ(f.what.find("sk-secret"), std::string::npos) << f.what;
}

TEST(ConfigErrors, BaseUrl) {
  for (const char* bad : {"ftp://host/x", "api.openai.com/v1", "https://", "http:///path", "https://h/#frag",
                          "not a url"}) {
    const std::string yaml =
        "channels:\n  - name: x\n    type: openai\n    base_url: \"" + std::string(bad) + "\"\n    models: [m]\n";
    auto f = failure(yaml);
    EXPECT_EQ(f.line, 4) << bad;
    EXPECT_NE(f.what.find("channels[0].base_url: expected an http:// or https:// URL"), std::string::npos)
        << f.what;
  }
  const auto c = parse(
      "channels:\n  - name: x\n    type: azure\n    base_url: https://r.openai.azure.com/openai//\n"
      "    models: [m]\n");
  EXPECT_EQ(c->channels[0].base_url, "https://r.openai.azure.com/openai");
}

TEST(ConfigErrors, Listen) {
  for (const char* good : {"127.0.0.1:8080", "0.0.0.0:0", "localhost:65535", "[::1]:8080", "[::]:80"}) {
    EXPECT_EQ(parse(std::string("server:\n  listen: \"") + good + "\"\n")->server.listen, good);
  }
  for (const char* bad : {"8080", "127.0.0.1", ":8080", "::1:8080", "[::1]8080", "[::1", "h:65536", "h:http",
                          "h:-1", "h o:1"}) {
    auto f = failure(std::string("server:\n  listen: \"") + bad + "\"\n");
    EXPECT_EQ(f.line, 2) << bad;
    EXPECT_EQ(f.column, 11) << bad;
    EXPECT_NE(f.what.find("server.listen: expected host:port"), std::string::npos) << f.what;
  }
  EXPECT_NE(failure("server:\n  listen: \"::1:80\"\n").what.find("needs brackets"), std::string::npos);
}

TEST(ConfigErrors, Ranges) {
  EXPECT_EQ(failure("server:\n  workers: -1\n").what, "t.yaml:2:12: server.workers: must be from 0 to 1024, got -1");
  EXPECT_EQ(failure("routing:\n  max_retries: 21\n").what,
            "t.yaml:2:16: routing.max_retries: must be from 0 to 20, got 21");
  EXPECT_EQ(parse("routing:\n  max_retries: 20\n")->routing.max_retries, 20);
  EXPECT_EQ(failure("routing:\n  timeouts:\n    idle: 0s\n").what,
            "t.yaml:3:11: routing.timeouts.idle: must be greater than 0, got \"0s\"");
  EXPECT_EQ(failure("routing:\n  breaker_failures: 0\n").what,
            "t.yaml:2:21: routing.breaker_failures: must be at least 1, got 0");
  EXPECT_EQ(failure("server:\n  max_body_bytes: 0\n").line, 2);
  EXPECT_EQ(failure("server:\n  max_header_bytes: 8GiB\n").line, 2);
}

TEST(ConfigErrors, DurationAndSizeMessages) {
  auto f = failure("routing:\n  timeouts:\n    connect: 5 seconds\n");
  EXPECT_EQ(f.line, 3);
  EXPECT_EQ(f.column, 14);
  EXPECT_NE(f.what.find("routing.timeouts.connect: expected a duration such as \"5s\""), std::string::npos);
  EXPECT_NE(f.what.find("got \"5 seconds\""), std::string::npos);
  f = failure("server:\n  max_body_bytes: 32MB!\n");
  EXPECT_EQ(f.what,
            "t.yaml:2:19: server.max_body_bytes: expected a byte size such as 1048576, \"64KiB\", \"32MiB\" or "
            "\"1MB\", got \"32MB!\"");
}

TEST(ConfigErrors, StoreAndRedisUrls) {
  EXPECT_EQ(failure("store:\n  url: mysql://x\n").line, 2);
  EXPECT_EQ(failure("store:\n  url: \"\"\n").line, 2);
  EXPECT_EQ(failure("redis:\n  url: http://x\n").line, 2);
  EXPECT_EQ(parse("store: {url: \"postgresql://u@h/db\"}\nredis: {url: \"redis://:pw@h:6380/2\"}\n")->redis.url,
            "redis://:pw@h:6380/2");
  // TLS and unix sockets are not spoken: refused at load rather than at the first request.
  EXPECT_EQ(failure("redis:\n  url: rediss://h:6380\n").line, 2);
  EXPECT_EQ(failure("redis:\n  url: \"redis://h:notaport\"\n").line, 2);
}

TEST(ConfigErrors, YamlSyntaxErrorLine) {
  auto f = failure("server:\n  workers: 2\n  listen: a: b\n");
  EXPECT_EQ(f.what, "t.yaml:3:12: invalid YAML: illegal map value");

  f = failure("server:\n  listen: 127.0.0.1:1\n workers: 2\n");
  EXPECT_EQ(f.line, 3);
  EXPECT_NE(f.what.find("invalid YAML"), std::string::npos) << f.what;

  f = failure("routing:\n  timeouts: {connect: 1s\n");
  EXPECT_NE(f.what.find("invalid YAML"), std::string::npos) << f.what;
  EXPECT_GE(f.line, 2);

  f = failure("server:\n\tworkers: 1\n");  // tabs cannot indent
  EXPECT_EQ(f.line, 2);
  EXPECT_NE(f.what.find("invalid YAML"), std::string::npos) << f.what;

  f = failure("server: {}\n---\nauth: {}\n");
  EXPECT_EQ(f.what, "t.yaml:2:1: expected one YAML document; a second one starts here");
}

// Regression (config fuzzer): yaml-cpp's LoadAll never got past a stray ',' and made empty
// documents until memory ran out.
TEST(ConfigErrors, StrayCommaIsAnErrorNotAnOutOfMemory) {
  for (const char* text : {",", ", ", ",a", ",--"}) {
    auto f = failure(text);
    EXPECT_EQ(f.line, 1) << text;
    EXPECT_NE(f.what.find("YAML"), std::string::npos) << f.what;
  }
}

// ---- files ----

TEST(ConfigFile, MissingFile) {
  try {
    loadConfigFile("/nonexistent/sluice.yaml");
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_STREQ(e.what(), "cannot read /nonexistent/sluice.yaml: No such file or directory");
    EXPECT_EQ(e.line(), 0);
  }
  try {
    loadConfigFile("/tmp");
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_STREQ(e.what(), "cannot read /tmp: Is a directory");
  }
}

TEST(ConfigFile, LoadsAndNamesTheFile) {
  const auto path = std::filesystem::temp_directory_path() / ("sluice-config-test-" + std::to_string(::getpid()) + ".yaml");
  {
    std::ofstream out(path);
    out << "server:\n  workers: 2\n";
  }
  const auto c = loadConfigFile(path.string());
  EXPECT_EQ(c->server.workers, 2);
  EXPECT_EQ(c->source_path, path.string());
  {
    std::ofstream out(path);
    out << "server:\n  workers: two\n";
  }
  try {
    loadConfigFile(path.string());
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_EQ(std::string(e.what()).rfind(path.string() + ":2:12: server.workers", 0), 0u) << e.what();
  }
  std::filesystem::remove(path);
}

// ---- durations and sizes ----

TEST(ConfigDurations, Parse) {
  EXPECT_EQ(parseDuration("5s"), milliseconds(5'000));
  EXPECT_EQ(parseDuration("250ms"), milliseconds(250));
  EXPECT_EQ(parseDuration("2m"), milliseconds(120'000));
  EXPECT_EQ(parseDuration("1h"), milliseconds(3'600'000));
  EXPECT_EQ(parseDuration("30"), milliseconds(30'000));
  EXPECT_EQ(parseDuration("0"), milliseconds(0));
  EXPECT_EQ(parseDuration("1.5s"), milliseconds(1'500));
  EXPECT_EQ(parseDuration("1h30m"), milliseconds(5'400'000));
  EXPECT_EQ(parseDuration("1m30s500ms"), milliseconds(90'500));
  EXPECT_EQ(parseDuration("8760h"), kMaxDuration);
  EXPECT_EQ(parseDuration("30d"), milliseconds(30LL * 86'400'000));
  EXPECT_EQ(parseDuration("1d12h"), milliseconds(36LL * 3'600'000));
  for (const char* bad : {"", "s", "-5s", "5x", "5 s s", "1.s", ".5s", "5s5", "366d", "8761h", "1e3s", "abc", "1w"}) {
    EXPECT_FALSE(parseDuration(bad).has_value()) << bad;
  }
}

TEST(ConfigStore, StoredResponsesDefaultOnAndRoundTrip) {
  const auto d = parse("");
  EXPECT_TRUE(d->store.responses.enabled);
  EXPECT_EQ(d->store.responses.ttl, milliseconds(30LL * 86'400'000));
  EXPECT_EQ(d->store.responses.max_bytes, 4u << 20);
  const auto c = parse("store:\n  responses: {enabled: false, ttl: 2h, max_bytes: 64KiB}\n");
  EXPECT_FALSE(c->store.responses.enabled);
  EXPECT_EQ(c->store.responses.ttl, milliseconds(7'200'000));
  EXPECT_EQ(c->store.responses.max_bytes, 64u << 10);
  const auto back = parseConfig(describeConfig(*c), "back.yaml");
  EXPECT_FALSE(back->store.responses.enabled);
  EXPECT_EQ(back->store.responses.ttl, c->store.responses.ttl);
  EXPECT_EQ(back->store.responses.max_bytes, c->store.responses.max_bytes);
}

TEST(ConfigDurations, Format) {
  EXPECT_EQ(formatDuration(milliseconds(0)), "0s");
  EXPECT_EQ(formatDuration(milliseconds(250)), "250ms");
  EXPECT_EQ(formatDuration(milliseconds(1'500)), "1500ms");
  EXPECT_EQ(formatDuration(milliseconds(5'000)), "5s");
  EXPECT_EQ(formatDuration(milliseconds(90'000)), "90s");
  EXPECT_EQ(formatDuration(milliseconds(120'000)), "2m");
  EXPECT_EQ(formatDuration(milliseconds(7'200'000)), "2h");
  EXPECT_EQ(formatDuration(milliseconds(2LL * 86'400'000)), "2d");
}

TEST(ConfigSizes, ParseAndFormat) {
  EXPECT_EQ(parseByteSize("1024"), 1024u);
  EXPECT_EQ(parseByteSize("32MiB"), 32u << 20);
  EXPECT_EQ(parseByteSize("64KiB"), 64u << 10);
  EXPECT_EQ(parseByteSize("64kib"), 64u << 10);
  EXPECT_EQ(parseByteSize("1MB"), 1'000'000u);
  EXPECT_EQ(parseByteSize("2GB"), 2'000'000'000u);
  EXPECT_EQ(parseByteSize("1GiB"), 1u << 30);
  EXPECT_EQ(parseByteSize("1 MiB"), 1u << 20);
  EXPECT_EQ(parseByteSize("1.5KiB"), 1536u);
  EXPECT_EQ(parseByteSize("10B"), 10u);
  EXPECT_EQ(parseByteSize("4Mi"), 4u << 20);
  for (const char* bad : {"", "MiB", "-1", "1 XB", "1K", "1e6", "99999999999999TiB"}) {
    EXPECT_FALSE(parseByteSize(bad).has_value()) << bad;
  }
  EXPECT_EQ(formatByteSize(32u << 20), "32MiB");
  EXPECT_EQ(formatByteSize(64u << 10), "64KiB");
  EXPECT_EQ(formatByteSize(1u << 30), "1GiB");
  EXPECT_EQ(formatByteSize(1'000'000), "1000000");
  EXPECT_EQ(formatByteSize(0), "0");
}

// ---- describeConfig ----

TEST(ConfigDescribe, MasksSecrets) {
  EXPECT_EQ(maskSecret(""), "");
  EXPECT_EQ(maskSecret("short"), "***");
  EXPECT_EQ(maskSecret("1234567"), "***");
  EXPECT_EQ(maskSecret("sk-abcdefgh"), "sk-\u2026gh");

  const auto c = parse(R"(auth: {master_key: sk-master-SECRET-99}
store: {url: "postgres://sluice:DBPASS@db:5432/sluice?password=QPASS&sslmode=require"}
redis: {url: "redis://:REDISPASS@127.0.0.1:6379"}
channels:
  - name: az
    type: azure
    base_url: https://r.openai.azure.com
    keys: [azure-KEY-SECRET-1, tiny]
    models: [gpt-4o]
    headers: {api-key: HEADER-SECRET-VALUE}
)");
  const std::string d = describeConfig(*c);
  for (const char* secret : {"SECRET", "DBPASS", "QPASS", "REDISPASS", "tiny"}) {
    EXPECT_EQ(d.find(secret), std::string::npos) << secret << " leaked in:\n" << d;
  }
  EXPECT_NE(d.find("sk-\u2026") , std::string::npos) << d;
  EXPECT_NE(d.find("postgres://sluice:***@db:5432/sluice?password=***&sslmode=require"), std::string::npos) << d;
  EXPECT_NE(d.find("redis://:***@127.0.0.1:6379"), std::string::npos) << d;
  EXPECT_NE(d.find("azu\u2026-1"), std::string::npos) << d;
  EXPECT_NE(d.find("name: az"), std::string::npos) << d;
  EXPECT_NE(d.find("type: azure"), std::string::npos) << d;
  EXPECT_NE(d.find("max_body_bytes: 32MiB"), std::string::npos) << d;
  EXPECT_NE(d.find("total: 10m"), std::string::npos) << d;
}

TEST(ConfigDescribe, OutputOfDefaultsParsesBack) {
  const auto c = parse("");
  const auto back = parse(describeConfig(*c));
  EXPECT_EQ(back->server.max_body_bytes, c->server.max_body_bytes);
  EXPECT_EQ(back->routing.timeouts.total, c->routing.timeouts.total);
  EXPECT_EQ(back->store.url, c->store.url);
}

}  // namespace config_test
}  // namespace
}  // namespace sluice::config

namespace sluice::config {
namespace {
namespace config_test {

TEST(ConfigParse, AliasesModelMapAndApiVersion) {
  auto c = parseConfig(R"(routing:
  aliases: {fast: gpt-4o-mini, smart: "openai/gpt-4.1"}
channels:
  - name: az
    type: azure
    base_url: "https://res.openai.azure.com"
    keys: ["k"]
    models: ["gpt-4.1"]
    model_map: {"gpt-4.1": "prod-deployment"}
    api_version: "2025-01-01-preview"
)", "t.yaml");
  EXPECT_EQ(c->routing.aliases.at("fast"), "gpt-4o-mini");
  EXPECT_EQ(c->routing.aliases.at("smart"), "openai/gpt-4.1");
  ASSERT_EQ(c->channels.size(), 1u);
  EXPECT_EQ(c->channels[0].model_map.at("gpt-4.1"), "prod-deployment");
  EXPECT_EQ(c->channels[0].api_version, "2025-01-01-preview");
}

TEST(ConfigErrors, ModelMapMustMapNamesToNames) {
  try {
    parseConfig("channels:\n  - name: a\n    type: openai\n    base_url: \"http://x\"\n    models: [m]\n    model_map: [m]\n",
                "t.yaml");
    FAIL() << "accepted a list as model_map";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.line(), 6);
    EXPECT_NE(std::string(e.what()).find("model_map"), std::string::npos) << e.what();
  }
  try {
    parseConfig("routing:\n  aliases: {fast: \"\"}\n", "t.yaml");
    FAIL() << "accepted an empty alias target";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.line(), 2);
  }
}

TEST(ConfigParse, ControlPlaneKeys) {
  const auto c = parse(R"(store:
  url: "sqlite://./x.db"
  log_retention_days: 7
  log_bodies: true
  log_body_max_bytes: 4KiB
  secret_key: "s3cret-passphrase-0123456789"
routing:
  recovery_interval: 0s
channels:
  - name: a
    type: openai
    base_url: "https://api.openai.com/v1"
    keys: ["sk-aaaaaaaaaaaa"]
    models: ["gpt-4o"]
    rpm: 100
    tpm: 50000
    max_concurrent: 8
    key_rpm: 60
    key_tpm: 20000
)");
  EXPECT_EQ(c->store.log_retention_days, 7);
  EXPECT_TRUE(c->store.log_bodies);
  EXPECT_EQ(c->store.log_body_max_bytes, 4096u);
  EXPECT_EQ(c->store.secret_key, "s3cret-passphrase-0123456789");
  EXPECT_EQ(c->routing.recovery_interval.count(), 0);
  const auto& ch = c->channels.at(0);
  EXPECT_EQ(ch.rpm, 100);
  EXPECT_EQ(ch.tpm, 50000);
  EXPECT_EQ(ch.max_concurrent, 8);
  EXPECT_EQ(ch.key_rpm, 60);
  EXPECT_EQ(ch.key_tpm, 20000);
  const auto text = describeConfig(*c);
  EXPECT_EQ(text.find("s3cret-passphrase"), std::string::npos) << text;
  EXPECT_NE(text.find("key_rpm: 60"), std::string::npos) << text;
  // The description parses back to the same settings.
  const auto again = parse(text);
  EXPECT_EQ(again->channels.at(0).key_tpm, 20000);
  EXPECT_EQ(again->store.log_retention_days, 7);
}

TEST(ConfigErrors, ControlPlaneValues) {
  auto f = failure("store:\n  log_retention_days: -1\n");
  EXPECT_EQ(f.line, 2);
  EXPECT_NE(f.what.find("store.log_retention_days: must be from 0 to 36500"), std::string::npos) << f.what;
  f = failure("store:\n  log_bodies: yes\n");
  EXPECT_NE(f.what.find("store.log_bodies: expected true or false"), std::string::npos) << f.what;
  f = failure(channel("    rpm: -5\n"));
  EXPECT_EQ(f.line, 6);
  EXPECT_NE(f.what.find("channels[0].rpm: must be at least 0"), std::string::npos) << f.what;
}

}  // namespace config_test
}  // namespace
}  // namespace sluice::config

namespace sluice::config {
namespace {
namespace config_test {

TEST(ConfigParse, ProtectSections) {
  const auto c = parse(
      "cache: {enabled: true, ttl: 10m, max_bytes: 64MiB, max_entry_bytes: 512KiB, shared: true}\n"
      "redaction:\n"
      "  enabled: true\n"
      "  key: \"0123456789abcdef0123\"\n"
      "  actions: {PHONE: mask, IPV4: off}\n"
      "  rules:\n"
      "    - {name: TICKET, pattern: 'TCK-[0-9]{6}', action: block, fields: [user, tool]}\n"
      "screening: {action: warn, threshold: 0.8, deny: ['(?i)jailbreak']}\n"
      "guardrail: {url: \"http://127.0.0.1:9/review\", timeout: 300ms, on_failure: fail_closed, review_response: true}\n"
      "channels:\n"
      "  - {name: m, type: mock, base_url: \"http://127.0.0.1:1\", models: [\"*\"], cache: false, cache_ttl: 5s, "
      "screening: block}\n");
  EXPECT_TRUE(c->cache.enabled);
  EXPECT_EQ(c->cache.ttl, std::chrono::minutes(10));
  EXPECT_EQ(c->cache.max_bytes, 64u << 20);
  EXPECT_EQ(c->cache.max_entry_bytes, 512u << 10);
  EXPECT_TRUE(c->cache.shared);
  EXPECT_TRUE(c->redaction.enabled);
  EXPECT_EQ(c->redaction.key, "0123456789abcdef0123");
  EXPECT_EQ(c->redaction.actions.at("PHONE"), "mask");
  EXPECT_EQ(c->redaction.actions.at("IPV4"), "off");
  ASSERT_EQ(c->redaction.rules.size(), 1u);
  EXPECT_EQ(c->redaction.rules[0].action, "block");
  EXPECT_EQ(c->redaction.rules[0].fields, (std::vector<std::string>{"user", "tool"}));
  EXPECT_EQ(c->screening.action, ScreenAction::Warn);
  EXPECT_DOUBLE_EQ(c->screening.threshold, 0.8);
  ASSERT_EQ(c->screening.deny.size(), 1u);
  EXPECT_EQ(c->guardrail.timeout, std::chrono::milliseconds(300));
  EXPECT_FALSE(c->guardrail.fail_open);
  EXPECT_TRUE(c->guardrail.review_response);
  ASSERT_EQ(c->channels.size(), 1u);
  EXPECT_EQ(c->channels[0].cache, std::optional<bool>(false));
  EXPECT_EQ(c->channels[0].cache_ttl, std::optional<std::chrono::milliseconds>(std::chrono::seconds(5)));
  EXPECT_EQ(c->channels[0].screening, std::optional<ScreenAction>(ScreenAction::Block));
  // The description parses back to the same settings (the key masked).
  const auto back = parse(describeConfig(*c));
  EXPECT_EQ(back->cache.ttl, c->cache.ttl);
  EXPECT_EQ(back->redaction.rules.size(), 1u);
  EXPECT_EQ(back->screening.action, ScreenAction::Warn);
  EXPECT_EQ(back->channels[0].screening, c->channels[0].screening);
  EXPECT_EQ(describeConfig(*c).find("0123456789abcdef0123"), std::string::npos);
}

TEST(Config, Telemetry) {
  auto off = parse("server: {workers: 1}\n");
  EXPECT_TRUE(off->telemetry.otlp_endpoint.empty());  // no tracing unless asked
  EXPECT_EQ(off->telemetry.service_name, "sluice");
  EXPECT_EQ(off->telemetry.sample_ratio, 1.0);
  auto c = parse(
      "telemetry:\n  otlp_endpoint: \"http://collector:4318\"\n  service_name: gw-eu\n  sample_ratio: 0.25\n"
      "  capture_content: true\n  headers: {Authorization: \"Bearer collector-secret-0123456789\"}\n");
  EXPECT_EQ(c->telemetry.otlp_endpoint, "http://collector:4318");
  EXPECT_EQ(c->telemetry.service_name, "gw-eu");
  EXPECT_EQ(c->telemetry.sample_ratio, 0.25);
  EXPECT_TRUE(c->telemetry.capture_content);
  EXPECT_EQ(c->telemetry.headers.at("Authorization"), "Bearer collector-secret-0123456789");
  // The rendered config masks the collector's credentials and reads back.
  const std::string shown = describeConfig(*c);
  EXPECT_EQ(shown.find("collector-secret-0123456789"), std::string::npos) << shown;
  EXPECT_NE(shown.find("otlp_endpoint"), std::string::npos);
  auto back = parse(shown);
  EXPECT_EQ(back->telemetry.sample_ratio, 0.25);
  EXPECT_EQ(back->telemetry.service_name, "gw-eu");

  auto f = failure("telemetry: {otlp_endpoint: \"ftp://collector\"}\n");
  EXPECT_NE(f.what.find("telemetry.otlp_endpoint"), std::string::npos) << f.what;
  f = failure("telemetry: {sample_ratio: 1.5}\n");
  EXPECT_NE(f.what.find("telemetry.sample_ratio"), std::string::npos) << f.what;
  f = failure("telemetry: {endpoint: \"http://c:4318\"}\n");
  EXPECT_NE(f.what.find("unknown key \"endpoint\" in telemetry"), std::string::npos) << f.what;
  f = failure("telemetry:\n  headers: {\"Bad Name\": x}\n");
  EXPECT_EQ(f.line, 2);
  f = failure("telemetry: {service_name: \"\"}\n");
  EXPECT_NE(f.what.find("telemetry.service_name"), std::string::npos) << f.what;
}

TEST(ConfigErrors, ProtectValues) {
  auto f = failure("guardrail: {url: \"http://127.0.0.1:9/x\"}\n");
  EXPECT_NE(f.what.find("on_failure: fail_open or fail_closed"), std::string::npos) << f.what;
  f = failure("guardrail: {url: \"http://127.0.0.1:9/x\", on_failure: open}\n");
  EXPECT_NE(f.what.find("guardrail.on_failure: expected fail_open"), std::string::npos) << f.what;
  f = failure("screening: {action: deny}\n");
  EXPECT_NE(f.what.find("screening.action: expected off, log, warn or block"), std::string::npos) << f.what;
  f = failure("screening:\n  deny: ['(a']\n");
  EXPECT_EQ(f.line, 2);
  EXPECT_NE(f.what.find("not a valid RE2 pattern"), std::string::npos) << f.what;
  f = failure("redaction:\n  actions: {E_MAIL: mask}\n");
  EXPECT_NE(f.what.find("\"E_MAIL\" is not a built-in rule"), std::string::npos) << f.what;
  f = failure("redaction:\n  actions: {EMAIL: hide}\n");
  EXPECT_NE(f.what.find("expected mask, encrypt, block or off"), std::string::npos) << f.what;
  f = failure("redaction:\n  rules:\n    - {name: EMAIL, pattern: x}\n");
  EXPECT_NE(f.what.find("is used twice"), std::string::npos) << f.what;
  f = failure("redaction:\n  rules:\n    - {name: X, pattern: 'a*'}\n");
  EXPECT_EQ(f.line, 3);
  EXPECT_NE(f.what.find("redaction.rules[0]"), std::string::npos) << f.what;
  f = failure("redaction:\n  rules:\n    - {pattern: 'abc'}\n");
  EXPECT_NE(f.what.find("missing required key \"name\""), std::string::npos) << f.what;
  f = failure("store:\n  responses: {ttl: 0s}\n");
  EXPECT_EQ(f.line, 2);
  EXPECT_NE(f.what.find("store.responses.ttl: must be greater than 0"), std::string::npos) << f.what;
  f = failure("store:\n  responses: {max_bytes: 1TiB}\n");
  EXPECT_NE(f.what.find("store.responses.max_bytes: must be from 1 to 256MiB"), std::string::npos) << f.what;
  f = failure("store:\n  responses: {keep: yes}\n");
  EXPECT_NE(f.what.find("keep"), std::string::npos) << f.what;
  f = failure("store:\n  responses: {enabled: sometimes}\n");
  EXPECT_NE(f.what.find("store.responses.enabled"), std::string::npos) << f.what;
  f = failure("cache: {max_bytes: 1KiB, max_entry_bytes: 1MiB}\n");
  EXPECT_NE(f.what.find("max_entry_bytes must not exceed max_bytes"), std::string::npos) << f.what;
  f = failure(channel("    screening: maybe\n"));
  EXPECT_NE(f.what.find("channels[0].screening: expected off, log, warn or block"), std::string::npos) << f.what;
}

TEST(ConfigParse, ErrorRulesAndFallbacks) {
  const auto c = parseConfig(R"(routing:
  rules:
    - {status: [400], body: "context_length_exceeded|prompt is too long", action: fallback}
    - {status: [503, 529], body: "overloaded", action: failover}
    - {status: 429, action: cooldown, for: 60s}
    - {status: [400, 422], action: return}
    - {body: "organization_deactivated", action: disable}
    - {action: retry}
  fallbacks: {gpt-4o: [claude-sonnet-4-5, gemini-2.5-pro]}
)", "t.yaml");
  const auto& r = c->routing.rules;
  ASSERT_EQ(r.size(), 6u);
  EXPECT_EQ(r[0].status, std::vector<int>{400});
  EXPECT_EQ(r[0].body, "context_length_exceeded|prompt is too long");
  EXPECT_EQ(r[0].action, ErrorAction::Fallback);
  EXPECT_EQ(r[1].status, (std::vector<int>{503, 529}));
  EXPECT_EQ(r[1].action, ErrorAction::Failover);
  EXPECT_EQ(r[2].status, std::vector<int>{429});
  EXPECT_EQ(r[2].action, ErrorAction::Cooldown);
  EXPECT_EQ(r[2].cooldown, std::chrono::milliseconds(60'000));
  EXPECT_EQ(r[3].action, ErrorAction::Return);
  EXPECT_TRUE(r[4].status.empty());
  EXPECT_EQ(r[4].action, ErrorAction::Disable);
  EXPECT_TRUE(r[5].status.empty());
  EXPECT_TRUE(r[5].body.empty());
  EXPECT_EQ(r[5].action, ErrorAction::Retry);
  EXPECT_EQ(c->routing.fallbacks.at("gpt-4o"), (std::vector<std::string>{"claude-sonnet-4-5", "gemini-2.5-pro"}));
  // What `sluice config` shows reads back the same.
  const auto back = parseConfig(describeConfig(*c), "back.yaml");
  ASSERT_EQ(back->routing.rules.size(), 6u);
  for (std::size_t i = 0; i < 6; ++i) {
    EXPECT_EQ(back->routing.rules[i].status, r[i].status) << i;
    EXPECT_EQ(back->routing.rules[i].body, r[i].body) << i;
    EXPECT_EQ(back->routing.rules[i].action, r[i].action) << i;
    EXPECT_EQ(back->routing.rules[i].cooldown, r[i].cooldown) << i;
  }
  EXPECT_EQ(back->routing.fallbacks, c->routing.fallbacks);
}

TEST(ConfigParse, StallAndBalance) {
  const auto d = parseConfig("routing:\n  max_retries: 1\n", "t.yaml");
  EXPECT_EQ(d->routing.stall_timeout.count(), 0);  // off: today's idle timeout alone
  EXPECT_EQ(d->routing.on_stall, OnStall::Error);
  EXPECT_EQ(d->routing.balance, Balance::Weighted);
  const auto c = parseConfig("routing:\n  stall_timeout: 30s\n  on_stall: error\n  balance: latency\n", "t.yaml");
  EXPECT_EQ(c->routing.stall_timeout, std::chrono::milliseconds(30'000));
  EXPECT_EQ(c->routing.balance, Balance::Latency);
  const auto back = parseConfig(describeConfig(*c), "back.yaml");
  EXPECT_EQ(back->routing.stall_timeout, c->routing.stall_timeout);
  EXPECT_EQ(back->routing.on_stall, c->routing.on_stall);
  EXPECT_EQ(back->routing.balance, c->routing.balance);
  const auto off = parseConfig(describeConfig(*d), "back.yaml");
  EXPECT_EQ(off->routing.stall_timeout.count(), 0);
  EXPECT_EQ(off->routing.hedge_after.count(), 0);
  EXPECT_FALSE(off->routing.hedge_auto);
  const auto h = parseConfig("routing:\n  hedge_after: 800ms\n", "t.yaml");
  EXPECT_EQ(h->routing.hedge_after, std::chrono::milliseconds(800));
  EXPECT_EQ(parseConfig(describeConfig(*h), "back.yaml")->routing.hedge_after, std::chrono::milliseconds(800));
  const auto a = parseConfig("routing:\n  hedge_after: auto\n", "t.yaml");
  EXPECT_TRUE(a->routing.hedge_auto);
  EXPECT_TRUE(parseConfig(describeConfig(*a), "back.yaml")->routing.hedge_auto);
  EXPECT_EQ(d->routing.discovery_interval, std::chrono::milliseconds(600'000));  // ten minutes
  const auto di = parseConfig("routing:\n  discovery_interval: 0s\n", "t.yaml");
  EXPECT_EQ(di->routing.discovery_interval.count(), 0);
  EXPECT_EQ(parseConfig(describeConfig(*di), "back.yaml")->routing.discovery_interval.count(), 0);
  const auto k = parseConfig("routing:\n  on_stall: continue\n", "t.yaml");
  EXPECT_EQ(k->routing.on_stall, OnStall::Continue);
  EXPECT_EQ(parseConfig(describeConfig(*k), "back.yaml")->routing.on_stall, OnStall::Continue);
}

TEST(ConfigErrors, ErrorRulesAndFallbacksSayWhatIsWrongAndWhere) {
  const std::pair<const char*, const char*> cases[] = {
      {"routing:\n  rules: {status: 400}\n", "routing.rules: expected a list of rules"},
      {"routing:\n  rules:\n    - {status: [400]}\n", "routing.rules[0]: a rule needs an action"},
      {"routing:\n  rules:\n    - {action: nope}\n", "routing.rules[0].action: expected retry, failover"},
      {"routing:\n  rules:\n    - {status: [399], action: return}\n", "routing.rules[0].status[0]: must be from 400 to 599"},
      {"routing:\n  rules:\n    - {status: [], action: return}\n", "routing.rules[0].status: an empty list"},
      {"routing:\n  rules:\n    - {status: {a: 1}, action: return}\n", "routing.rules[0].status: expected a status"},
      {"routing:\n  rules:\n    - {body: \"a(\", action: return}\n", "routing.rules[0].body: not a valid RE2 pattern"},
      {"routing:\n  rules:\n    - {body: \"\", action: return}\n", "routing.rules[0].body: empty pattern"},
      {"routing:\n  rules:\n    - {action: failover, for: 5s}\n", "routing.rules[0].for: only a cooldown rule"},
      {"routing:\n  rules:\n    - {action: cooldown, for: 0s}\n", "routing.rules[0].for: must be greater than 0"},
      {"routing:\n  rules:\n    - {action: cooldown, status: 429, bodyy: x}\n", "did you mean \"body\"?"},
      {"routing:\n  fallbacks: [gpt-4o]\n", "routing.fallbacks: expected a mapping"},
      {"routing:\n  fallbacks: {gpt-4o: [gpt-4o]}\n", "cannot be its own fallback"},
      {"routing:\n  fallbacks: {gpt-4o: [a, a]}\n", "routing.fallbacks.gpt-4o[1]: \"a\" is listed twice"},
      {"routing:\n  fallbacks: {gpt-4o: [\"\"]}\n", "routing.fallbacks.gpt-4o[0]: expected a model name"},
      {"routing:\n  balance: fastest\n", "routing.balance: expected weighted or latency"},
      {"routing:\n  on_stall: retry\n", "routing.on_stall: expected error or continue"},
      {"routing:\n  stall_timeout: soon\n", "routing.stall_timeout: expected a duration"},
      {"routing:\n  hedge_after: sometimes\n", "routing.hedge_after: expected a duration"},
  };
  for (const auto& [yaml, want] : cases) {
    try {
      parseConfig(yaml, "t.yaml");
      ADD_FAILURE() << "accepted: " << yaml;
    } catch (const ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find(want), std::string::npos) << yaml << "\n -> " << e.what();
      EXPECT_GE(e.line(), 2) << yaml;
    }
  }
}

}  // namespace config_test
}  // namespace
}  // namespace sluice::config
