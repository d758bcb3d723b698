// MessagesCodec: Anthropic Messages <-> canonical form (Canonical.hpp), both directions,
// streaming and not, plus error bodies. Pure functions and per-stream objects; no I/O.
//
// Rules where Anthropic Messages and the canonical form differ (the translation contract):
//  - max_tokens is required upstream: kDefaultMaxTokens when the client gave none (plus the
//    thinking budget when thinking is on).
//  - `role: "system"` entries inside messages are accepted and hoisted into the system prompt;
//    an empty `tools` array is accepted.
//  - dropped when translating: cache_control, citations, service_tier, container, mcp_servers,
//    top_k toward providers without it, any unknown field.
//  - rejected with 400: document / search_result / server-tool blocks, non-custom tool types
//    (web_search, bash, ...), n > 1, temperature above 1 (Anthropic's range is 0..1),
//    response_format json_schema (no equivalent), max_tokens not above the thinking budget.
//  - JSON mode: response_format json_object becomes an instruction appended to the system
//    prompt (kJsonModeInstruction); Anthropic has no JSON mode switch.
//  - reasoning: thinking blocks <-> Reasoning parts (signature kept), redacted_thinking <->
//    RedactedReasoning. Reasoning without a signature (from OpenAI-format clients) cannot be
//    replayed to Anthropic and is dropped from requests.
//  - a tool call's own signature (Gemini thoughtSignature on a functionCall) is written, in
//    responses and streams, as a carrier thinking block (empty thinking, the signature) just
//    before its tool_use block; replayed, it decodes to a carrier Reasoning part.
//  - tool calls whose arguments are not a JSON object (a truncated model output) are encoded as
//    input {"_raw_arguments": "<text>"} rather than guessed at.
//  - server_tool_use / *_tool_result blocks in responses (server tools) are not surfaced to
//    clients of other formats.
//  - usage: input_tokens counts neither cache reads nor writes, so canonical input =
//    input_tokens + cache_read_input_tokens + cache_creation_input_tokens (the writes from the
//    `cache_creation` split when only it is given), and encoding subtracts them again; thinking
//    tokens are inside output_tokens (Anthropic does not count them apart), so Usage::reasoning
//    from another upstream is not written. A translated stream's message_start carries the
//    usage the upstream told at its start (Gemini's first chunk, an OpenAI-compatible server
//    that reports usage on every chunk; zeros otherwise: OpenAI reports it only at the end),
//    and message_delta carries the whole usage known at the end (input_tokens,
//    cache_read_input_tokens and cache_creation_input_tokens included), which the Anthropic
//    SDKs and Claude Code take over message_start's.
#pragma once
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "providers/Canonical.hpp"

namespace sluice::providers::anthropic {

inline constexpr std::int64_t kDefaultMaxTokens = 4096;
inline constexpr std::string_view kJsonModeInstruction =
    "Respond with a single valid JSON object and nothing else: no prose, no code fences.";

std::optional<ApiError> decodeMessagesRequest(std::string_view body, Request& out);
std::optional<ApiError> encodeMessagesRequest(const Request& req, const EncodeOptions& opts, std::string& out);

std::optional<ApiError> decodeMessagesResponse(std::string_view body, Response& out);
void encodeMessagesResponse(const Response& res, std::string& out);

// Error bodies: {"type":"error","error":{"type","message"}}.
void encodeMessagesError(const ApiError& err, std::string& out);
ApiError decodeMessagesError(int status, std::string_view body);

std::string_view stopReasonName(FinishReason f);

std::unique_ptr<StreamDecoder> makeMessagesStreamDecoder();
std::unique_ptr<StreamEncoder> makeMessagesStreamEncoder();

}  // namespace sluice::providers::anthropic
