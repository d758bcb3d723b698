// Webhook: the external guardrail. The gateway POSTs what is about to leave (the request's text
// after redaction, and optionally a non-streamed answer) to a configured URL and waits at most
// `timeout` for a verdict:
//
//   POST {url}   Content-Type: application/json
//   {"phase": "request" | "response", "request_id": "...", "model": "...",
//    "key": {"id": 7, "name": "team-a"} | null,
//    "messages": [{"role": "system" | "user" | "assistant" | "tool", "text": "..."}],
//    "response": "..."   (phase "response" only: the answer's text)}
//
//   200 {"action": "allow" | "warn" | "block", "reason": "..."}
//
// Anything else (no connection, a timeout, a non-2xx status, a body that is not that object)
// is a failure: the caller applies the configured on_failure (fail_open or fail_closed), counts
// it and logs it. Connections are pooled (the worker's upstream pool).
#pragma once
#include <boost/asio/awaitable.hpp>
#include <chrono>
#include <string>
#include <string_view>
#include <vector>

#include "upstream/Client.hpp"
#include "upstream/Post.hpp"

namespace sluice::guard {

// The URL, its headers and the timeout (the POST itself is upstream/Post.hpp's).
struct WebhookTarget : upstream::PostTarget {};
// Throws std::invalid_argument when the URL is not http(s).
WebhookTarget makeWebhookTarget(const std::string& url, const std::vector<std::pair<std::string, std::string>>& headers,
                                std::chrono::milliseconds timeout);

struct Verdict {
  enum class Action { Allow, Warn, Block, Failed };
  Action action = Action::Failed;
  std::string reason;  // the webhook's reason, or why it failed
  bool timed_out = false;
};
const char* verdictName(Verdict::Action a);  // "allow" | "warn" | "block" | "failed"

// The verdict for `payload` (a JSON object as above). Never throws.
boost::asio::awaitable<Verdict> review(upstream::Pool& pool, const WebhookTarget& target, const std::string& payload);

// The verdict in a webhook's answer body (for tests); Failed with a reason when malformed.
Verdict parseVerdict(int status, std::string_view body);

}  // namespace sluice::guard
