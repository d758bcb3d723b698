// One POST of a body to a fixed URL over the upstream pool, deadline-bounded, for the gateway's
// own calls out (the guardrail's webhook, the trace exporter): the connection taken from the
// pool and given back when the answer was read whole, a pooled connection the server had closed
// retried once on a fresh one, the answer's body read up to a bound.
#pragma once
#include <boost/asio/awaitable.hpp>

#include <chrono>
#include <cstddef>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "upstream/Client.hpp"

namespace sluice::upstream {

struct PostTarget {
  Endpoint endpoint;
  std::string path;           // path and query of the URL ("/" when none)
  std::string extra_headers;  // "Name: value\r\n" lines (configured headers)
  std::chrono::milliseconds timeout{2000};
  std::string accept = "application/json";
  bool keep_headers = false;  // PostResult::headers filled (an MCP server's session id)
  bool get = false;           // a GET (no body): an OpenID Provider's discovery document, its JWKS
};
// Throws std::invalid_argument (saying `what`) when the URL is not http(s).
PostTarget makePostTarget(const std::string& url, const std::map<std::string, std::string>& headers,
                          std::chrono::milliseconds timeout, const std::string& what);

struct PostResult {
  enum class Failure { None, Connect, Send, Body };  // where it failed (None: an answer was read)
  Failure failure = Failure::None;
  bool timed_out = false;
  std::string error;  // the socket's reason, when it failed
  int status = 0;
  std::string body;
  std::string content_type;
  std::vector<std::pair<std::string, std::string>> headers;  // only with PostTarget::keep_headers
};

// Sends `payload` (Content-Type `type`) and reads the answer (at most `body_limit` bytes of body).
boost::asio::awaitable<PostResult> post(Pool& pool, const PostTarget& target, std::string_view type,
                                        const std::string& payload, std::size_t body_limit);

}  // namespace sluice::upstream
