// TokenCipher: turns a redacted value into a token that carries it encrypted, and back.
//
// Token: "[[sluice:" LABEL ":" PAYLOAD "]]", e.g. [[sluice:EMAIL:q0Zk...Yw]]
//   LABEL   the rule name, [A-Za-z][A-Za-z0-9_]{0,31}; authenticated (a token relabelled by the
//           model does not open)
//   PAYLOAD unpadded base64url of SIV tag (16 bytes) || ciphertext (as long as the value)
// Every character is JSON-safe, so a token reads the same inside a JSON string, escaped once
// or twice, and models copy it as one unit; "[[sluice:" does not occur in ordinary text.
//
// Deterministic authenticated encryption, AES-256-SIV (RFC 5297; byte for byte what OpenSSL's
// "AES-256-SIV" cipher gives, which the unit test checks): the same value under the same label and
// scope gives the same token, so the model can tell that two mentions are one person; a changed
// byte makes open() fail. The 64-byte SIV key is HKDF-SHA256(key material, info = scope); scope is
// what must not be linkable (e.g. the virtual key id), so two tenants' tokens for one value differ
// and neither opens the other's.
//
// Built on OpenSSL's AES-256 (keyed ECB contexts, one block call per CMAC block and one call for
// the whole CTR keystream) rather than its SIV cipher or its EVP_MAC CMAC: a SIV context serves
// one operation and then needs its key set up again or a copy of a keyed template (~1 us, several
// allocations), and EVP_MAC's init/update/final cost more than the AES they wrap for values this
// short. CMAC (NIST SP 800-38B) and the CTR counter are the few lines RFC 5297 spells out; the
// unit test holds the result to OpenSSL's own AES-256-SIV byte for byte.
// Keyed contexts ("engines") are per thread: a thread's first seal/open of a cipher keys one and
// keeps it in the cipher's slot for that thread, so two workers never share a lock or a cache
// line per token (a shared pool cost ~150 ns a token under two threads). Threads past
// kThreadSlots share a locked pool.
//
// Cost: construction (HKDF) ~4 us; the first seal/open of a thread ~10 us (key set-up), then
// ~0.15 us per short token: build one per scope and keep it with the key's snapshot entry rather
// than one per request.
// Thread-safety: seal and open may run concurrently (each thread uses its own engine).
#pragma once
#include <array>
#include <cstddef>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace sluice::redact {

inline constexpr std::string_view kTokenPrefix = "[[sluice:";
inline constexpr std::string_view kTokenSuffix = "]]";
inline constexpr std::size_t kMaxLabelLen = 32;
// Longer values are not sealed (the caller masks them): this bounds a token, and so the bytes a
// streaming restorer ever holds back.
inline constexpr std::size_t kMaxSealedValue = 4096;
inline constexpr std::size_t kSivTagLen = 16;
inline constexpr std::size_t kMaxPayloadLen = ((kSivTagLen + kMaxSealedValue) * 4 + 2) / 3;
inline constexpr std::size_t kMaxTokenLen =
    kTokenPrefix.size() + kMaxLabelLen + 1 + kMaxPayloadLen + kTokenSuffix.size();

// Token grammar at the start of `s` (the syntax only; no key involved).
struct TokenSyntax {
  enum State {
    NoMatch,   // s does not start with a token
    Partial,   // s is a proper prefix of a possible token: more bytes may complete it
    Complete,  // s starts with a whole token of `length` bytes
  } state = NoMatch;
  std::size_t length = 0;
  std::string_view label;
  std::string_view payload;
};
TokenSyntax parseToken(std::string_view s);

// Is `label` a valid rule name / token label?
bool validLabel(std::string_view label);

class TokenCipher {
 public:
  // keyMaterial: at least 16 bytes of secret (32 random bytes recommended), e.g. from
  // SLUICE_REDACT_KEY; scope: any string, e.g. the virtual key id. Throws std::invalid_argument
  // on short key material, std::runtime_error if OpenSSL lacks AES-256-ECB.
  TokenCipher(std::string_view keyMaterial, std::string_view scope);
  ~TokenCipher();
  TokenCipher(const TokenCipher&) = delete;
  TokenCipher& operator=(const TokenCipher&) = delete;

  // Appends the token for `value` under `label` and returns true; returns false and appends
  // nothing when the value is empty or longer than kMaxSealedValue, or the label is invalid.
  bool appendToken(std::string& out, std::string_view label, std::string_view value) const;
  std::optional<std::string> seal(std::string_view label, std::string_view value) const;

  // Opens a token's parts (see parseToken). Appends the value and returns true, or returns
  // false (tampered, foreign scope or key, relabelled) and appends nothing.
  bool openInto(std::string& out, std::string_view label, std::string_view payload) const;
  // Opens a whole token text. nullopt unless `token` is exactly one valid token of this scope.
  std::optional<std::string> open(std::string_view token) const;

 private:
  struct Engine;  // keyed AES-256 ECB contexts (K1 for CMAC, K2 for CTR); one operation at a time
  static constexpr std::size_t kThreadSlots = 64;
  Engine* acquire() const;
  void release(Engine* e) const;
  // S2V (RFC 5297 2.4) of the vector (label, value) under K1, into v; false on an OpenSSL error.
  bool s2v(Engine& e, std::string_view label, const unsigned char* value, std::size_t n, unsigned char v[16]) const;
  // AES-256-CTR under K2 from the synthetic IV v (bits 31 and 63 cleared, RFC 5297 2.5).
  static bool ctr(Engine& e, const unsigned char v[16], const unsigned char* in, std::size_t n, unsigned char* out);
  Engine* newEngine() const;
  std::array<unsigned char, 64> key_{};  // K1 (CMAC) || K2 (CTR)
  // Engine of the thread with index i (see TokenCipher.cpp) in slot i: written and read only by
  // that thread (and by the destructor, once no thread uses the cipher any more).
  mutable std::array<Engine*, kThreadSlots> slots_{};
  mutable std::mutex poolMu_;
  mutable std::vector<Engine*> pool_;  // for threads past kThreadSlots
};

}  // namespace sluice::redact
