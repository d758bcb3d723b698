// Tokens: syntax, round trip, determinism within a scope, difference across scopes and keys,
// tampering detected.
#include <gtest/gtest.h>
#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/kdf.h>
#include <openssl/params.h>

#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "redact/Base64Url.hpp"
#include "redact/TokenCipher.hpp"

namespace sluice::redact {
namespace {
namespace token_cipher_test {

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

// The reference: HKDF-SHA256 (RFC 5869) of the key material with the salt and the scope as info,
// then OpenSSL's own AES-256-SIV cipher with the label as associated data. TokenCipher builds SIV
// from CMAC and CTR itself; its tokens must be these bytes exactly (tokens already in logs and
// caches keep opening, and the construction is the standard one).
std::string referencePayload(std::string_view keyMaterial, std::string_view scope, std::string_view label,
                             std::string_view value) {
  unsigned char key[64];
  EVP_KDF* kdf = EVP_KDF_fetch(nullptr, "HKDF", nullptr);
  EVP_KDF_CTX* kctx = EVP_KDF_CTX_new(kdf);
  char digest[] = "SHA256";
  std::string salt = "sluice/redact/token/v1", ikm(keyMaterial), info(scope);
  const OSSL_PARAM params[] = {
      OSSL_PARAM_construct_utf8_string(OSSL_KDF_PARAM_DIGEST, digest, 0),
      OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_KEY, ikm.data(), ikm.size()),
      OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_SALT, salt.data(), salt.size()),
      OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_INFO, info.data(), info.size()),
      OSSL_PARAM_construct_end()};
  EXPECT_EQ(EVP_KDF_derive(kctx, key, sizeof key, params), 1);
  EVP_KDF_CTX_free(kctx);
  EVP_KDF_free(kdf);

  EVP_CIPHER* siv = EVP_CIPHER_fetch(nullptr, "AES-256-SIV", nullptr);
  EVP_CIPHER_CTX* ctx = EVP_CIPHER_CTX_new();
  std::vector<unsigned char> out(16 + value.size());
  int n = 0;
  EXPECT_EQ(EVP_EncryptInit_ex2(ctx, siv, key, nullptr, nullptr), 1);
  EXPECT_EQ(EVP_EncryptUpdate(ctx, nullptr, &n, reinterpret_cast<const unsigned char*>(label.data()),
                              static_cast<int>(label.size())),
            1);
  EXPECT_EQ(EVP_EncryptUpdate(ctx, out.data() + 16, &n, reinterpret_cast<const unsigned char*>(value.data()),
                              static_cast<int>(value.size())),
            1);
  EXPECT_EQ(EVP_EncryptFinal_ex(ctx, out.data() + 16 + n, &n), 1);
  EXPECT_EQ(EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_GET_TAG, 16, out.data()), 1);
  EVP_CIPHER_CTX_free(ctx);
  EVP_CIPHER_free(siv);
  std::string b64;
  detail::appendB64Url(b64, out.data(), out.size());
  return b64;
}

TEST(TokenCipher, SameBytesAsOpenSslAesSiv) {
  std::mt19937 rng(20261130);
  const TokenCipher c(kKey, "vk:42");
  // Every length around the block size twice over, then long ones; one cipher, in turn, so a
  // reused context must start clean for each token.
  std::vector<std::size_t> lengths;
  for (std::size_t n = 1; n <= 70; ++n) lengths.push_back(n);
  for (std::size_t n : {std::size_t{127}, std::size_t{128}, std::size_t{129}, std::size_t{1000}, kMaxSealedValue})
    lengths.push_back(n);
  const char* labels[] = {"EMAIL", "PHONE", "X", "A_VERY_LONG_RULE_NAME_0123456789"};
  std::size_t k = 0;
  for (std::size_t n : lengths) {
    std::string value(n, '\0');
    for (auto& ch : value) ch = static_cast<char>(rng());
    const std::string label = labels[k++ % 4];
    const auto tok = c.seal(label, value);
    ASSERT_TRUE(tok) << n;
    const auto syn = parseToken(*tok);
    ASSERT_EQ(syn.state, TokenSyntax::Complete);
    EXPECT_EQ(syn.payload, referencePayload(kKey, "vk:42", label, value)) << "length " << n;
    EXPECT_EQ(c.open(*tok), value) << n;
  }
}

// Many keys and labels over the short lengths: both doublings of S2V see a carry (and not) often.
TEST(TokenCipher, SameBytesAsOpenSslAesSivAcrossScopes) {
  for (int sc = 0; sc < 16; ++sc) {
    const std::string scope = "scope-" + std::to_string(sc);
    const TokenCipher c(kKey, scope);
    for (std::size_t n = 1; n <= 17; ++n)
      for (const char* label : {"EMAIL", "PHONE", "IBAN", "k"}) {
        const std::string value(n, static_cast<char>('a' + sc));
        const auto tok = c.seal(label, value);
        ASSERT_TRUE(tok);
        EXPECT_EQ(parseToken(*tok).payload, referencePayload(kKey, scope, label, value)) << scope << " " << n;
      }
  }
}

TEST(TokenCipher, ConcurrentSealAndOpen) {
  const TokenCipher c(kKey, "shared");
  std::vector<std::string> values, tokens;
  for (int i = 0; i < 64; ++i) {
    values.push_back("user" + std::to_string(i) + "@example.com" + std::string(static_cast<std::size_t>(i), 'x'));
    tokens.push_back(*c.seal("EMAIL", values.back()));
  }
  std::vector<std::thread> threads;
  std::vector<int> bad(4, 0);
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (int round = 0; round < 200; ++round)
        for (std::size_t i = 0; i < values.size(); ++i) {
          if (c.seal("EMAIL", values[i]) != tokens[i]) ++bad[t];
          if (c.open(tokens[(i + static_cast<std::size_t>(t)) % tokens.size()]) !=
              values[(i + static_cast<std::size_t>(t)) % values.size()])
            ++bad[t];
        }
    });
  for (auto& th : threads) th.join();
  for (int t = 0; t < 4; ++t) EXPECT_EQ(bad[t], 0) << t;
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

}  // namespace token_cipher_test
}  // namespace
}  // namespace sluice::redact
