// ChatCodec: OpenAI Chat Completions <-> canonical form (Canonical.hpp), both directions,
// streaming and not, plus error bodies. Pure functions and per-stream objects; no I/O.
//
// Rules where OpenAI Chat and the canonical form differ (the translation contract):
//  - system and developer messages are hoisted, in order, into Request::system (Anthropic and
//    Gemini have one system prompt); only their text is kept.
//  - message `name`, logit_bias, seed, presence/frequency_penalty, service_tier, store,
//    metadata, prediction, modalities and any unknown field are dropped when translating.
//  - rejected with 400 (no equivalent, and dropping would change the answer): n > 1 toward a
//    provider without it, logprobs/top_logprobs, audio/file content parts, role "function",
//    tools of a type other than "function".
//  - reasoning: an assistant message's `reasoning_content` (DeepSeek / vLLM style) decodes to a
//    Reasoning part; stream deltas `reasoning_content` (or `reasoning`) decode to reasoning
//    deltas. On encode, reasoning is written as `reasoning_content` in responses and deltas,
//    never merged into `content`; reasoning parts are not sent upstream in requests (OpenAI
//    rejects them), and signatures have no OpenAI field and are dropped.
//  - a tool call's signature (Gemini thoughtSignature) is written in responses and stream deltas
//    as tool_calls[].extra_content.google.thought_signature (Google's OpenAI-compatibility
//    field) and read back from assistant tool_calls, responses and deltas; it is not sent to
//    OpenAI upstreams.
//  - usage: prompt_tokens (cache reads and writes included) <-> Usage::input,
//    prompt_tokens_details.cached_tokens <-> Usage::cached,
//    prompt_tokens_details.cache_write_tokens <-> Usage::cache_creation (OpenAI has no such
//    count: the field is the one OpenAI-compatible routers put Anthropic's cache writes in, and
//    is written only when > 0, so an OpenAI client sees it only for an upstream that reports
//    writes), completion_tokens (reasoning included) <-> Usage::output,
//    completion_tokens_details.reasoning_tokens <-> Usage::reasoning (written when > 0). A
//    stream's first chunk that carries usage gives it to the Start event.
//  - refusal text is treated as answer text.
//  - reasoning_effort low/medium/high maps to a thinking budget (kReasoningBudget*).
#pragma once
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "providers/Canonical.hpp"

namespace sluice::providers::openai {

inline constexpr std::int64_t kReasoningBudgetLow = 1024;
inline constexpr std::int64_t kReasoningBudgetMedium = 4096;
inline constexpr std::int64_t kReasoningBudgetHigh = 16384;

// Client request body -> canonical. A 400 ApiError names the offending field.
std::optional<ApiError> decodeChatRequest(std::string_view body, Request& out);
// Canonical -> upstream request body. Streams always ask for usage (stream_options).
std::optional<ApiError> encodeChatRequest(const Request& req, const EncodeOptions& opts, std::string& out);

// Upstream (non-stream) response body -> canonical; a 502 ApiError when it is not one.
std::optional<ApiError> decodeChatResponse(std::string_view body, Response& out);
// Canonical -> client response body.
void encodeChatResponse(const Response& res, std::string& out);

// Error bodies: {"error":{"message","type","param","code"}}.
void encodeChatError(const ApiError& err, std::string& out);
// Reads an upstream error body (any shape; falls back to the raw text) with its status.
ApiError decodeChatError(int status, std::string_view body);

std::string_view finishReasonName(FinishReason f);

std::unique_ptr<StreamDecoder> makeChatStreamDecoder();

struct ChatStreamOptions {
  bool include_usage = false;  // write the usage chunk (the client asked via stream_options)
  std::int64_t created = 0;    // `created` of every chunk; 0: the current time
};
std::unique_ptr<StreamEncoder> makeChatStreamEncoder(const ChatStreamOptions& opts);

}  // namespace sluice::providers::openai
