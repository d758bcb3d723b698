#include "admin/ChannelOps.hpp"

#include <gtest/gtest.h>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

#include "admin/Fields.hpp"
#include "core/SecretBox.hpp"

namespace sluice::admin {
namespace {
namespace channel_ops_test {

namespace json = boost::json;

json::object obj(std::string_view text) {
  return json::parse(text).as_object();
}

constexpr std::string_view kValid =
    R"({"name":"groq","type":"openai-compatible","base_url":"https://api.groq.com/openai/v1/",
  "models":["llama-*"]})";

std::string refusedParam(std::string_view body, bool creating = false) {
  store::Channel ch;
  try {
    applyChannelFields(ch, obj(body), creating);
  } catch (const FieldError& e) {
    return e.param();
  }
  return "";
}

TEST(ChannelOps, CreatesLikeTheYamlLoader) {
  store::Channel ch;
  applyChannelFields(ch, obj(kValid), true);
  EXPECT_EQ(ch.name, "groq");
  EXPECT_EQ(ch.type, "openai-compatible");
  EXPECT_EQ(ch.base_url, "https://api.groq.com/openai/v1") << "trailing '/' removed, as the loader does";
  EXPECT_EQ(ch.models, R"(["llama-*"])");
  EXPECT_EQ(ch.priority, 1);
  EXPECT_EQ(ch.weight, 1);
  EXPECT_TRUE(ch.enabled);
  EXPECT_EQ(ch.settings, "{}");
}

TEST(ChannelOps, RefusesEachBadFieldByName) {
  for (const char* required : {"name", "type", "base_url", "models"}) {
    json::object body = obj(kValid);
    body.erase(required);
    EXPECT_EQ(refusedParam(json::serialize(body), true), required);
  }
  EXPECT_EQ(refusedParam(R"({"name":"has space"})"), "name");
  EXPECT_EQ(refusedParam(R"({"name":")" + std::string(65, 'a') + R"("})"), "name");
  EXPECT_EQ(refusedParam(R"({"type":"openai2"})"), "type");
  EXPECT_EQ(refusedParam(R"({"base_url":"ftp://x"})"), "base_url");
  EXPECT_EQ(refusedParam(R"({"base_url":"api.openai.com"})"), "base_url");
  EXPECT_EQ(refusedParam(R"({"base_url":"https://x/v1#frag"})"), "base_url");
  EXPECT_EQ(refusedParam(R"({"models":[]})"), "models");
  EXPECT_EQ(refusedParam(R"({"models":["a",""]})"), "models[1]");
  EXPECT_EQ(refusedParam(R"({"priority":1.5})"), "priority");
  EXPECT_EQ(refusedParam(R"({"weight":-1})"), "weight");
  EXPECT_EQ(refusedParam(R"({"enabled":"yes"})"), "enabled");
  EXPECT_EQ(refusedParam(R"({"headers":{"bad header":"x"}})"), "headers.bad header");
  EXPECT_EQ(refusedParam(R"({"headers":{"X-A":"1","x-a":"2"}})"), "headers.x-a");
  EXPECT_EQ(refusedParam(R"({"headers":{"X-A":1}})"), "headers.X-A");
  EXPECT_EQ(refusedParam(R"({"model_map":{"a":""}})"), "model_map.a");
  EXPECT_EQ(refusedParam(R"({"api_version":""})"), "api_version");
  EXPECT_EQ(refusedParam(R"({"key_rpm":0})"), "key_rpm");
  EXPECT_EQ(refusedParam(R"({"keys":["sk-1"]})"), "keys");
  EXPECT_EQ(refusedParam(R"({"region":"eu"})"), "region");
}

TEST(ChannelOps, SettingsAreFlattenedAndNullRemovesThem) {
  store::Channel ch;
  applyChannelFields(
      ch, obj(R"({"model_map":{"fast":"llama-3-8b"},"api_version":"2024-10-21","rpm":100,"key_tpm":5000})"), false);
  EXPECT_EQ(json::parse(ch.settings),
            json::parse(R"({"model_map":{"fast":"llama-3-8b"},"api_version":"2024-10-21","rpm":100,"key_tpm":5000})"));
  applyChannelFields(ch, obj(R"({"rpm":null,"model_map":null})"), false);
  EXPECT_EQ(json::parse(ch.settings), json::parse(R"({"api_version":"2024-10-21","key_tpm":5000})"));
  const auto j = channelJson(ch, json::array{});
  EXPECT_EQ(j.at("api_version"), "2024-10-21");
  EXPECT_EQ(j.at("key_tpm"), 5000);
  EXPECT_TRUE(j.at("rpm").is_null());
  EXPECT_EQ(j.at("model_map"), json::object{});
  EXPECT_EQ(j.at("source"), "store");
}

TEST(ChannelOps, HeaderValuesAreMaskedAndAnEchoedMaskKeepsTheSecret) {
  store::Channel ch;
  applyChannelFields(ch, obj(R"({"headers":{"X-Api-Token":"tok-1234567890abcdef","X-Team":"search"}})"), false);
  const auto shown = channelJson(ch, json::array{}).at("headers").as_object();
  EXPECT_EQ(shown.at("X-Api-Token"), json::value(config::maskSecret("tok-1234567890abcdef")));
  EXPECT_EQ(json::serialize(shown).find("1234567890"), std::string::npos);
  // A client sends back what it read, changing only one header: the masked one keeps its value.
  json::object echoed = shown;
  echoed["X-Team"] = "ranking";
  applyChannelFields(ch, json::object{{"headers", echoed}}, false);
  EXPECT_EQ(json::parse(ch.headers), json::parse(R"({"X-Api-Token":"tok-1234567890abcdef","X-Team":"ranking"})"));
}

TEST(ChannelOps, UpstreamKeysAreMaskedOnlyWhenTheyCanBeOpened) {
  SecretBox box("a long random operator passphrase");
  store::UpstreamKey k;
  k.id = 3;
  k.channel_id = 9;
  k.secret_encrypted = box.seal("sk-proj-abcdefghijklmnop");
  k.label = "primary";
  const auto j = upstreamKeyJson(k, &box);
  EXPECT_EQ(j.at("masked"), json::value(config::maskSecret("sk-proj-abcdefghijklmnop")));
  EXPECT_EQ(j.at("state"), "active");
  EXPECT_EQ(json::serialize(j).find("abcdefghijklmnop"), std::string::npos);
  EXPECT_TRUE(upstreamKeyJson(k, nullptr).at("masked").is_null());
  SecretBox other("some other passphrase");
  EXPECT_TRUE(upstreamKeyJson(k, &other).at("masked").is_null());
}

TEST(ChannelOps, EntraFieldsAreCheckedAndTheClientSecretIsSealed) {
  SecretBox box("a long random operator passphrase");
  store::Channel ch;
  applyChannelFields(ch, obj(R"({"name":"az","type":"azure","base_url":"https://r.openai.azure.com","models":["gpt-4o"],
    "tenant_id":"contoso.onmicrosoft.com","client_id":"app-1","client_secret":"entra-secret-123456"})"),
                     true, &box);
  const auto settings = json::parse(ch.settings).as_object();
  EXPECT_EQ(settings.at("tenant_id"), "contoso.onmicrosoft.com");
  ASSERT_TRUE(settings.at("client_secret").is_string());
  EXPECT_TRUE(SecretBox::looksSealed(settings.at("client_secret").get_string()));
  EXPECT_EQ(ch.settings.find("entra-secret"), std::string::npos) << "sealed, not in clear";
  EXPECT_EQ(box.open(settings.at("client_secret").get_string()), "entra-secret-123456");
  const auto shown = channelJson(ch, json::array{}, &box);
  EXPECT_EQ(shown.at("client_secret"), json::value(config::maskSecret("entra-secret-123456")));
  EXPECT_EQ(shown.at("client_id"), "app-1");
  EXPECT_EQ(channelJson(ch, json::array{}).at("client_secret"), "***") << "cannot be opened: still no secret";
  // The mask sent back keeps the sealed value as it is.
  const std::string sealed(settings.at("client_secret").get_string());
  applyChannelFields(ch, json::object{{"client_secret", config::maskSecret("entra-secret-123456")}}, false, &box);
  EXPECT_EQ(json::parse(ch.settings).at("client_secret"), json::value(sealed));

  // The field a change to `base` (the azure channel unless given) is refused on, or "".
  auto refused = [&](std::string_view body, const store::Channel* base = nullptr) {
    store::Channel c = base ? *base : ch;
    try {
      applyChannelFields(c, obj(body), false, &box);
    } catch (const FieldError& e) {
      EXPECT_EQ(std::string(e.what()).find("S3CRET"), std::string::npos) << e.what();
      return e.param();
    }
    return std::string();
  };
  EXPECT_EQ(refused(R"({"tenant_id":"a\r\nX: 1"})"), "tenant_id");
  EXPECT_EQ(refused(R"({"tenant_id":7})"), "tenant_id");
  EXPECT_EQ(refused(R"({"client_id":""})"), "client_id");
  EXPECT_EQ(refused(R"({"client_secret":"S3CRET\n"})"), "client_secret");
  EXPECT_EQ(refused(R"({"client_secret":{}})"), "client_secret");
  EXPECT_EQ(refused(R"({"token_url":"https://u:S3CRET@login.example.com/t"})"), "token_url");
  EXPECT_EQ(refused(R"({"token_url":"http://login.example.com/t"})"), "token_url");
  EXPECT_EQ(refused(R"({"token_url":"http://127.0.0.1:9/t"})"), "");
  EXPECT_EQ(refused(R"({"token_url":"https://login.example.com/t"})"), "");
  // A subscription's OAuth endpoint gets the refresh token: the same rule.
  store::Channel sub;
  applyChannelFields(sub, obj(R"({"name":"s","type":"anthropic","base_url":"https://api.anthropic.com","subscription":"claude","models":["m"]})"),
                     true, &box);
  EXPECT_EQ(refused(R"({"token_url":"http://oauth.example.com/token"})", &sub), "token_url");
  EXPECT_EQ(refused(R"({"token_url":"https://u:S3CRET@oauth.example.com/token"})", &sub), "token_url");
  EXPECT_EQ(refused(R"({"token_url":"http://127.0.0.1:9/token"})", &sub), "");
  EXPECT_EQ(refused(R"({"token_url":"https://oauth.example.com/token"})", &sub), "");
  EXPECT_EQ(refused(R"({"client_secret":null})"), "client_secret") << "Entra ID needs all three";
  EXPECT_EQ(refused(R"({"type":"openai"})"), "tenant_id") << "only an azure channel";
  EXPECT_EQ(refused(R"({"tenant_id":null,"client_id":null,"client_secret":null})"), "");
}

TEST(ChannelOps, UpstreamSecretMessagesNeverQuoteTheSecret) {
  try {
    upstreamSecretField(json::value("sk-secret-value\n"));
    FAIL();
  } catch (const FieldError& e) {
    EXPECT_EQ(e.param(), "secret");
    EXPECT_EQ(std::string(e.what()).find("sk-secret-value"), std::string::npos) << e.what();
  }
  EXPECT_THROW(upstreamSecretField(json::value("")), FieldError);
  EXPECT_THROW(upstreamSecretField(json::value(5)), FieldError);
  EXPECT_EQ(upstreamSecretField(json::value("sk-ok")), "sk-ok");
}

TEST(ChannelOps, ConfigChannelsAreShownReadOnlyWithKeysMasked) {
  config::ChannelConfig ch;
  ch.name = "openai";
  ch.base_url = "https://api.openai.com/v1";
  ch.keys = {"sk-proj-0123456789abcdef"};
  ch.models = {"gpt-*"};
  const auto j = configChannelJson(ch);
  EXPECT_EQ(j.at("source"), "config");
  EXPECT_TRUE(j.at("id").is_null());
  EXPECT_EQ(j.at("type"), "openai");
  EXPECT_EQ(j.at("keys").at(0).at("masked"), json::value(config::maskSecret("sk-proj-0123456789abcdef")));
  EXPECT_EQ(json::serialize(j).find("0123456789abcdef"), std::string::npos);
}

}  // namespace channel_ops_test
}  // namespace
}  // namespace sluice::admin
