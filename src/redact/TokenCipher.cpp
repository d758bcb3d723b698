#include "redact/TokenCipher.hpp"

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/params.h>

#include <cstring>
#include <initializer_list>
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
EVP_MAC* cmacAlgorithm() {
  static EVP_MAC* mac = EVP_MAC_fetch(nullptr, "CMAC", nullptr);
  return mac;
}

const EVP_CIPHER* ctrCipher() {
  static EVP_CIPHER* cipher = EVP_CIPHER_fetch(nullptr, "AES-256-CTR", nullptr);
  return cipher;
}

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
  if (cmacAlgorithm() == nullptr || ctrCipher() == nullptr)
    throw std::runtime_error("OpenSSL does not provide CMAC and AES-256-CTR");
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

struct TokenCipher::Engine {
  EVP_MAC_CTX* mac = nullptr;
  EVP_CIPHER_CTX* ctr = nullptr;
  // S2V's state after the label, dbl(D0) xor CMAC(label), per label seen: labels are the few
  // rule names, so every token after a label's first costs one CMAC less.
  static constexpr std::size_t kMaxLabels = 64;
  std::vector<std::pair<std::string, std::array<unsigned char, 16>>> afterLabel;
  ~Engine() {
    EVP_MAC_CTX_free(mac);
    EVP_CIPHER_CTX_free(ctr);
  }
};

namespace {

using Block = std::array<unsigned char, 16>;

// Doubling in GF(2^128) with the big-endian convention of RFC 5297 (x^128 + x^7 + x^2 + x + 1).
void dbl(Block& b) {
  const unsigned char carry = b[0] >> 7;
  for (std::size_t i = 0; i + 1 < b.size(); ++i) b[i] = static_cast<unsigned char>((b[i] << 1) | (b[i + 1] >> 7));
  b[15] = static_cast<unsigned char>((b[15] << 1) ^ (carry ? 0x87 : 0));
}

void xorInto(Block& b, const unsigned char* x) {
  for (std::size_t i = 0; i < b.size(); ++i) b[i] ^= x[i];
}

// CMAC of the concatenation of parts, restarting the keyed context (same key).
bool cmac(EVP_MAC_CTX* mac, std::initializer_list<std::pair<const unsigned char*, std::size_t>> parts,
          unsigned char out[16]) {
  if (EVP_MAC_init(mac, nullptr, 0, nullptr) != 1) return false;
  for (const auto& [p, n] : parts)
    if (n > 0 && EVP_MAC_update(mac, p, n) != 1) return false;
  std::size_t len = 0;
  return EVP_MAC_final(mac, out, &len, 16) == 1 && len == 16;
}

}  // namespace

TokenCipher::Engine* TokenCipher::acquire() const {
  {
    std::lock_guard lock(poolMu_);
    if (!pool_.empty()) {
      Engine* e = pool_.back();
      pool_.pop_back();
      return e;
    }
  }
  auto e = std::make_unique<Engine>();
  char cbc[] = "AES-256-CBC";
  const OSSL_PARAM params[] = {OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_CIPHER, cbc, 0), OSSL_PARAM_construct_end()};
  if (cmacAlgorithm() == nullptr || ctrCipher() == nullptr || (e->mac = EVP_MAC_CTX_new(cmacAlgorithm())) == nullptr ||
      EVP_MAC_init(e->mac, key_.data(), 32, params) != 1 || (e->ctr = EVP_CIPHER_CTX_new()) == nullptr ||
      EVP_EncryptInit_ex2(e->ctr, ctrCipher(), key_.data() + 32, nullptr, nullptr) != 1)
    return nullptr;  // seal/open then fail closed (nothing sealed, nothing opened)
  std::call_once(d0Once_, [&] {
    const unsigned char zero[16] = {};
    d0Ok_ = cmac(e->mac, {{zero, sizeof zero}}, d0_.data());
  });
  if (!d0Ok_) return nullptr;
  return e.release();
}

void TokenCipher::release(Engine* e) const {
  if (e == nullptr) return;
  std::lock_guard lock(poolMu_);
  pool_.push_back(e);
}

bool TokenCipher::s2v(Engine& e, std::string_view label, const unsigned char* value, std::size_t n,
                      unsigned char v[16]) const {
  Block d{};
  bool cached = false;
  for (const auto& [l, state] : e.afterLabel)
    if (l == label) {
      d = state;
      cached = true;
      break;
    }
  if (!cached) {
    d = d0_;
    Block m;
    dbl(d);
    if (!cmac(e.mac, {{reinterpret_cast<const unsigned char*>(label.data()), label.size()}}, m.data())) return false;
    xorInto(d, m.data());
    if (e.afterLabel.size() < Engine::kMaxLabels) e.afterLabel.emplace_back(std::string(label), d);
  }
  Block t{};
  if (n >= 16) {  // the last block xor-ended with D
    std::memcpy(t.data(), value + n - 16, 16);
    xorInto(t, d.data());
    return cmac(e.mac, {{value, n - 16}, {t.data(), 16}}, v);
  }
  dbl(d);  // short: padded with 10*, xored with dbl(D)
  std::memcpy(t.data(), value, n);
  t[n] = 0x80;
  xorInto(t, d.data());
  return cmac(e.mac, {{t.data(), 16}}, v);
}

bool TokenCipher::ctr(Engine& e, const unsigned char v[16], const unsigned char* in, std::size_t n, unsigned char* out) {
  unsigned char q[16];
  std::memcpy(q, v, 16);
  q[8] &= 0x7f;
  q[12] &= 0x7f;
  int len = 0;
  return EVP_EncryptInit_ex2(e.ctr, nullptr, nullptr, q, nullptr) == 1 &&
         EVP_EncryptUpdate(e.ctr, out, &len, in, static_cast<int>(n)) == 1 && static_cast<std::size_t>(len) == n;
}

TokenCipher::~TokenCipher() {
  for (Engine* e : pool_) delete e;
  OPENSSL_cleanse(key_.data(), key_.size());
}

bool TokenCipher::appendToken(std::string& out, std::string_view label, std::string_view value) const {
  if (value.empty() || value.size() > kMaxSealedValue || !validLabel(label)) return false;
  Engine* e = acquire();
  if (e == nullptr) return false;
  unsigned char buf[kSivTagLen + kMaxSealedValue];
  const auto* in = reinterpret_cast<const unsigned char*>(value.data());
  const bool ok = s2v(*e, label, in, value.size(), buf) && ctr(*e, buf, in, value.size(), buf + kSivTagLen);
  release(e);
  if (!ok) return false;
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
  Engine* e = acquire();
  if (e == nullptr) return false;
  unsigned char plain[kMaxSealedValue + 16];
  unsigned char v[16];
  const bool ok = ctr(*e, bytes, bytes + kSivTagLen, ctLen, plain) && s2v(*e, label, plain, ctLen, v) &&
                  CRYPTO_memcmp(v, bytes, kSivTagLen) == 0;
  release(e);
  if (ok) out.append(reinterpret_cast<const char*>(plain), ctLen);
  OPENSSL_cleanse(plain, ctLen);
  return ok;
}

std::optional<std::string> TokenCipher::open(std::string_view token) const {
  const auto syn = parseToken(token);
  if (syn.state != TokenSyntax::Complete || syn.length != token.size()) return std::nullopt;
  std::string out;
  if (!openInto(out, syn.label, syn.payload)) return std::nullopt;
  return out;
}

}  // namespace sluice::redact
