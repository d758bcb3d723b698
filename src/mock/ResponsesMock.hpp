// ResponsesMock: the OpenAI Responses API (POST /v1/responses) wire format of the mock provider.
// Renders a Generation as the Response object (output message / function_call items, usage) and
// as the named SSE events of a streamed response (response.created, response.in_progress,
// response.output_item.added, response.content_part.added, response.output_text.delta ...,
// response.function_call_arguments.delta/.done, response.completed), each data carrying "type"
// and "sequence_number". Errors use the OpenAI format. Pure functions with no I/O; thread-safe.
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

namespace sluice::mock::responses {

struct ResponsesRequest {
  std::string model;
  bool stream = false;
  std::optional<std::int64_t> max_output_tokens;
  std::int64_t input_tokens = 0;  // estimate: instructions and per input item ceil(bytes/4) + 4
  ToolDecision tools;
  // Request fields the Response object echoes (instructions, tools, tool_choice, temperature...),
  // rendered once as `"key":value,...` text.
  std::string echo;
};

struct ResponseMeta {
  std::string id;               // "resp_..."
  std::int64_t created_at = 0;  // unix seconds
  std::string message_id;       // "msg_..." of the output message
};

std::optional<ApiError> parseResponsesRequest(const boost::json::value& body, ResponsesRequest& out);

std::string responseJson(const ResponsesRequest& req, const Generation& gen, const ResponseMeta& meta);
SseScript responseStream(const ResponsesRequest& req, const Generation& gen, const ResponseMeta& meta);

}  // namespace sluice::mock::responses
