// TokenCipher: turns a redacted value into a token that carries it encrypted, and back.
//
// Token: "[[sluice:" LABEL ":" PAYLOAD "]]", e.g. [[sluice:EMAIL:q0Zk...Yw]]
//   LABEL   the rule name, [A-Za-z][A-Za-z0-9_]{0,31}; authenticated (a token relabelled by the
//           model does not open)
//   PAYLOAD unpadded base64url of SIV tag (16 bytes) || ciphertext (as long as the value)
// Every character is JSON-safe, so a token reads the same inside a JSON string, escaped once
// or twice, and models copy it as one unit; "[[sluice:" does not occur in ordinary text.
//
// Deterministic authenticated encryption, AES-256-SIV (RFC 5297, OpenSSL 3): the same value
// under the same label and scope gives the same token, so the model can tell that two mentions
// are one person; a changed byte makes open() fail. The 64-byte SIV key is HKDF-SHA256(key
// material, info = scope); scope is what must not be linkable (e.g. the virtual key id), so
// two tenants' tokens for one value differ and neither opens the other's.
//
// Cost: construction (HKDF) ~4 us, the first seal/open of an instance ~10 us (SIV key set-up),
// then ~0.6 us per token: build one per scope and keep it with the key's snapshot entry rather
// than one per request.
// Thread-safety: immutable after construction; seal and open may run concurrently.
#pragma once
#include <array>
#include <cstddef>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

struct evp_cipher_ctx_st;

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
  // on short key material, std::runtime_error if OpenSSL lacks AES-256-SIV.
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
  std::array<unsigned char, 64> key_{};
  // Keyed templates, copied per call (a copy costs a fraction of a fresh SIV key set-up; reading
  // a template from several threads is safe), built on first use.
  void buildTemplates() const;
  mutable std::once_flag templatesOnce_;
  mutable evp_cipher_ctx_st* encTemplate_ = nullptr;
  mutable evp_cipher_ctx_st* decTemplate_ = nullptr;
};

}  // namespace sluice::redact
