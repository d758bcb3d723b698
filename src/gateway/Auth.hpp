// Client authentication. A request presents a key the way its SDK does (Bearer, x-api-key,
// x-goog-api-key, ?key=); authenticate() says who it is. Only the master key exists today;
// virtual keys slot in as another Principal kind.
#pragma once
#include <optional>
#include <string>
#include <string_view>

#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>

namespace sluice::pipeline {
struct VirtualKeyEntry;
}

namespace sluice::gateway {

struct Snapshot;

struct Principal {
  enum class Kind { Master, Virtual } kind = Kind::Master;
  std::string id;  // safe to log
};

// The key a request presents, or empty. `query` is the raw query string (without '?').
std::string presentedKey(const boost::beast::http::request<boost::beast::http::string_body>& req, std::string_view query);

bool constantTimeEquals(std::string_view a, std::string_view b);

// Whether `key` may call the proxy API under `snap`: the master key, or a virtual key that is
// neither revoked nor expired. A refusal carries OpenAI's error code and a message for a 401.
struct KeyCheck {
  const pipeline::VirtualKeyEntry* vk = nullptr;  // null: the master key (or refused)
  std::string code;                               // empty: accepted
  std::string message;
  bool ok() const { return code.empty(); }
};
KeyCheck checkKey(const Snapshot& snap, std::string_view key);

}  // namespace sluice::gateway
