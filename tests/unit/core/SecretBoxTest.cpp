#include "core/SecretBox.hpp"

#include <gtest/gtest.h>
#include <openssl/evp.h>

#include <set>

namespace sluice {
namespace {
namespace secret_box_test {

constexpr std::string_view kPass = "correct horse battery staple 0123456789";

// Decodes the base64 after "v1:", changes one byte, encodes again: tampering that keeps the
// value well-formed, so only the authentication tag can catch it.
std::string flipRawByte(const std::string& sealed, std::size_t index) {
  const std::string b64 = sealed.substr(3);
  std::string raw(b64.size(), '\0');
  int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(raw.data()),
                          reinterpret_cast<const unsigned char*>(b64.data()), static_cast<int>(b64.size()));
  std::size_t pad = (b64.ends_with("==") ? 2 : b64.ends_with("=") ? 1 : 0);
  raw.resize(static_cast<std::size_t>(n) - pad);
  raw[index % raw.size()] ^= 0x01;
  std::string out(4 * ((raw.size() + 2) / 3) + 1, '\0');
  n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()), reinterpret_cast<const unsigned char*>(raw.data()),
                      static_cast<int>(raw.size()));
  out.resize(static_cast<std::size_t>(n));
  return "v1:" + out;
}

TEST(SecretBox, RoundTrips) {
  SecretBox box(kPass);
  for (std::string_view plain : {std::string_view("sk-proj-abcdefghijklmnopqrstuvwxyz0123456789"), std::string_view(""),
                                 std::string_view("k\0y with a NUL", 14)}) {
    const auto sealed = box.seal(plain);
    EXPECT_TRUE(sealed.starts_with("v1:"));
    EXPECT_EQ(sealed.find(plain.empty() ? "\x01" : plain), std::string::npos) << "plaintext visible in the sealed form";
    const auto opened = box.open(sealed);
    ASSERT_TRUE(opened.has_value());
    EXPECT_EQ(*opened, plain);
  }
}

TEST(SecretBox, AnotherInstanceWithTheSamePassphraseOpensIt) {
  const auto sealed = SecretBox(kPass).seal("sk-live-123456");
  EXPECT_EQ(SecretBox(kPass).open(sealed), "sk-live-123456");
}

TEST(SecretBox, EverySealUsesAFreshNonce) {
  SecretBox box(kPass);
  std::set<std::string> seen;
  std::set<std::string> nonces;
  for (int i = 0; i < 50; ++i) {
    const auto sealed = box.seal("the same secret");
    seen.insert(sealed);
    nonces.insert(sealed.substr(3, 16));  // the first 12 raw bytes are the nonce: 16 base64 chars
  }
  EXPECT_EQ(seen.size(), 50u);
  EXPECT_EQ(nonces.size(), 50u);
}

TEST(SecretBox, WrongPassphraseDoesNotOpen) {
  const auto sealed = SecretBox(kPass).seal("sk-live-123456");
  EXPECT_EQ(SecretBox("another passphrase entirely").open(sealed), std::nullopt);
}

TEST(SecretBox, AnyTamperedByteIsRefused) {
  SecretBox box(kPass);
  const auto sealed = box.seal("sk-live-1234567890");
  const std::size_t raw_size = 12 + 18 + 16;
  for (std::size_t i = 0; i < raw_size; ++i) {
    EXPECT_EQ(box.open(flipRawByte(sealed, i)), std::nullopt) << "byte " << i;
  }
}

TEST(SecretBox, TruncatedOrMalformedInputIsRefused) {
  SecretBox box(kPass);
  const auto sealed = box.seal("sk-live-1234567890");
  for (std::size_t len = 0; len < sealed.size(); ++len) {
    EXPECT_EQ(box.open(sealed.substr(0, len)), std::nullopt) << "length " << len;
  }
  EXPECT_EQ(box.open("sk-live-1234567890"), std::nullopt);  // a plaintext key, never sealed
  EXPECT_EQ(box.open("v2:" + sealed.substr(3)), std::nullopt);
  EXPECT_EQ(box.open("v1:!!!!" + sealed.substr(7)), std::nullopt);
  EXPECT_EQ(box.open("v1:" + sealed.substr(3) + "AAAA"), std::nullopt);
  EXPECT_EQ(box.open("v1:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"), std::nullopt);  // 24 bytes: less than nonce + tag
}

TEST(SecretBox, EmptyPassphraseIsRefused) {
  EXPECT_THROW(SecretBox(""), std::invalid_argument);
}

}  // namespace secret_box_test
}  // namespace
}  // namespace sluice
