// OpenAIMock: the OpenAI wire format of the mock provider. Parses requests of
// /v1/chat/completions, /v1/completions and /v1/embeddings into small plain structs, and
// renders a Generation as the bodies and SSE events the OpenAI API returns. Pure functions
// with no I/O, so every byte the mock sends is unit-testable; thread-safe.
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

namespace sluice::mock::openai {

inline constexpr std::string_view kSystemFingerprint = "fp_sluicemock";
inline constexpr int kDefaultEmbeddingDimensions = 8;
inline constexpr int kMaxEmbeddingDimensions = 3072;
inline constexpr int kMaxChoices = 128;

// What differs between two otherwise identical answers; injected so builders are deterministic.
struct ResponseMeta {
  std::string id;            // "chatcmpl-..." / "cmpl-..."
  std::int64_t created = 0;  // unix seconds
};

struct ChatRequest {
  std::string model;
  bool stream = false;
  bool include_usage = false;  // stream_options.include_usage
  int n = 1;
  std::optional<std::int64_t> max_tokens;  // max_completion_tokens, else max_tokens
  std::vector<std::string> stop;
  std::int64_t prompt_tokens = 0;  // estimate: per message ceil(bytes/4) + 4
  ToolDecision tools;              // from tools, tool_choice, parallel_tool_calls and the messages
};

struct CompletionRequest {
  std::string model;
  bool stream = false;
  bool include_usage = false;
  int choices = 1;  // n x number of prompts
  std::optional<std::int64_t> max_tokens;
  std::vector<std::string> stop;
  std::int64_t prompt_tokens = 0;
};

struct EmbeddingsRequest {
  std::string model;
  std::vector<std::string> inputs;  // token-array inputs are rendered as text, for hashing only
  int dimensions = kDefaultEmbeddingDimensions;
  bool base64 = false;
  std::int64_t prompt_tokens = 0;
};

// Each parser validates like the OpenAI API does (400 with `param` and `code`) and fills `out`.
std::optional<ApiError> parseChatRequest(const boost::json::value& body, ChatRequest& out);
std::optional<ApiError> parseCompletionRequest(const boost::json::value& body, CompletionRequest& out);
std::optional<ApiError> parseEmbeddingsRequest(const boost::json::value& body, EmbeddingsRequest& out);

std::string chatCompletionJson(const ChatRequest& req, const Generation& gen, const ResponseMeta& meta);
SseScript chatCompletionStream(const ChatRequest& req, const Generation& gen, const ResponseMeta& meta);

std::string completionJson(const CompletionRequest& req, const Generation& gen, const ResponseMeta& meta);
SseScript completionStream(const CompletionRequest& req, const Generation& gen, const ResponseMeta& meta);

std::string embeddingsJson(const EmbeddingsRequest& req);

// GET /v1/models and GET /v1/models/{id}; nullopt when the id is unknown.
std::string modelsJson();
std::optional<std::string> modelJson(std::string_view id);

// Helpers shared by the other formats' parsers (same validation messages).
const char* kindName(const boost::json::value& v);
ApiError invalidType(std::string_view param, std::string_view expected, const boost::json::value& got);
ApiError missingParam(std::string_view param);
// Integers, and doubles with an integral value.
bool asInteger(const boost::json::value& v, std::int64_t& out);

// {"error":{"message","type","param","code"}}
std::string errorJson(const ApiError& e);

ApiError invalidJsonError(std::string_view detail);
ApiError unknownPathError(std::string_view method, std::string_view path);
ApiError methodNotAllowedError(std::string_view method, std::string_view path, std::string_view allowed);
ApiError modelNotFoundError(std::string_view id);
// The injected failure (fail_rate): a realistic type and code for the status.
ApiError simulatedFailure(int status);

}  // namespace sluice::mock::openai
