// Tokens: syntax, round trip, determinism within a scope, difference across scopes and keys,
// tampering detected.
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

#include "redact/TokenCipher.hpp"

namespace sluice::redact {
namespace {

const std::string kKey = "0123456789abcdef0123456789abcdef";

TEST(TokenCipher, RoundTripAndFormat) {
  const TokenCipher c(kKey, "vk_1");
  const auto tok = c.seal("EMAIL", "jane@example.com");
  ASSERT_TRUE(tok);
  EXPECT_TRUE(tok->starts_with("[[sluice:EMAIL:")) << *tok;
  EXPECT_TRUE(tok->ends_with("]]"));
  // 16-byte SIV tag + 16 bytes of value = 32 bytes = 43 base64url characters.
  EXPECT_EQ(tok->size(), std::string("[[sluice:EMAIL:]]").size() + 43) << *tok;
  EXPECT_EQ(tok->find_first_of("\"\\/<>&' \n"), std::string::npos) << "JSON- and HTML-safe";
  EXPECT_EQ(c.open(*tok), "jane@example.com");
  // Binary and multi-line values survive.
  const std::string pem = "-----BEGIN X-----\n\x01\xff\"\\\n-----END X-----";
  EXPECT_EQ(c.open(*c.seal("PRIVATE_KEY", pem)), pem);
}

TEST(TokenCipher, DeterministicWithinScopeDistinctAcross) {
  const TokenCipher a(kKey, "vk_1"), a2(kKey, "vk_1"), b(kKey, "vk_2"), other("another key material 123", "vk_1");
  EXPECT_EQ(a.seal("EMAIL", "x@y.io"), a2.seal("EMAIL", "x@y.io"));
  EXPECT_NE(a.seal("EMAIL", "x@y.io"), a.seal("EMAIL", "z@y.io"));
  EXPECT_NE(a.seal("EMAIL", "x@y.io"), b.seal("EMAIL", "x@y.io"));
  EXPECT_NE(a.seal("EMAIL", "x@y.io"), other.seal("EMAIL", "x@y.io"));
  EXPECT_FALSE(b.open(*a.seal("EMAIL", "x@y.io")));
  EXPECT_FALSE(other.open(*a.seal("EMAIL", "x@y.io")));
}

TEST(TokenCipher, TamperingIsDetected) {
  const TokenCipher c(kKey, "s");
  const std::string tok = *c.seal("PHONE", "+1 415 555 0100");
  const std::size_t payload = std::string("[[sluice:PHONE:").size();
  for (std::size_t i = payload; i + 2 < tok.size(); ++i) {
    std::string t = tok;
    t[i] = t[i] == 'A' ? 'B' : 'A';
    EXPECT_FALSE(c.open(t)) << i;
  }
  std::string relabelled = tok;
  relabelled.replace(9, 5, "EMAIL");
  EXPECT_FALSE(c.open(relabelled));
  EXPECT_FALSE(c.open(tok.substr(0, tok.size() - 4) + "]]"));  // truncated
  EXPECT_TRUE(c.open(tok));
}

TEST(TokenCipher, Limits) {
  EXPECT_THROW(TokenCipher("short", "s"), std::invalid_argument);
  const TokenCipher c(kKey, "");
  EXPECT_FALSE(c.seal("EMAIL", ""));
  EXPECT_FALSE(c.seal("bad label", "x"));
  EXPECT_FALSE(c.seal("X", std::string(kMaxSealedValue + 1, 'a')));
  const auto big = c.seal("X", std::string(kMaxSealedValue, 'a'));
  ASSERT_TRUE(big);
  EXPECT_LE(big->size(), kMaxTokenLen);
  EXPECT_EQ(parseToken(*big).state, TokenSyntax::Complete);
}

TEST(TokenSyntax, PrefixesPartialsAndNonTokens) {
  const std::string tok = "[[sluice:EMAIL:abcDEF-_09]]";
  for (std::size_t n = 1; n < tok.size(); ++n) EXPECT_EQ(parseToken(tok.substr(0, n)).state, TokenSyntax::Partial) << n;
  const std::string withTail = tok + " tail";
  const auto full = parseToken(withTail);
  EXPECT_EQ(full.state, TokenSyntax::Complete);
  EXPECT_EQ(full.length, tok.size());
  EXPECT_EQ(full.label, "EMAIL");
  EXPECT_EQ(full.payload, "abcDEF-_09");
  for (const char* no : {"[x", "[[sluicE:", "[[sluice:1A:abc]]", "[[sluice:EMAIL:]]", "[[sluice:EMAIL:ab c]]",
                         "[[sluice:EMAIL:abc]x", "[[sluice:EMAIL]]", "[REDACTED:EMAIL]"})
    EXPECT_EQ(parseToken(no).state, TokenSyntax::NoMatch) << no;
  EXPECT_EQ(parseToken("[[sluice:" + std::string(33, 'A')).state, TokenSyntax::NoMatch);
}

}  // namespace
}  // namespace sluice::redact
