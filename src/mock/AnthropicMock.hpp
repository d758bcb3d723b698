// AnthropicMock: the Anthropic Messages wire format of the mock provider (POST /v1/messages,
// /v1/messages/count_tokens, GET /v1/models, also under /anthropic). Parses requests into plain
// structs (validating like the API: 400 invalid_request_error "field: message") and renders a
// Generation as the Message object and the SSE events (message_start, content_block_start, ping,
// content_block_delta text_delta / input_json_delta, content_block_stop, message_delta,
// message_stop). Pure functions with no I/O; thread-safe.
#pragma once
#include "mock/ApiError.hpp"
#include "mock/MockGeneration.hpp"
#include "mock/SseScript.hpp"
#include "mock/ToolPlanner.hpp"

#include <boost/json/fwd.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace sluice::mock::anthropic {

struct MessagesRequest {
  std::string model;
  bool stream = false;
  std::int64_t max_tokens = 0;
  std::vector<std::string> stop;    // stop_sequences
  std::int64_t input_tokens = 0;    // estimate: system and per message ceil(bytes/4) + 4
  ToolDecision tools;
};

std::optional<ApiError> parseMessagesRequest(const boost::json::value& body, MessagesRequest& out);
// The body of count_tokens: like messages, without max_tokens. Fills the input token estimate.
std::optional<ApiError> parseCountTokensRequest(const boost::json::value& body, std::int64_t& input_tokens);

// Anthropic's stop_reason for a Generation: end_turn, max_tokens, stop_sequence, tool_use.
const char* stopReason(const Generation& gen);

std::string messageJson(const MessagesRequest& req, const Generation& gen, std::string_view id);
SseScript messageStream(const MessagesRequest& req, const Generation& gen, std::string_view id);
std::string countTokensJson(std::int64_t input_tokens);

// One page of the model list: at most `limit` models after `after_id` (has_more, last_id).
std::string modelsJson(std::size_t limit = 1000, std::string_view after_id = {});
std::optional<std::string> modelJson(std::string_view id);

// {"type":"error","error":{"type","message"},"request_id"}
std::string errorJson(const ApiError& e, std::string_view request_id);
// The error type Anthropic uses for an HTTP status (429 rate_limit_error, 529 overloaded_error...).
const char* errorType(int status);
ApiError error(int status, std::string message);
ApiError simulatedFailure(int status);

}  // namespace sluice::mock::anthropic
