// ResponseChain: the Responses WebSocket mode's message handling without the socket
// (gateway/ResponsesSocket.hpp has the whole contract): a client message into the POST body to
// run, an error message or a warm-up; and the connection-local responses later turns chain from.
// Pure; not thread-safe (one per socket).
#pragma once
#include <boost/json/array.hpp>

#include <chrono>
#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace sluice::gateway {

struct ResponsesSocketOptions {
  std::uint64_t max_message_bytes = 32ull << 20;
  std::chrono::milliseconds idle_timeout{75'000};
  std::size_t kept_responses = 8;        // responses a later turn may chain from
  std::size_t kept_bytes = 64ull << 20;  // their items' JSON, all together
};

// The pure part: a client message into what to do with it, and the responses kept for chaining.
// Not thread-safe (one per socket).
class ResponseChain {
 public:
  explicit ResponseChain(const ResponsesSocketOptions& o) : o_(o) {}

  struct Turn {
    std::optional<std::string> error;  // an error message to send back, as is
    bool warmup = false;               // generate:false: answer with warmupEvents(), keep `items`
    std::string body;                  // the POST /v1/responses body to run
    std::string model;
    // The turn's whole input (the chain expanded) as JSON text: the items joined by commas,
    // without the brackets. Kept as text so that a long conversation is copied, not rebuilt
    // as a tree, on every turn.
    std::string items;
    // previous_response_id names none of this socket's responses: the body keeps it for the
    // POST path to expand from the stored responses, and `items` holds only the turn's own
    // input (so the turn is not kept here: a later turn chains from the stored copy).
    bool from_store = false;
  };
  Turn prepare(std::string_view message) const;

  // A response the client may chain from: its whole input (a Turn's `items`) and its output items.
  void keep(std::string id, std::string items, const boost::json::array& output);
  // The events of a warm-up's answer, with a new response id (kept with `items`).
  std::vector<std::string> warmup(Turn& turn);

  static std::string errorMessage(int status, std::string_view type, std::string_view code, std::string_view message,
                                  std::string_view param = {});

 private:
  struct Kept {
    std::string id;
    std::string items;  // as Turn::items
  };
  const Kept* find(std::string_view id) const;

  ResponsesSocketOptions o_;
  std::deque<Kept> kept_;
  std::size_t bytes_ = 0;
};

}  // namespace sluice::gateway
