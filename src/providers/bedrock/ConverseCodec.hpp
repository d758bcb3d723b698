// ConverseCodec: AWS Bedrock's Converse and ConverseStream <-> canonical form (Canonical.hpp), as
// an upstream: requests encoded, answers, errors and event streams decoded. Every model family
// Bedrock serves through Converse (Anthropic, Nova, Llama, Mistral...) takes the same shape.
// Pure functions and per-stream objects; no I/O (signing is cloud/SigV4, the framing of the
// stream cloud/EventStream).
//
// Rules where Converse and the canonical form differ (the translation contract):
//  - the model goes in the URL (/model/{id}/converse or /converse-stream), not the body.
//  - images must be inline bytes (png, jpeg, gif, webp): an image by URL is refused with a 400
//    naming the part; so are n > 1 and response_format json_schema; json_object becomes an
//    instruction appended to the system prompt, as for Anthropic.
//  - inferenceConfig carries maxTokens, temperature, topP and stopSequences; top_k and a thinking
//    budget go in additionalModelRequestFields for Anthropic models only (an `anthropic.` id, or
//    an inference profile of one, e.g. `us.anthropic.`), and are dropped for the others, which do
//    not take them under those names. With thinking on, maxTokens defaults to 4096 + the budget.
//  - tools: toolConfig.tools[].toolSpec with inputSchema.json; tool_choice auto, required (any)
//    and a named tool map to Converse's; "none" leaves toolChoice out, and leaves toolConfig out
//    when the conversation has no tool blocks. Bedrock refuses tool blocks without a toolConfig,
//    so a call in the history of a tool the request no longer offers is declared with an open
//    schema.
//  - a tool call's arguments that are not a JSON object (a truncated model output) are sent as
//    input {"_raw_arguments": "<text>"}; results are text and image blocks, status error when
//    the result was one.
//  - reasoning: reasoningContent.reasoningText <-> Reasoning (signature kept), redactedContent
//    <-> RedactedReasoning; reasoning without a signature cannot be replayed and is dropped, as for
//    Anthropic. Dropped: parallel_tool_calls, user, any unknown field.
//  - usage: inputTokens counts neither cache reads nor writes, so canonical input = inputTokens +
//    cacheReadInputTokens + cacheWriteInputTokens.
//  - Converse answers carry no id and no model: the relay names them.
//  - stream: messageStart -> Start; contentBlockStart(toolUse) -> ToolCallStart;
//    contentBlockDelta text / toolUse.input / reasoningContent -> Text / ToolCallArgs / Reasoning,
//    ReasoningSignature, RedactedReasoning; messageStop -> Finish; metadata -> Usage, then Done.
//    An exception message (throttlingException, modelStreamErrorException, ...) -> Error with the
//    status AWS gives that exception; a frame that fails its checksum fails the stream.
#pragma once
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "providers/Canonical.hpp"

namespace sluice::providers::bedrock {

inline constexpr std::int64_t kDefaultMaxTokens = 4096;

// Whether `model_id` names an Anthropic model on Bedrock (a foundation model or a cross-region
// inference profile of one).
bool isAnthropicModel(std::string_view model_id);

std::optional<ApiError> encodeConverseRequest(const Request& req, const EncodeOptions& opts, std::string& out);
std::optional<ApiError> decodeConverseResponse(std::string_view body, Response& out);

// An error answer: {"message": "..."} with the exception's name in x-amzn-ErrorType
// ("ThrottlingException:http://..."), which `error_type` is (may be empty).
ApiError decodeConverseError(int status, std::string_view body, std::string_view error_type);

// The status AWS answers an exception with, from its name in either case ("throttlingException",
// "ThrottlingException"); 500 for one it does not know.
int statusForException(std::string_view name);

std::string_view stopReasonName(FinishReason f);

// ConverseStream's body (application/vnd.amazon.eventstream) -> canonical events.
std::unique_ptr<StreamDecoder> makeConverseStreamDecoder();

}  // namespace sluice::providers::bedrock
