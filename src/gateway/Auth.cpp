#include "gateway/Auth.hpp"

#include <fmt/format.h>
#include <openssl/crypto.h>

#include "core/Clock.hpp"
#include "gateway/Snapshot.hpp"
#include "pipeline/VirtualKeySecret.hpp"

namespace sluice::gateway {

namespace bhttp = boost::beast::http;

std::string presentedKey(const bhttp::request<bhttp::string_body>& req, std::string_view query) {
  auto auth = req[bhttp::field::authorization];
  if (auth.size() > 7 && (auth.substr(0, 7) == "Bearer " || auth.substr(0, 7) == "bearer ")) {
    auto k = auth.substr(7);
    while (!k.empty() && k.front() == ' ') k.remove_prefix(1);
    return std::string(k);
  }
  if (auto k = req["x-api-key"]; !k.empty()) return std::string(k);
  if (auto k = req["x-goog-api-key"]; !k.empty()) return std::string(k);
  std::size_t pos = 0;
  while (pos < query.size()) {
    auto amp = query.find('&', pos);
    auto part = query.substr(pos, amp == std::string_view::npos ? std::string_view::npos : amp - pos);
    if (part.substr(0, 4) == "key=") return std::string(part.substr(4));
    if (amp == std::string_view::npos) break;
    pos = amp + 1;
  }
  return {};
}

KeyCheck checkKey(const Snapshot& snap, std::string_view key) {
  KeyCheck c;
  if (key.empty()) {
    c.code = "missing_api_key";
    c.message = "no API key: send 'Authorization: Bearer YOUR_KEY' (or x-api-key, x-goog-api-key)";
    return c;
  }
  const auto& master = snap.cfg->auth.master_key;
  if (!master.empty() && constantTimeEquals(key, master)) return c;
  const pipeline::VirtualKeyEntry* vk = nullptr;
  if (pipeline::looksLikeVirtualKey(key)) vk = snap.keys->find(pipeline::hashVirtualKeySecret(key));
  if (!vk) {
    c.message = "the API key is not valid for this gateway";
  } else if (vk->revoked) {
    c.message = fmt::format("the API key {}... ({}) was revoked", vk->prefix, vk->name);
  } else if (vk->expired(unixNowMs())) {
    c.message = fmt::format("the API key {}... ({}) expired", vk->prefix, vk->name);
  } else {
    c.vk = vk;
    return c;
  }
  c.code = "invalid_api_key";
  return c;
}

bool constantTimeEquals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  return CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

}  // namespace sluice::gateway
