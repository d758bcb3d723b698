// Every built-in rule on positive and negative samples, checksums included; RuleSet::compile
// refusing bad specs by name.
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "redact/Rules.hpp"

namespace sluice::redact {
namespace {
namespace rules_test {

const RuleSet& builtin() {
  static const auto rs = RuleSet::compile(builtinRules());
  return *rs;
}

// "RULE:value" for every hit, in order.
std::vector<std::string> hits(std::string_view text) {
  std::vector<std::string> out;
  for (const auto& m : builtin().scan(text))
    out.push_back(builtin().rules()[m.rule].name + ":" + std::string(text.substr(m.start, m.end - m.start)));
  return out;
}

using V = std::vector<std::string>;

TEST(Checksums, Luhn) {
  EXPECT_TRUE(luhnValid("4111111111111111"));
  EXPECT_TRUE(luhnValid("79927398713"));
  EXPECT_FALSE(luhnValid("4111111111111112"));
  EXPECT_FALSE(luhnValid(""));
  EXPECT_FALSE(luhnValid("4111-1111"));
}

TEST(Checksums, IbanMod97) {
  EXPECT_TRUE(ibanValid("DE89370400440532013000"));
  EXPECT_TRUE(ibanValid("GB82WEST12345698765432"));
  EXPECT_FALSE(ibanValid("DE89370400440532013001"));
  EXPECT_FALSE(ibanValid("GB83WEST12345698765432"));
  EXPECT_FALSE(ibanValid("89DE370400440532013000"));
}

TEST(BuiltinRules, Email) {
  EXPECT_EQ(hits("write to jane.doe+work@mail.example.co.uk today"), V{"EMAIL:jane.doe+work@mail.example.co.uk"});
  EXPECT_EQ(hits("A.B@x-y.io."), V{"EMAIL:A.B@x-y.io"});
  EXPECT_EQ(hits("@handle and user@localhost and a@b"), V{});
}

TEST(BuiltinRules, CreditCard) {
  EXPECT_EQ(hits("card 4111 1111 1111 1111."), V{"CREDIT_CARD:4111 1111 1111 1111"});
  EXPECT_EQ(hits("card 4111-1111-1111-1111"), V{"CREDIT_CARD:4111-1111-1111-1111"});
  EXPECT_EQ(hits("amex 3782-822463-10005"), V{"CREDIT_CARD:3782-822463-10005"});
  EXPECT_EQ(hits("n=5555555555554444;"), V{"CREDIT_CARD:5555555555554444"});
  // Luhn-invalid 16 digits, mixed separators, all zeros, no issuer: not cards.
  EXPECT_EQ(hits("moved to 4127 0359 2148 1823."), V{});
  EXPECT_EQ(hits("4111111111111112"), V{});
  EXPECT_EQ(hits("4111-1111 1111-1111"), V{});
  EXPECT_EQ(hits("0000 0000 0000 0000"), V{});
  EXPECT_EQ(hits("9111111111111111"), V{});
}

TEST(BuiltinRules, Iban) {
  EXPECT_EQ(hits("IBAN DE89 3704 0044 0532 0130 00 please"), V{"IBAN:DE89 3704 0044 0532 0130 00"});
  EXPECT_EQ(hits("to GB82WEST12345698765432."), V{"IBAN:GB82WEST12345698765432"});
  EXPECT_EQ(hits("lower gb82west12345698765432"), V{"IBAN:gb82west12345698765432"});
  // The country's length decides the end, even before a word the regex swallowed.
  EXPECT_EQ(hits("DE89 3704 0044 0532 0130 00 and more"), V{"IBAN:DE89 3704 0044 0532 0130 00"});
  EXPECT_EQ(hits("GB84MKTA68308341794138"), V{});   // wrong check digits
  EXPECT_EQ(hits("XX82WEST12345698765432"), V{});   // no such country
  EXPECT_EQ(hits("GB82WEST123456987654321"), V{});  // too long for GB
}

TEST(BuiltinRules, UsSsn) {
  EXPECT_EQ(hits("SSN: 123-45-6789"), V{"US_SSN:123-45-6789"});
  EXPECT_EQ(hits("ssn 123 45 6789"), V{"US_SSN:123 45 6789"});
  for (const char* bad : {"000-12-3456", "666-12-3456", "912-34-5678", "123-00-4567", "123-45-0000", "123-45 6789"})
    EXPECT_EQ(hits(bad), V{}) << bad;
}

TEST(BuiltinRules, IpAddresses) {
  EXPECT_EQ(hits("from 192.168.1.20, then"), V{"IPV4:192.168.1.20"});
  EXPECT_EQ(hits("256.1.1.1 1.2.3 01.2.3.4 1.2.3.4.5 v10.7.72"), V{});
  EXPECT_EQ(hits("host 2001:db8::8a2e:370:7334 up"), V{"IPV6:2001:db8::8a2e:370:7334"});
  EXPECT_EQ(hits("fe80::1ff:fe23:4567:890a"), V{"IPV6:fe80::1ff:fe23:4567:890a"});
  EXPECT_EQ(hits("2001:0db8:85a3:0000:0000:8a2e:0370:7334"), V{"IPV6:2001:0db8:85a3:0000:0000:8a2e:0370:7334"});
  EXPECT_EQ(hits("lo ::1, mapped ::FFFF:10.0.0.1 and fe80::"), (V{"IPV6:::1", "IPV6:::FFFF:10.0.0.1", "IPV6:fe80::"}));
  EXPECT_EQ(hits("std::string a; Foo::bar(); at 12:30:45; mac 00:1a:2b:3c:4d:5e"), V{});
}

TEST(BuiltinRules, Phone) {
  EXPECT_EQ(hits("call +1 415 555 0100 now"), V{"PHONE:+1 415 555 0100"});
  EXPECT_EQ(hits("call (415) 555-0100"), V{"PHONE:(415) 555-0100"});
  EXPECT_EQ(hits("call 415.555.0100x42"), V{"PHONE:415.555.0100x42"});
  EXPECT_EQ(hits("ruf 030 1234567 an"), V{"PHONE:030 1234567"});
  EXPECT_EQ(hits("+41 (0)96 471 07 95"), V{"PHONE:+41 (0)96 471 07 95"});
  EXPECT_EQ(hits("tel 01.84.17.61.18"), V{"PHONE:01.84.17.61.18"});
  EXPECT_EQ(hits("tel 01 84 17 61 18"), V{"PHONE:01 84 17 61 18"});
  // Dates, year lists, versions, money and parts of longer numbers are not phones.
  for (const char* no : {"on 2020-06-05", "on 05-06-2020", "in 1999 2004 2010", "v1.27.76", "$872,710.62", "#732267870",
                         "ISBN 978-1-409-60639-9"})
    EXPECT_EQ(hits(no), V{}) << no;
}

TEST(BuiltinRules, ApiKeys) {
  const std::string openai = "sk-proj-" + std::string(40, 'a') + "Z9";
  const std::string anthropic = "sk-ant-api03-" + std::string(90, 'b') + "AA";
  EXPECT_EQ(hits("key=" + openai), V{"OPENAI_KEY:" + openai});
  EXPECT_EQ(hits("key=" + anthropic), V{"ANTHROPIC_KEY:" + anthropic});
  EXPECT_EQ(hits("AKIAIOSFODNN7EXAMPLE"), V{"AWS_ACCESS_KEY:AKIAIOSFODNN7EXAMPLE"});
  EXPECT_EQ(hits("ghp_" + std::string(36, 'x')), V{"GITHUB_TOKEN:ghp_" + std::string(36, 'x')});
  EXPECT_EQ(hits("AIza" + std::string(35, 'Q')), V{"GOOGLE_API_KEY:AIza" + std::string(35, 'Q')});
  EXPECT_EQ(hits("sk-short and AKIA123 and task-ant-foo"), V{});
}

TEST(BuiltinRules, JwtAndPrivateKey) {
  // {"alg":"HS256","typ":"JWT"} . {"sub":"1"} . sig
  const std::string jwt = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxIn0.c2lnbmF0dXJlLXNpZ25hdHVyZQ";
  EXPECT_EQ(hits("Bearer " + jwt), V{"JWT:" + jwt});
  EXPECT_EQ(hits("eyJub3QiOiJqd3QifQ.eyJzdWIiOiIxIn0.abc"), V{});  // header without "alg"
  const std::string pem = "-----BEGIN RSA PRIVATE KEY-----\nMIIEow\nIBAAK\n-----END RSA PRIVATE KEY-----";
  EXPECT_EQ(hits("key:\n" + pem + "\n"), V{"PRIVATE_KEY:" + pem});
  EXPECT_EQ(hits("-----BEGIN PUBLIC KEY-----\nMIIB\n-----END PUBLIC KEY-----"), V{});
  EXPECT_EQ(builtin().find("PRIVATE_KEY")->action, Action::Block);
}

TEST(RuleSet, OverlapsKeepLeftmostLongestAndSkipTokens) {
  // The card wins over any shorter number inside it; a token already in the text is left alone.
  const std::string text = "4111 1111 1111 1111 [[sluice:EMAIL:AKIAIOSFODNN7EXAMPLEabc]] a@b.io";
  EXPECT_EQ(hits(text), (V{"CREDIT_CARD:4111 1111 1111 1111", "EMAIL:a@b.io"}));
}

TEST(RuleSet, FieldsLimitWhereARuleApplies) {
  const auto rs = RuleSet::compile({{"SECRET", "s3cr3t", Action::Mask, {"user", "tool"}, ""}});
  EXPECT_EQ(rs->scan("a s3cr3t", kUser).size(), 1u);
  EXPECT_EQ(rs->scan("a s3cr3t", kTool).size(), 1u);
  EXPECT_EQ(rs->scan("a s3cr3t", kSystem).size(), 0u);
  EXPECT_EQ(rs->scan("a s3cr3t", kToolArguments).size(), 0u);
}

TEST(RuleSet, CompileRejectsBadSpecsByName) {
  auto err = [](std::vector<RuleSpec> specs) {
    try {
      RuleSet::compile(specs);
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  {
    const auto e = err({{"BAD_RE", "(unclosed", Action::Mask, {}, ""}});
    EXPECT_NE(e.find("'BAD_RE'"), std::string::npos) << e;
    EXPECT_NE(e.find("missing )"), std::string::npos) << e;
  }
  EXPECT_NE(err({{"EMPTY", "a*", Action::Mask, {}, ""}}).find("empty string"), std::string::npos);
  EXPECT_NE(err({{"X", "x", Action::Mask, {"headers"}, ""}}).find("unknown field 'headers'"), std::string::npos);
  EXPECT_NE(err({{"X", "x", Action::Mask, {}, "crc32"}}).find("unknown validator 'crc32'"), std::string::npos);
  EXPECT_NE(err({{"bad name", "x", Action::Mask, {}, ""}}).find("name must be"), std::string::npos);
  EXPECT_NE(err({{"X", "x", Action::Mask, {}, ""}, {"X", "y", Action::Mask, {}, ""}}).find("defined twice"),
            std::string::npos);
  EXPECT_NO_THROW(RuleSet::compile(builtinRules()));
  EXPECT_EQ(parseAction("encrypt"), Action::Encrypt);
  EXPECT_FALSE(parseAction("drop"));
}

TEST(RuleSet, LargeInputStaysLinear) {
  // Pathological for a backtracking engine; RE2 and the validators stay linear.
  std::string text(200000, '1');
  for (std::size_t i = 4; i < text.size(); i += 5) text[i] = ' ';
  text += std::string(100000, ':') + std::string(50000, 'a') + "@";
  EXPECT_NO_THROW(builtin().scan(text));
}

}  // namespace rules_test
}  // namespace
}  // namespace sluice::redact
