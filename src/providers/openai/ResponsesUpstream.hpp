// ResponsesUpstream: the OpenAI Responses API as an UPSTREAM format, for a ChatGPT subscription
// channel (ChatGPT's Codex endpoint, https://chatgpt.com/backend-api/codex/responses, which speaks
// only the Responses API). The canonical request encoded as a Responses request, a Responses
// answer (object or stream) decoded into canonical form, and a stream assembled into the answer
// object a non-streaming client wants. Pure functions and per-stream objects; no I/O.
//
// Rules (the Codex endpoint's, as the Codex CLI meets them; EncodeOptions::codex):
//  - it takes streams only (`stream: true`; a non-streaming client's answer is assembled from the
//    stream by assembleResponsesStream), keeps nothing (`store: false`, so reasoning is never
//    replayed by id: reasoning parts of the history are dropped) and requires `instructions`:
//    the system parts joined by a blank line, else kDefaultInstructions;
//  - it refuses max_output_tokens, temperature and top_p, which are dropped (as are stop
//    sequences and the end-user id, which the Responses API has no field for); n > 1 is a 400;
//  - turns become input items: user text and images (input_text / input_image), assistant text
//    (output_text), tool calls (function_call with call_id) and tool results
//    (function_call_output, text content joined); tools are function tools; response_format is
//    text.format; a reasoning budget is reasoning.effort (low, medium, high at ChatCodec's
//    kReasoningBudget* steps) with summary "auto".
//  - answers: output message text -> Text, reasoning summaries -> Reasoning, function_call ->
//    ToolCall (id = call_id); finish ToolCalls when there is a call, Length / ContentFilter for an
//    incomplete answer, else Stop; usage input_tokens (cached included), output_tokens,
//    cached_tokens, reasoning_tokens.
//  - errors: OpenAI's {"error":{...}} or the endpoint's own {"detail":"..."}.
#pragma once
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "providers/Canonical.hpp"

namespace sluice::providers::openai {

inline constexpr std::string_view kDefaultInstructions = "You are a helpful assistant.";

// Canonical -> Responses request body (opts.codex: the Codex endpoint's rules above).
std::optional<ApiError> encodeResponsesRequest(const Request& req, const EncodeOptions& opts, std::string& out);

// A Responses `response` object -> canonical.
std::optional<ApiError> decodeResponsesResponse(std::string_view body, Response& out);

// A whole Responses stream (SSE bytes) -> the `response` object of its last event
// (response.completed / response.incomplete), its `output` filled from the output_item.done
// events when the endpoint left it empty. An error event or response.failed is the error
// returned (its status from the error's code, else 502); a stream without its end, a 502.
std::optional<ApiError> assembleResponsesStream(std::string_view sse, std::string& response_json);

// A Responses client's own request made fit for the Codex endpoint: `model` (when non-empty)
// named, stream true, store false, instructions kDefaultInstructions when it has none, and
// max_output_tokens, temperature and top_p dropped. nullopt when the body is not a JSON object.
std::optional<std::string> codexRequestBody(std::string_view body, std::string_view model);

// Whether an answer body is a Responses stream rather than a JSON object.
bool looksLikeSse(std::string_view body);

// Responses stream bytes -> canonical events.
std::unique_ptr<StreamDecoder> makeResponsesStreamDecoder();

}  // namespace sluice::providers::openai
