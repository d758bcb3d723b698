// MockStats: what the mock received, for tests (GET /mock/stats, POST /mock/reset): request
// counts by API key and by path, and the last request's headers and body.
// Thread-safe: record() copies the request outside the lock and holds the mutex only for the
// counter updates and a pointer swap.
#pragma once
#include <atomic>
#include "http/Server.hpp"

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace sluice::mock {

class MockStats {
 public:
  static constexpr std::size_t kMaxStoredBody = 1 << 20;

  struct Sample {
    std::string method;
    std::string path;
    std::string query;  // without the '?'; the key= of a Gemini client included, as received
    std::string key;  // empty when the request carried no key
    std::vector<std::pair<std::string, std::string>> headers;  // names lower-cased
    std::string body;
    bool body_truncated = false;
  };

  // The key a request authenticates with: Authorization "Bearer KEY" (or its whole value for
  // another scheme), else x-api-key, else x-goog-api-key, else the `key` query parameter.
  static std::string requestKey(const http::Request& req);
  static Sample sample(const http::Request& req);

  void record(Sample&& s);
  // How streams ended: written to the end, or cut short because the client went away.
  void streamCompleted() { streams_completed_.fetch_add(1, std::memory_order_relaxed); }
  void streamAborted() { streams_aborted_.fetch_add(1, std::memory_order_relaxed); }
  // OAuth token endpoints (Google's jwt-bearer, Entra's client credentials): every request, and
  // those refused.
  void tokenRequest(bool refused) {
    token_requests_.fetch_add(1, std::memory_order_relaxed);
    if (refused) token_refusals_.fetch_add(1, std::memory_order_relaxed);
  }
  // A Vertex or Entra-authenticated Azure request refused for its bearer (unknown, expired or
  // revoked): answered 401.
  void bearerRefused() { bearer_refusals_.fetch_add(1, std::memory_order_relaxed); }
  void reset();
  // Where toJson() reads "connections_accepted" (the server's count since start); unset: omitted.
  void countConnectionsWith(std::function<std::uint64_t()> source) { connections_ = std::move(source); }
  // {"requests":N,"by_key":{..},"by_path":{..},"last_request":{method,path,headers,body}|null}
  std::string toJson() const;

 private:
  mutable std::mutex mu_;
  std::uint64_t requests_ = 0;
  std::unordered_map<std::string, std::uint64_t> by_key_;
  std::unordered_map<std::string, std::uint64_t> by_path_;
  std::shared_ptr<const Sample> last_;
  std::atomic<std::uint64_t> streams_completed_{0};
  std::atomic<std::uint64_t> streams_aborted_{0};
  std::atomic<std::uint64_t> token_requests_{0};
  std::atomic<std::uint64_t> token_refusals_{0};
  std::atomic<std::uint64_t> bearer_refusals_{0};
  std::function<std::uint64_t()> connections_;  // set before the server runs, read-only after
};

}  // namespace sluice::mock
