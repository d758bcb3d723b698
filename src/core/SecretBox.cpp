#include "core/SecretBox.hpp"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/kdf.h>
#include <openssl/params.h>
#include <openssl/rand.h>

#include <memory>
#include <stdexcept>

namespace sluice {
namespace {

constexpr std::string_view kVersion = "v1:";
constexpr std::size_t kNonceBytes = 12;
constexpr std::size_t kTagBytes = 16;

struct CipherCtxFree {
  void operator()(EVP_CIPHER_CTX* c) const { EVP_CIPHER_CTX_free(c); }
};
using CipherCtx = std::unique_ptr<EVP_CIPHER_CTX, CipherCtxFree>;

struct KdfFree {
  void operator()(EVP_KDF* k) const { EVP_KDF_free(k); }
  void operator()(EVP_KDF_CTX* c) const { EVP_KDF_CTX_free(c); }
};

const unsigned char* bytes(std::string_view s) {
  return reinterpret_cast<const unsigned char*>(s.data());
}

std::string base64(std::string_view raw) {
  std::string out(4 * ((raw.size() + 2) / 3) + 1, '\0');  // + the NUL EVP_EncodeBlock writes
  const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()), bytes(raw), static_cast<int>(raw.size()));
  out.resize(static_cast<std::size_t>(n));
  return out;
}

std::optional<std::string> unbase64(std::string_view text) {
  if (text.empty() || text.size() % 4 != 0) return std::nullopt;
  std::string out(text.size() / 4 * 3, '\0');
  const int n =
      EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()), bytes(text), static_cast<int>(text.size()));
  if (n < 0) return std::nullopt;
  // EVP_DecodeBlock counts '=' padding as zero bytes.
  std::size_t pad = 0;
  if (text.back() == '=') ++pad;
  if (text.size() >= 2 && text[text.size() - 2] == '=') ++pad;
  out.resize(static_cast<std::size_t>(n) - pad);
  // Only the canonical spelling is accepted, so no two texts open to the same secret.
  if (base64(out) != text) return std::nullopt;
  return out;
}

}  // namespace

SecretBox::SecretBox(std::string_view passphrase) {
  if (passphrase.empty()) throw std::invalid_argument("SecretBox needs a non-empty passphrase");
  // HKDF-SHA256 rather than a bare hash: the key is bound to this one use, so the same
  // passphrase used elsewhere yields unrelated keys.
  std::unique_ptr<EVP_KDF, KdfFree> kdf{EVP_KDF_fetch(nullptr, "HKDF", nullptr)};
  std::unique_ptr<EVP_KDF_CTX, KdfFree> ctx{kdf ? EVP_KDF_CTX_new(kdf.get()) : nullptr};
  static char kDigest[] = "SHA256";
  static unsigned char kSalt[] = "sluice";
  static unsigned char kInfo[] = "sluice secretbox v1: upstream keys at rest";
  OSSL_PARAM params[] = {
      OSSL_PARAM_construct_utf8_string("digest", kDigest, 0),
      OSSL_PARAM_construct_octet_string("key", const_cast<char*>(passphrase.data()), passphrase.size()),
      OSSL_PARAM_construct_octet_string("salt", kSalt, sizeof kSalt - 1),
      OSSL_PARAM_construct_octet_string("info", kInfo, sizeof kInfo - 1),
      OSSL_PARAM_construct_end(),
  };
  if (!ctx || EVP_KDF_derive(ctx.get(), key_.data(), key_.size(), params) != 1)
    throw std::runtime_error("OpenSSL HKDF failed while deriving the secret box key");
}

SecretBox::~SecretBox() {
  OPENSSL_cleanse(key_.data(), key_.size());
}

std::string SecretBox::seal(std::string_view plaintext) const {
  std::string raw(kNonceBytes + plaintext.size() + kTagBytes, '\0');
  auto* nonce = reinterpret_cast<unsigned char*>(raw.data());
  auto* cipher = nonce + kNonceBytes;
  if (RAND_bytes(nonce, static_cast<int>(kNonceBytes)) != 1)
    throw std::runtime_error("the OpenSSL random generator failed; cannot seal a secret");
  CipherCtx ctx{EVP_CIPHER_CTX_new()};
  int len = 0;
  int tail = 0;
  if (!ctx || EVP_EncryptInit_ex(ctx.get(), EVP_aes_256_gcm(), nullptr, key_.data(), nonce) != 1 ||
      EVP_EncryptUpdate(ctx.get(), cipher, &len, bytes(plaintext), static_cast<int>(plaintext.size())) != 1 ||
      EVP_EncryptFinal_ex(ctx.get(), cipher + len, &tail) != 1 ||
      EVP_CIPHER_CTX_ctrl(ctx.get(), EVP_CTRL_GCM_GET_TAG, static_cast<int>(kTagBytes), cipher + plaintext.size()) != 1)
    throw std::runtime_error("OpenSSL AES-256-GCM encryption failed");
  std::string out(kVersion);
  out += base64(raw);
  OPENSSL_cleanse(raw.data(), raw.size());
  return out;
}

std::optional<std::string> SecretBox::open(std::string_view sealed) const {
  if (!sealed.starts_with(kVersion)) return std::nullopt;
  auto raw = unbase64(sealed.substr(kVersion.size()));
  if (!raw || raw->size() < kNonceBytes + kTagBytes) return std::nullopt;
  const auto* nonce = bytes(*raw);
  const auto* cipher = nonce + kNonceBytes;
  const std::size_t cipher_len = raw->size() - kNonceBytes - kTagBytes;
  std::string plain(cipher_len, '\0');
  auto* out = reinterpret_cast<unsigned char*>(plain.data());
  CipherCtx ctx{EVP_CIPHER_CTX_new()};
  int len = 0;
  int tail = 0;
  // The tag is checked by DecryptFinal: any changed bit, or another key, fails there.
  if (!ctx || EVP_DecryptInit_ex(ctx.get(), EVP_aes_256_gcm(), nullptr, key_.data(), nonce) != 1 ||
      EVP_DecryptUpdate(ctx.get(), out, &len, cipher, static_cast<int>(cipher_len)) != 1 ||
      EVP_CIPHER_CTX_ctrl(ctx.get(), EVP_CTRL_GCM_SET_TAG, static_cast<int>(kTagBytes),
                          const_cast<unsigned char*>(cipher + cipher_len)) != 1 ||
      EVP_DecryptFinal_ex(ctx.get(), out + len, &tail) != 1) {
    OPENSSL_cleanse(plain.data(), plain.size());
    return std::nullopt;
  }
  return plain;
}

}  // namespace sluice
