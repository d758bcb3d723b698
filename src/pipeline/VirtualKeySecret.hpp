// Virtual-key secrets: how they are made, hashed for storage and recognised. The store keeps
// only the hash and a short prefix, so a leaked database does not leak usable keys.
// Pure functions; thread-safe. hashVirtualKeySecret runs on every authenticated request.
#pragma once
#include <string>
#include <string_view>

namespace sluice::pipeline {

inline constexpr std::string_view kVirtualKeyScheme = "sk-slc-";
inline constexpr std::size_t kVirtualKeyRandomChars = 40;  // base62: ~238 bits
inline constexpr std::size_t kVirtualKeyPrefixChars = 12;  // the scheme + 5 random characters

// "sk-slc-" + 40 base62 characters from the OpenSSL CSPRNG, without modulo bias.
// Throws std::runtime_error if the CSPRNG fails (never returns a weak key).
std::string generateVirtualKeySecret();
// The same for another kind of secret: `scheme` + `random_chars` base62 characters (admin
// tokens: "sk-sla-"). Throws std::runtime_error if the CSPRNG fails.
std::string generateSecret(std::string_view scheme, std::size_t random_chars);

// Lowercase hex SHA-256 of the secret: the value stored as VirtualKey::key_hash and looked up
// on every request. Never throws (it is on the data path): if OpenSSL fails it returns an
// empty string, which matches no stored key, so authentication fails closed.
std::string hashVirtualKeySecret(std::string_view secret);

// The first kVirtualKeyPrefixChars characters: enough for a person to tell keys apart,
// far too few to guess the rest.
std::string virtualKeyPrefix(std::string_view secret);

bool looksLikeVirtualKey(std::string_view presented);

}  // namespace sluice::pipeline
