#include "pipeline/VirtualKeySecret.hpp"

#include <openssl/evp.h>
#include <openssl/rand.h>

#include <array>
#include <memory>
#include <stdexcept>

namespace sluice::pipeline {
namespace {

constexpr std::string_view kBase62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
// Bytes at or above 248 (= 4 * 62) are dropped so every character is equally likely.
constexpr unsigned kUnbiasedLimit = 256 - 256 % 62;

struct MdCtxFree {
  void operator()(EVP_MD_CTX* c) const { EVP_MD_CTX_free(c); }
};

// Fetched once: implicit fetching through EVP_sha256() looks the algorithm up on every call.
const EVP_MD* sha256() {
  static EVP_MD* const md = EVP_MD_fetch(nullptr, "SHA256", nullptr);
  return md;
}

}  // namespace

std::string generateSecret(std::string_view scheme, std::size_t random_chars) {
  std::string out(scheme);
  out.reserve(scheme.size() + random_chars);
  std::array<unsigned char, 64> buf{};
  while (out.size() < scheme.size() + random_chars) {
    if (RAND_bytes(buf.data(), static_cast<int>(buf.size())) != 1)
      throw std::runtime_error("the OpenSSL random generator failed; cannot make a secret");
    for (unsigned char b : buf) {
      if (b >= kUnbiasedLimit) continue;
      out.push_back(kBase62[b % 62]);
      if (out.size() == scheme.size() + random_chars) break;
    }
  }
  return out;
}

std::string generateVirtualKeySecret() {
  return generateSecret(kVirtualKeyScheme, kVirtualKeyRandomChars);
}

std::string hashVirtualKeySecret(std::string_view secret) {
  // One context per thread, reused: the auth path hashes on every request and should not
  // allocate more than the 64-character result.
  thread_local std::unique_ptr<EVP_MD_CTX, MdCtxFree> ctx{EVP_MD_CTX_new()};
  std::array<unsigned char, 32> digest{};
  unsigned int len = 0;
  if (!ctx || !sha256() || EVP_DigestInit_ex2(ctx.get(), sha256(), nullptr) != 1 ||
      EVP_DigestUpdate(ctx.get(), secret.data(), secret.size()) != 1 ||
      EVP_DigestFinal_ex(ctx.get(), digest.data(), &len) != 1 || len != digest.size())
    return {};
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out(digest.size() * 2, '\0');
  for (std::size_t i = 0; i < digest.size(); ++i) {
    out[2 * i] = kHex[digest[i] >> 4];
    out[2 * i + 1] = kHex[digest[i] & 0x0f];
  }
  return out;
}

std::string virtualKeyPrefix(std::string_view secret) {
  return std::string(secret.substr(0, kVirtualKeyPrefixChars));
}

bool looksLikeVirtualKey(std::string_view presented) {
  return presented.starts_with(kVirtualKeyScheme);
}

}  // namespace sluice::pipeline
