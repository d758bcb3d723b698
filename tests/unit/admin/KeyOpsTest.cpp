#include "admin/KeyOps.hpp"

#include <gtest/gtest.h>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

#include "admin/Fields.hpp"
#include "admin/KeysCli.hpp"
#include "pipeline/VirtualKeySecret.hpp"

namespace sluice::admin {
namespace {
namespace key_ops_test {

namespace json = boost::json;

constexpr std::int64_t kNow = 1'767'225'600'000;  // 2026-01-01T00:00:00Z

json::object obj(std::string_view text) {
  return json::parse(text).as_object();
}

// The param of the FieldError that applying `body` throws ("" if none is thrown).
std::string refusedParam(std::string_view body, bool creating = false) {
  store::VirtualKey key;
  try {
    applyKeyFields(key, obj(body), creating, kNow);
  } catch (const FieldError& e) {
    EXPECT_FALSE(std::string(e.what()).empty());
    return e.param();
  }
  return "";
}

TEST(KeyOps, AllowedToolsLiveInTheSettings) {
  store::VirtualKey key;
  applyKeyFields(key, obj(R"({"name":"agent","allowed_tools":["github__*","files__read_file"]})"), true, kNow);
  EXPECT_EQ(json::parse(key.settings).at("allowed_tools"), json::parse(R"(["github__*","files__read_file"])"));
  EXPECT_EQ(keyJson(key, {}, kNow).at("allowed_tools"), json::parse(R"(["github__*","files__read_file"])"));
  applyKeyFields(key, obj(R"({"allowed_tools":null})"), false, kNow);
  EXPECT_FALSE(json::parse(key.settings).as_object().contains("allowed_tools"));
  EXPECT_EQ(keyJson(key, {}, kNow).at("allowed_tools"), json::array{});
  EXPECT_EQ(refusedParam(R"({"allowed_tools":"github__*"})"), "allowed_tools");
  EXPECT_EQ(refusedParam(R"({"allowed_tools":["ok",""]})"), "allowed_tools[1]");
}

TEST(KeyOps, AppliesEveryWritableField) {
  store::VirtualKey key;
  applyKeyFields(key, obj(R"({"name":"ci bot","allowed_models":["gpt-4o*","claude-3"],"allowed_channels":["a"],
    "rpm":60,"tpm":100000,"max_concurrent":4,"budget_daily_usd":1.5,"budget_monthly_usd":20,"budget_total_usd":0,
    "expires_at":"2026-12-31T00:00:00Z","metadata":{"team":"search"}})"),
                 true, kNow);
  EXPECT_EQ(key.name, "ci bot");
  EXPECT_EQ(key.allowed_models, R"(["gpt-4o*","claude-3"])");
  EXPECT_EQ(key.allowed_channels, R"(["a"])");
  EXPECT_EQ(key.rpm, 60);
  EXPECT_EQ(key.tpm, 100000);
  EXPECT_EQ(key.max_concurrent, 4);
  EXPECT_EQ(key.budget_daily_usd, 1.5);
  EXPECT_EQ(key.budget_monthly_usd, 20.0);
  EXPECT_EQ(key.budget_total_usd, 0.0);
  EXPECT_EQ(key.expires_at_ms, 1'798'675'200'000);
  EXPECT_EQ(key.metadata, R"({"team":"search"})");
}

TEST(KeyOps, NullRemovesALimitAndAbsentFieldsStay) {
  store::VirtualKey key;
  key.name = "k";
  key.rpm = 10;
  key.tpm = 20;
  key.budget_total_usd = 5;
  key.expires_at_ms = kNow + 1000;
  applyKeyFields(key, obj(R"({"rpm":null,"budget_total_usd":null,"expires_at_ms":null})"), false, kNow);
  EXPECT_EQ(key.rpm, std::nullopt);
  EXPECT_EQ(key.tpm, 20);
  EXPECT_EQ(key.budget_total_usd, std::nullopt);
  EXPECT_EQ(key.expires_at_ms, std::nullopt);
  EXPECT_EQ(key.name, "k");
}

TEST(KeyOps, RefusesEachBadFieldByName) {
  EXPECT_EQ(refusedParam(R"({})", true), "name");
  EXPECT_EQ(refusedParam(R"({"name":""})"), "name");
  EXPECT_EQ(refusedParam(R"({"name":7})"), "name");
  EXPECT_EQ(refusedParam(R"({"name":")" + std::string(129, 'x') + R"("})"), "name");
  EXPECT_EQ(refusedParam(R"({"name":"a\nb"})"), "name");
  EXPECT_EQ(refusedParam(R"({"allowed_models":"gpt-4o"})"), "allowed_models");
  EXPECT_EQ(refusedParam(R"({"allowed_models":["ok",""]})"), "allowed_models[1]");
  EXPECT_EQ(refusedParam(R"({"allowed_channels":[1]})"), "allowed_channels[0]");
  for (const char* limit : {"rpm", "tpm", "max_concurrent"}) {
    for (const char* bad : {"0", "-1", "1.5", "\"10\"", "true", "{}"}) {
      EXPECT_EQ(refusedParam(fmt::format(R"({{"{}":{}}})", limit, bad)), limit) << bad;
    }
  }
  for (const char* budget : {"budget_daily_usd", "budget_monthly_usd", "budget_total_usd"}) {
    for (const char* bad : {"-0.01", "\"5\"", "[]"}) {
      EXPECT_EQ(refusedParam(fmt::format(R"({{"{}":{}}})", budget, bad)), budget) << bad;
    }
  }
  EXPECT_EQ(refusedParam(R"({"expires_at":"tomorrow"})"), "expires_at");
  EXPECT_EQ(refusedParam(R"({"expires_at":"2020-01-01T00:00:00Z"})"), "expires_at");
  EXPECT_EQ(refusedParam(R"({"expires_at_ms":1000})"), "expires_at_ms");
  EXPECT_EQ(refusedParam(R"({"expires_at_ms":"soon"})"), "expires_at_ms");
  EXPECT_EQ(refusedParam(R"({"expires_at":"2027-01-01T00:00:00Z","expires_at_ms":1798675200000})"), "expires_at");
  EXPECT_EQ(refusedParam(R"({"metadata":[1]})"), "metadata");
  EXPECT_EQ(refusedParam(R"({"metadata":{"x":")" + std::string(17000, 'x') + R"("}})"), "metadata");
  EXPECT_EQ(refusedParam(R"({"colour":"red"})"), "colour");
  EXPECT_EQ(refusedParam(R"({"key_prefix":"sk-slc-x"})"), "key_prefix");
  EXPECT_EQ(refusedParam(R"({"status":"revoked"})"), "status");
}

TEST(KeyOps, MessagesSayWhatToFix) {
  store::VirtualKey key;
  try {
    applyKeyFields(key, obj(R"({"rpm":-3})"), false, kNow);
    FAIL();
  } catch (const FieldError& e) {
    EXPECT_STREQ(e.what(), "rpm must be a positive integer, or null to remove the limit; got -3");
  }
  try {
    applyKeyFields(key, obj(R"({"revoked_at_ms":1})"), false, kNow);
    FAIL();
  } catch (const FieldError& e) {
    EXPECT_TRUE(std::string(e.what()).starts_with("revoked_at_ms is read-only; writable fields: name,")) << e.what();
  }
}

TEST(KeyOps, IssuedSecretIsStoredOnlyAsHashAndPrefix) {
  store::VirtualKey key;
  const auto secret = issueKeySecret(key);
  EXPECT_TRUE(pipeline::looksLikeVirtualKey(secret));
  EXPECT_EQ(key.key_hash, pipeline::hashVirtualKeySecret(secret));
  EXPECT_EQ(key.key_prefix, secret.substr(0, 12));
}

TEST(KeyOps, JsonShapeAndStatus) {
  store::VirtualKey key;
  key.id = 7;
  key.name = "n";
  key.key_hash = "deadbeef";
  key.key_prefix = "sk-slc-abcde";
  key.rpm = 5;
  key.metadata = R"({"a":1})";
  const auto j = keyJson(key, store::KeySpend{0.5, 1.5, 9}, kNow);
  EXPECT_EQ(j.at("status"), "active");
  EXPECT_EQ(j.at("rpm"), 5);
  EXPECT_TRUE(j.at("tpm").is_null());
  EXPECT_TRUE(j.at("revoked_at_ms").is_null());
  EXPECT_EQ(j.at("allowed_models"), json::array{});
  EXPECT_EQ(j.at("metadata").at("a"), 1);
  EXPECT_EQ(j.at("spend").at("month_usd"), 1.5);
  EXPECT_EQ(json::serialize(j).find("deadbeef"), std::string::npos) << "the hash is never shown";
  for (const char* field :
       {"id", "name", "key_prefix", "allowed_models", "allowed_channels", "rpm", "tpm", "max_concurrent",
        "budget_daily_usd", "budget_monthly_usd", "budget_total_usd", "expires_at_ms", "revoked_at_ms", "metadata",
        "status", "created_at_ms", "updated_at_ms", "spend"})
    EXPECT_TRUE(j.contains(field)) << field;

  key.expires_at_ms = kNow;
  EXPECT_EQ(keyStatus(key, kNow), KeyStatus::Expired);
  key.revoked_at_ms = kNow - 1;
  EXPECT_EQ(keyStatus(key, kNow), KeyStatus::Revoked);
}

TEST(KeyOps, UtcDayAndMonthStarts) {
  const std::int64_t t = 1'772'368'496'789;  // 2026-03-01T12:34:56.789Z
  EXPECT_EQ(formatRfc3339(utcDayStartMs(t)), "2026-03-01T00:00:00Z");
  EXPECT_EQ(formatRfc3339(utcMonthStartMs(t)), "2026-03-01T00:00:00Z");
  EXPECT_EQ(formatRfc3339(utcMonthStartMs(t - 86'400'000)), "2026-02-01T00:00:00Z");
  EXPECT_EQ(utcDayStartMs(0), 0);
}

TEST(KeyOps, Rfc3339) {
  EXPECT_EQ(parseRfc3339("2026-12-31T00:00:00Z"), 1'798'675'200'000);
  EXPECT_EQ(parseRfc3339("2026-12-31"), 1'798'675'200'000);
  EXPECT_EQ(parseRfc3339("2026-12-31t02:00:00.5+02:00"), 1'798'675'200'500);
  EXPECT_EQ(parseRfc3339("2026-12-30T19:00:00-05:00"), 1'798'675'200'000);
  EXPECT_EQ(parseRfc3339("2024-02-29T00:00:00Z"), 1'709'164'800'000);
  for (const char* bad :
       {"", "2026-13-01T00:00:00Z", "2025-02-29T00:00:00Z", "2026-12-31T24:00:00Z", "2026-12-31T00:00:00",
        "2026-12-31T00:00Z", "31/12/2026", "2026-12-31T00:00:00Zjunk", "2026-12-31T00:00:00.Z"})
    EXPECT_EQ(parseRfc3339(bad), std::nullopt) << bad;
  EXPECT_EQ(formatRfc3339(1'798'675'200'999), "2026-12-31T00:00:00Z");
}

TEST(KeysCliFlags, BecomeTheApiBody) {
  const auto body = keyFlagsToJson({{"name", "bot"},
                                    {"models", "gpt-4o*, claude-3"},
                                    {"channels", ""},
                                    {"tools", "github__*, files__read_file"},
                                    {"rpm", "60"},
                                    {"tpm", "none"},
                                    {"budget-daily", "2.5"},
                                    {"expires-in", "30d"},
                                    {"metadata", R"({"team":"x"})"}},
                                   kNow);
  EXPECT_EQ(json::serialize(body),
            R"({"name":"bot","allowed_models":["gpt-4o*","claude-3"],"allowed_channels":[],)"
            R"("allowed_tools":["github__*","files__read_file"],"rpm":60,"tpm":null,)"
            R"("budget_daily_usd":2.5E0,"expires_at_ms":1769817600000,"metadata":{"team":"x"}})");
}

TEST(KeysCliFlags, RefuseWhatTheApiRefusesInTheSameWords) {
  // A CLI value that is not a number reaches KeyOps as text, so the message is the API's.
  store::VirtualKey key;
  std::string cli, api;
  try {
    applyKeyFields(key, keyFlagsToJson({{"rpm", "lots"}}, kNow), false, kNow);
  } catch (const FieldError& e) {
    cli = e.what();
  }
  try {
    applyKeyFields(key, obj(R"({"rpm":"lots"})"), false, kNow);
  } catch (const FieldError& e) {
    api = e.what();
  }
  EXPECT_FALSE(cli.empty());
  EXPECT_EQ(cli, api);
  EXPECT_THROW(keyFlagsToJson({{"expires-in", "soon"}}, kNow), FieldError);
  EXPECT_THROW(keyFlagsToJson({{"expires", "2027-01-01"}, {"expires-in", "1d"}}, kNow), FieldError);
  EXPECT_THROW(keyFlagsToJson({{"metadata", "{not json"}}, kNow), FieldError);
}

}  // namespace key_ops_test
}  // namespace
}  // namespace sluice::admin
