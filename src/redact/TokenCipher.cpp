#include "redact/TokenCipher.hpp"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <atomic>
#include <cstdint>
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
const EVP_CIPHER* ecbCipher() {
  static EVP_CIPHER* cipher = EVP_CIPHER_fetch(nullptr, "AES-256-ECB", nullptr);
  return cipher;
}

// A small dense number per thread, for the per-thread engine slots.
std::size_t threadIndex() {
  static std::atomic<std::size_t> next{0};
  thread_local const std::size_t index = next.fetch_add(1, std::memory_order_relaxed);
  return index;
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
  if (ecbCipher() == nullptr) throw std::runtime_error("OpenSSL does not provide AES-256-ECB");
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

namespace {

using Block = std::array<unsigned char, 16>;

// Doubling in GF(2^128) with the big-endian convention of RFC 5297 (x^128 + x^7 + x^2 + x + 1).
void dbl(Block& b) {
  const unsigned char carry = b[0] >> 7;
  for (std::size_t i = 0; i + 1 < b.size(); ++i) b[i] = static_cast<unsigned char>((b[i] << 1) | (b[i + 1] >> 7));
  b[15] = static_cast<unsigned char>((b[15] << 1) ^ (carry ? 0x87 : 0));
}

void xorInto(unsigned char* b, const unsigned char* x) {  // one block
  for (std::size_t i = 0; i < 16; ++i) b[i] ^= x[i];
}

// AES-256 of n bytes (whole blocks) under the context's key; in and out may be the same buffer.
bool aes(EVP_CIPHER_CTX* ctx, const unsigned char* in, unsigned char* out, std::size_t n) {
  int len = 0;
  return EVP_EncryptUpdate(ctx, out, &len, in, static_cast<int>(n)) == 1 && static_cast<std::size_t>(len) == n;
}

EVP_CIPHER_CTX* keyedEcb(const unsigned char* key) {
  EVP_CIPHER_CTX* ctx = EVP_CIPHER_CTX_new();
  if (ctx != nullptr && EVP_EncryptInit_ex2(ctx, ecbCipher(), key, nullptr, nullptr) == 1 &&
      EVP_CIPHER_CTX_set_padding(ctx, 0) == 1)
    return ctx;
  EVP_CIPHER_CTX_free(ctx);
  return nullptr;
}

}  // namespace

struct TokenCipher::Engine {
  EVP_CIPHER_CTX* k1 = nullptr;  // AES-256-ECB under K1: CMAC
  EVP_CIPHER_CTX* k2 = nullptr;  // AES-256-ECB under K2: the CTR keystream
  Block sub1{}, sub2{};          // CMAC's subkeys (SP 800-38B 6.1)
  Block d0{};                    // CMAC(K1, 0^128): S2V's first step, the same for every token
  // S2V's state after the label, dbl(D0) xor CMAC(label), per label seen: labels are the few
  // rule names, so every token after a label's first costs one CMAC less.
  static constexpr std::size_t kMaxLabels = 64;
  std::vector<std::pair<std::string, Block>> afterLabel;

  ~Engine() {
    EVP_CIPHER_CTX_free(k1);  // frees cleanse the key schedules
    EVP_CIPHER_CTX_free(k2);
    OPENSSL_cleanse(sub1.data(), sub1.size());
    OPENSSL_cleanse(sub2.data(), sub2.size());
  }

  // CMAC (SP 800-38B) under K1 of m[0, n).
  bool cmac(const unsigned char* m, std::size_t n, unsigned char out[16]) const {
    Block x{};
    const std::size_t before = n == 0 ? 0 : (n - 1) / 16;  // whole blocks before the last one
    for (std::size_t i = 0; i < before; ++i) {
      xorInto(x.data(), m + 16 * i);
      if (!aes(k1, x.data(), x.data(), 16)) return false;
    }
    const std::size_t rest = n - 16 * before;  // 0..16 bytes in the last block
    Block last{};
    std::memcpy(last.data(), m + 16 * before, rest);
    if (rest == 16) {
      xorInto(last.data(), sub1.data());
    } else {
      last[rest] = 0x80;
      xorInto(last.data(), sub2.data());
    }
    xorInto(x.data(), last.data());
    return aes(k1, x.data(), out, 16);
  }
};

TokenCipher::Engine* TokenCipher::newEngine() const {
  auto e = std::make_unique<Engine>();
  if ((e->k1 = keyedEcb(key_.data())) == nullptr || (e->k2 = keyedEcb(key_.data() + 32)) == nullptr) return nullptr;
  Block l{};
  if (!aes(e->k1, l.data(), l.data(), 16)) return nullptr;
  dbl(l);
  e->sub1 = l;
  dbl(l);
  e->sub2 = l;
  OPENSSL_cleanse(l.data(), l.size());
  const Block zero{};
  if (!e->cmac(zero.data(), zero.size(), e->d0.data())) return nullptr;
  return e.release();
}

TokenCipher::Engine* TokenCipher::acquire() const {
  const std::size_t i = threadIndex();
  if (i < kThreadSlots) {
    if (slots_[i] == nullptr) slots_[i] = newEngine();  // nullptr (an OpenSSL failure): tried again next time
    return slots_[i];
  }
  {
    std::lock_guard lock(poolMu_);
    if (!pool_.empty()) {
      Engine* e = pool_.back();
      pool_.pop_back();
      return e;
    }
  }
  return newEngine();  // seal/open fail closed on nullptr (nothing sealed, nothing opened)
}

void TokenCipher::release(Engine* e) const {
  if (e == nullptr || threadIndex() < kThreadSlots) return;  // a thread's own engine stays in its slot
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
    d = e.d0;
    Block m;
    dbl(d);
    if (!e.cmac(reinterpret_cast<const unsigned char*>(label.data()), label.size(), m.data())) return false;
    xorInto(d.data(), m.data());
    if (e.afterLabel.size() < Engine::kMaxLabels) e.afterLabel.emplace_back(std::string(label), d);
  }
  if (n >= 16) {  // the last block xor-ended with D
    unsigned char t[kMaxSealedValue];
    std::memcpy(t, value, n);
    xorInto(t + n - 16, d.data());
    const bool ok = e.cmac(t, n, v);
    OPENSSL_cleanse(t, n);
    return ok;
  }
  dbl(d);  // short: padded with 10*, xored with dbl(D)
  Block t{};
  std::memcpy(t.data(), value, n);
  t[n] = 0x80;
  xorInto(t.data(), d.data());
  const bool ok = e.cmac(t.data(), t.size(), v);
  OPENSSL_cleanse(t.data(), t.size());
  return ok;
}

bool TokenCipher::ctr(Engine& e, const unsigned char v[16], const unsigned char* in, std::size_t n, unsigned char* out) {
  // Counter blocks Q, Q+1, ... encrypted in one call. With bits 31 and 63 of Q cleared the low
  // 32-bit word cannot carry for a value of at most kMaxSealedValue bytes.
  static_assert(kMaxSealedValue / 16 + 1 < 0x80000000u);
  unsigned char ks[kMaxSealedValue + 16];
  const std::size_t blocks = (n + 15) / 16;
  unsigned char q[16];
  std::memcpy(q, v, 16);
  q[8] &= 0x7f;
  q[12] &= 0x7f;
  const std::uint32_t low = (std::uint32_t{q[12]} << 24) | (std::uint32_t{q[13]} << 16) | (std::uint32_t{q[14]} << 8) | q[15];
  for (std::size_t b = 0; b < blocks; ++b) {
    unsigned char* c = ks + 16 * b;
    std::memcpy(c, q, 12);
    const std::uint32_t w = low + static_cast<std::uint32_t>(b);
    c[12] = static_cast<unsigned char>(w >> 24);
    c[13] = static_cast<unsigned char>(w >> 16);
    c[14] = static_cast<unsigned char>(w >> 8);
    c[15] = static_cast<unsigned char>(w);
  }
  if (!aes(e.k2, ks, ks, 16 * blocks)) return false;
  for (std::size_t i = 0; i < n; ++i) out[i] = static_cast<unsigned char>(in[i] ^ ks[i]);
  OPENSSL_cleanse(ks, 16 * blocks);
  return true;
}

TokenCipher::~TokenCipher() {
  for (Engine* e : slots_) delete e;
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
