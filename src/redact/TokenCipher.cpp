#include "redact/TokenCipher.hpp"

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <cstring>
#include <memory>
#include <stdexcept>
#include <vector>

#include "redact/Base64Url.hpp"

namespace sluice::redact {
namespace {

bool isLabelStart(unsigned char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z');
}
bool isLabelChar(unsigned char c) {
  return isLabelStart(c) || (c >= '0' && c <= '9') || c == '_';
}

// Fetched once: a provider fetch costs far more than a seal.
const EVP_CIPHER* sivCipher() {
  static EVP_CIPHER* cipher = EVP_CIPHER_fetch(nullptr, "AES-256-SIV", nullptr);
  return cipher;
}

struct CtxFree {
  void operator()(EVP_CIPHER_CTX* c) const { EVP_CIPHER_CTX_free(c); }
};
using CtxPtr = std::unique_ptr<EVP_CIPHER_CTX, CtxFree>;

void hmacSha256(const unsigned char* key, std::size_t keyLen, const unsigned char* data, std::size_t n,
                unsigned char out[32]) {
  unsigned int len = 32;
  if (HMAC(EVP_sha256(), key, static_cast<int>(keyLen), data, n, out, &len) == nullptr)
    throw std::runtime_error("redaction: HMAC-SHA256 failed");
}

}  // namespace

bool validLabel(std::string_view label) {
  if (label.empty() || label.size() > kMaxLabelLen || !isLabelStart(static_cast<unsigned char>(label[0]))) return false;
  for (unsigned char c : label)
    if (!isLabelChar(c)) return false;
  return true;
}

TokenSyntax parseToken(std::string_view s) {
  TokenSyntax r;
  const std::size_t np = std::min(s.size(), kTokenPrefix.size());
  if (s.substr(0, np) != kTokenPrefix.substr(0, np)) return r;
  if (np < kTokenPrefix.size()) {
    r.state = TokenSyntax::Partial;
    return r;
  }
  std::size_t i = kTokenPrefix.size();
  const std::size_t labelStart = i;
  for (;; ++i) {
    if (i == s.size()) {
      r.state = TokenSyntax::Partial;
      return r;
    }
    const auto c = static_cast<unsigned char>(s[i]);
    if (c == ':' && i > labelStart) break;
    if (i - labelStart >= kMaxLabelLen) return r;
    if (i == labelStart ? !isLabelStart(c) : !isLabelChar(c)) return r;
  }
  const std::size_t labelEnd = i++;
  const std::size_t payloadStart = i;
  for (; i < s.size() && detail::isB64UrlChar(static_cast<unsigned char>(s[i])); ++i)
    if (i - payloadStart >= kMaxPayloadLen) return r;
  if (i == s.size()) {
    r.state = TokenSyntax::Partial;
    return r;
  }
  if (i == payloadStart || s[i] != ']') return r;
  if (i + 1 == s.size()) {
    r.state = TokenSyntax::Partial;
    return r;
  }
  if (s[i + 1] != ']') return r;
  r.state = TokenSyntax::Complete;
  r.length = i + 2;
  r.label = s.substr(labelStart, labelEnd - labelStart);
  r.payload = s.substr(payloadStart, i - payloadStart);
  return r;
}

TokenCipher::TokenCipher(std::string_view keyMaterial, std::string_view scope) {
  if (keyMaterial.size() < 16)
    throw std::invalid_argument("redaction key must be at least 16 bytes (32 random bytes recommended)");
  if (sivCipher() == nullptr) throw std::runtime_error("OpenSSL does not provide AES-256-SIV");
  // HKDF-SHA256 (RFC 5869): extract with a fixed salt, expand with the scope as info.
  static constexpr std::string_view kSalt = "sluice/redact/token/v1";
  unsigned char prk[32];
  hmacSha256(reinterpret_cast<const unsigned char*>(kSalt.data()), kSalt.size(),
             reinterpret_cast<const unsigned char*>(keyMaterial.data()), keyMaterial.size(), prk);
  std::vector<unsigned char> block;
  unsigned char t[32];
  std::size_t have = 0;
  for (unsigned char counter = 1; have < key_.size(); ++counter) {
    block.clear();
    if (counter > 1) block.insert(block.end(), t, t + 32);
    block.insert(block.end(), scope.begin(), scope.end());
    block.push_back(counter);
    hmacSha256(prk, sizeof prk, block.data(), block.size(), t);
    const std::size_t n = std::min<std::size_t>(32, key_.size() - have);
    std::memcpy(key_.data() + have, t, n);
    have += n;
  }
  OPENSSL_cleanse(prk, sizeof prk);
  OPENSSL_cleanse(t, sizeof t);
}

void TokenCipher::buildTemplates() const {
  std::call_once(templatesOnce_, [this] {
    CtxPtr enc(EVP_CIPHER_CTX_new()), dec(EVP_CIPHER_CTX_new());
    if (!enc || !dec || EVP_EncryptInit_ex2(enc.get(), sivCipher(), key_.data(), nullptr, nullptr) != 1 ||
        EVP_DecryptInit_ex2(dec.get(), sivCipher(), key_.data(), nullptr, nullptr) != 1)
      return;  // left null: seal/open then fail closed (nothing sealed, nothing opened)
    encTemplate_ = enc.release();
    decTemplate_ = dec.release();
  });
}

TokenCipher::~TokenCipher() {
  EVP_CIPHER_CTX_free(encTemplate_);
  EVP_CIPHER_CTX_free(decTemplate_);
  OPENSSL_cleanse(key_.data(), key_.size());
}

bool TokenCipher::appendToken(std::string& out, std::string_view label, std::string_view value) const {
  if (value.empty() || value.size() > kMaxSealedValue || !validLabel(label)) return false;
  buildTemplates();
  if (encTemplate_ == nullptr) return false;
  CtxPtr ctx(EVP_CIPHER_CTX_new());
  unsigned char buf[kSivTagLen + kMaxSealedValue];
  int n = 0;
  if (!ctx || EVP_CIPHER_CTX_copy(ctx.get(), encTemplate_) != 1 ||
      EVP_EncryptUpdate(ctx.get(), nullptr, &n, reinterpret_cast<const unsigned char*>(label.data()),
                        static_cast<int>(label.size())) != 1 ||
      EVP_EncryptUpdate(ctx.get(), buf + kSivTagLen, &n, reinterpret_cast<const unsigned char*>(value.data()),
                        static_cast<int>(value.size())) != 1 ||
      static_cast<std::size_t>(n) != value.size())
    return false;
  int fin = 0;
  if (EVP_EncryptFinal_ex(ctx.get(), buf + kSivTagLen + n, &fin) != 1 ||
      EVP_CIPHER_CTX_ctrl(ctx.get(), EVP_CTRL_AEAD_GET_TAG, kSivTagLen, buf) != 1)
    return false;
  out.reserve(out.size() + kTokenPrefix.size() + label.size() + 1 +
              detail::b64UrlEncodedLen(kSivTagLen + value.size()) + kTokenSuffix.size());
  out += kTokenPrefix;
  out += label;
  out += ':';
  detail::appendB64Url(out, buf, kSivTagLen + value.size());
  out += kTokenSuffix;
  return true;
}

std::optional<std::string> TokenCipher::seal(std::string_view label, std::string_view value) const {
  std::string out;
  if (!appendToken(out, label, value)) return std::nullopt;
  return out;
}

bool TokenCipher::openInto(std::string& out, std::string_view label, std::string_view payload) const {
  if (!validLabel(label) || payload.size() > kMaxPayloadLen) return false;
  const auto raw = detail::decodeB64Url(payload);
  if (!raw || raw->size() <= kSivTagLen) return false;
  const auto* bytes = reinterpret_cast<const unsigned char*>(raw->data());
  const std::size_t ctLen = raw->size() - kSivTagLen;
  buildTemplates();
  if (decTemplate_ == nullptr) return false;
  CtxPtr ctx(EVP_CIPHER_CTX_new());
  unsigned char plain[kMaxSealedValue + 16];
  int n = 0;
  if (!ctx || EVP_CIPHER_CTX_copy(ctx.get(), decTemplate_) != 1 ||
      EVP_CIPHER_CTX_ctrl(ctx.get(), EVP_CTRL_AEAD_SET_TAG, kSivTagLen, const_cast<unsigned char*>(bytes)) != 1 ||
      EVP_DecryptUpdate(ctx.get(), nullptr, &n, reinterpret_cast<const unsigned char*>(label.data()),
                        static_cast<int>(label.size())) != 1 ||
      EVP_DecryptUpdate(ctx.get(), plain, &n, bytes + kSivTagLen, static_cast<int>(ctLen)) != 1 ||
      static_cast<std::size_t>(n) != ctLen) {
    OPENSSL_cleanse(plain, sizeof plain);
    return false;
  }
  int fin = 0;
  if (EVP_DecryptFinal_ex(ctx.get(), plain + n, &fin) != 1) {
    OPENSSL_cleanse(plain, sizeof plain);
    return false;
  }
  out.append(reinterpret_cast<const char*>(plain), ctLen);
  OPENSSL_cleanse(plain, sizeof plain);
  return true;
}

std::optional<std::string> TokenCipher::open(std::string_view token) const {
  const auto syn = parseToken(token);
  if (syn.state != TokenSyntax::Complete || syn.length != token.size()) return std::nullopt;
  std::string out;
  if (!openInto(out, syn.label, syn.payload)) return std::nullopt;
  return out;
}

}  // namespace sluice::redact
