// Unpadded base64url (RFC 4648 §5), for redaction tokens and JWTs (redact/ and cloud/).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace sluice::redact::detail {

inline constexpr char kB64UrlAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

inline bool isB64UrlChar(unsigned char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
}

inline std::size_t b64UrlEncodedLen(std::size_t n) {
  return (n * 4 + 2) / 3;
}

inline void appendB64Url(std::string& out, const unsigned char* p, std::size_t n) {
  std::size_t i = 0;
  for (; i + 3 <= n; i += 3) {
    const std::uint32_t v = (std::uint32_t{p[i]} << 16) | (std::uint32_t{p[i + 1]} << 8) | p[i + 2];
    out += kB64UrlAlphabet[(v >> 18) & 63];
    out += kB64UrlAlphabet[(v >> 12) & 63];
    out += kB64UrlAlphabet[(v >> 6) & 63];
    out += kB64UrlAlphabet[v & 63];
  }
  if (n - i == 1) {
    const std::uint32_t v = std::uint32_t{p[i]} << 16;
    out += kB64UrlAlphabet[(v >> 18) & 63];
    out += kB64UrlAlphabet[(v >> 12) & 63];
  } else if (n - i == 2) {
    const std::uint32_t v = (std::uint32_t{p[i]} << 16) | (std::uint32_t{p[i + 1]} << 8);
    out += kB64UrlAlphabet[(v >> 18) & 63];
    out += kB64UrlAlphabet[(v >> 12) & 63];
    out += kB64UrlAlphabet[(v >> 6) & 63];
  }
}

inline int b64UrlValue(unsigned char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '-') return 62;
  if (c == '_') return 63;
  return -1;
}

// nullopt on a bad character or a length no encoder produces. Non-canonical trailing bits are
// rejected too, so every byte string has exactly one encoding (a token cannot be altered into a
// second spelling of itself).
inline std::optional<std::string> decodeB64Url(std::string_view s) {
  if (s.size() % 4 == 1) return std::nullopt;
  std::string out;
  out.reserve(s.size() * 3 / 4);
  std::uint32_t acc = 0;
  int bits = 0;
  for (unsigned char c : s) {
    const int v = b64UrlValue(c);
    if (v < 0) return std::nullopt;
    acc = (acc << 6) | static_cast<std::uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out += static_cast<char>((acc >> bits) & 0xFF);
    }
  }
  if (bits > 0 && (acc & ((1u << bits) - 1)) != 0) return std::nullopt;
  return out;
}

}  // namespace sluice::redact::detail
