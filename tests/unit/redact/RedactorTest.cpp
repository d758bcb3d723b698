// Redactor: mask, encrypt, block; the round trip through the Restorer; fields.
#include <gtest/gtest.h>

#include <string>

#include "redact/Redactor.hpp"
#include "redact/Restorer.hpp"
#include "redact/TokenCipher.hpp"

namespace sluice::redact {
namespace {
namespace redactor_test {

const std::string kKey = "0123456789abcdef0123456789abcdef";

TEST(Redactor, EncryptsAndTheRestorerPutsValuesBack) {
  const TokenCipher cipher(kKey, "vk_1");
  const Redactor r(RuleSet::compile(builtinRules()), &cipher);
  const std::string text = "I am jane@example.com, card 4111 1111 1111 1111, IBAN DE89 3704 0044 0532 0130 00.";
  std::string out;
  const auto res = r.redact(text, kUser, out);
  ASSERT_TRUE(res.changed);
  EXPECT_EQ(res.blocked, nullptr);
  EXPECT_EQ(res.matches.size(), 3u);
  EXPECT_EQ(res.encrypted, 3u);
  EXPECT_EQ(out.find("jane@"), std::string::npos) << out;
  EXPECT_EQ(out.find("4111"), std::string::npos) << out;
  EXPECT_NE(out.find("[[sluice:EMAIL:"), std::string::npos) << out;
  EXPECT_NE(out.find("[[sluice:CREDIT_CARD:"), std::string::npos) << out;
  EXPECT_EQ(restoreAll(out, cipher), text);
  // The same value gives the same token (the model can tell mentions apart) ...
  std::string again;
  r.redact("jane@example.com wrote", kUser, again);
  EXPECT_EQ(again.substr(0, again.find(' ')), out.substr(5, again.find(' ')));
  // ... and redacting an already redacted text changes nothing.
  std::string twice;
  EXPECT_FALSE(r.redact(out, kUser, twice).changed);
}

TEST(Redactor, RemembersEverySealedTokenInTheRequestsMemo) {
  const TokenCipher cipher(kKey, "vk_1");
  SealMemo memo;
  const Redactor r(RuleSet::compile(builtinRules()), &cipher, &memo);
  std::string out;
  const auto res = r.redact("mail jane@example.com, call +1 415 555 0100, card 4111 1111 1111 1111", kUser, out);
  ASSERT_TRUE(res.changed);
  EXPECT_EQ(memo.size(), res.encrypted);
  const auto mail = cipher.seal("EMAIL", "jane@example.com");
  ASSERT_TRUE(memo.find(*mail));
  EXPECT_EQ(*memo.find(*mail), "jane@example.com");
  EXPECT_NE(out.find(*mail), std::string::npos);
}

TEST(Redactor, NoHitLeavesOutputAlone) {
  const Redactor r(RuleSet::compile(builtinRules()), nullptr);
  std::string out = "untouched";
  const auto res = r.redact("Just a normal question about C++ std::map and version 1.2.3.", kUser, out);
  EXPECT_FALSE(res.changed);
  EXPECT_TRUE(res.matches.empty());
  EXPECT_EQ(out, "untouched");
}

TEST(Redactor, MaskAndMissingCipher) {
  const auto rules = RuleSet::compile(
      {{"EMAIL", R"(\S+@\S+)", Action::Mask, {}, ""}, {"ACCOUNT", R"(ACCT-\d{6})", Action::Encrypt, {}, ""}});
  const Redactor noKey(rules, nullptr);
  std::string out;
  const auto res = noKey.redact("a@b.c and ACCT-123456", kUser, out);
  EXPECT_EQ(out, "[REDACTED:EMAIL] and [REDACTED:ACCOUNT]");
  EXPECT_EQ(res.masked, 2u);
  EXPECT_EQ(res.encrypted, 0u);
}

TEST(Redactor, BlockNamesTheRuleAndLeavesTextAlone) {
  const Redactor r(RuleSet::compile(builtinRules()), nullptr);
  std::string out = "untouched";
  const auto res = r.redact("mail a@b.io\n-----BEGIN PRIVATE KEY-----\nMIIE\n-----END PRIVATE KEY-----", kUser, out);
  ASSERT_NE(res.blocked, nullptr);
  EXPECT_EQ(res.blocked->name, "PRIVATE_KEY");
  EXPECT_FALSE(res.changed);
  EXPECT_EQ(out, "untouched");
  EXPECT_EQ(res.matches.size(), 2u);
}

TEST(Redactor, RulesApplyOnlyToTheirFields) {
  const auto rules = RuleSet::compile({{"EMAIL", R"(\S+@\S+)", Action::Mask, {"user"}, ""}});
  const Redactor r(rules, nullptr);
  std::string out;
  EXPECT_FALSE(r.redact("a@b.c", kSystem, out).changed);
  EXPECT_TRUE(r.redact("a@b.c", kUser, out).changed);
}

}  // namespace redactor_test
}  // namespace
}  // namespace sluice::redact
