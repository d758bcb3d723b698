// SecretBox: authenticated encryption of small secrets at rest (upstream API keys in the store),
// so a copied database file or backup does not hand out provider keys. AES-256-GCM with a key
// derived from an operator passphrase (store.secret_key / SLUICE_SECRET_KEY); every seal uses a
// fresh random nonce. Sealed form: "v1:" + base64(nonce[12] | ciphertext | tag[16]).
// Thread-safety: immutable after construction; seal() and open() may run concurrently.
#pragma once
#include <array>
#include <optional>
#include <string>
#include <string_view>

namespace sluice {

class SecretBox {
 public:
  // The passphrase should be long and random; it is not stretched (it is a key, not a password).
  // Throws std::invalid_argument when it is empty.
  explicit SecretBox(std::string_view passphrase);
  ~SecretBox();
  SecretBox(const SecretBox&) = delete;
  SecretBox& operator=(const SecretBox&) = delete;

  // Throws std::runtime_error only if OpenSSL itself fails (no randomness, no AES).
  std::string seal(std::string_view plaintext) const;
  // nullopt when the value was sealed under another passphrase, was altered, or is not a sealed
  // value at all. Never throws.
  std::optional<std::string> open(std::string_view sealed) const;

  static bool looksSealed(std::string_view value) { return value.starts_with("v1:"); }

 private:
  std::array<unsigned char, 32> key_{};
};

}  // namespace sluice
