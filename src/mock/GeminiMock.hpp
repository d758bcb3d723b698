// GeminiMock: the Gemini API (generativelanguage v1beta) wire format of the mock provider:
// models/{model}:generateContent, :streamGenerateContent (SSE with ?alt=sse, else one JSON array
// streamed element by element), :countTokens, :embedContent, :batchEmbedContents, GET models.
// Request fields are read in camelCase and snake_case, as the API accepts both. Errors are
// Google's {"error":{"code","message","status"}}. Pure functions with no I/O; thread-safe.
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

namespace sluice::mock::gemini {

inline constexpr int kMaxCandidates = 8;

struct GenerateRequest {
  std::string model;  // from the path, without "models/"
  int candidates = 1;
  std::optional<std::int64_t> max_tokens;  // generationConfig.maxOutputTokens
  std::vector<std::string> stop;           // generationConfig.stopSequences
  std::int64_t prompt_tokens = 0;          // estimate: systemInstruction and per content ceil(bytes/4) + 4
  ToolDecision tools;
};

struct EmbedRequest {
  std::vector<std::string> texts;  // one per request (batch) or one
  int dimensions = 8;              // outputDimensionality
};

std::optional<ApiError> parseGenerateRequest(const boost::json::value& body, std::string_view model,
                                             GenerateRequest& out);
// {"contents":[...]} or {"generateContentRequest":{...}}
std::optional<ApiError> parseCountTokensRequest(const boost::json::value& body, std::int64_t& tokens);
std::optional<ApiError> parseEmbedRequest(const boost::json::value& body, bool batch, EmbedRequest& out);

// "STOP" or "MAX_TOKENS".
const char* finishReason(const Generation& gen);

std::string generateJson(const GenerateRequest& req, const Generation& gen, std::string_view response_id);
// sse: "data: {...}\r\n\r\n" events; else the elements of one JSON array ("[", ",\r\n", "]").
SseScript generateStream(const GenerateRequest& req, const Generation& gen, std::string_view response_id, bool sse);
std::string countTokensJson(std::int64_t tokens);
std::string embedJson(const EmbedRequest& req, bool batch);

// One page of the model list: at most `page_size` models from `page_token` (nextPageToken).
std::string modelsJson(std::size_t page_size = 1000, std::string_view page_token = {});
std::optional<std::string> modelJson(std::string_view name);  // name without "models/"

// {"error":{"code","message","status"}}
std::string errorJson(const ApiError& e);
// The canonical status name for an HTTP status (429 RESOURCE_EXHAUSTED, 503 UNAVAILABLE...).
const char* statusName(int status);
ApiError error(int status, std::string message);
ApiError simulatedFailure(int status);
ApiError modelNotFound(std::string_view name);

}  // namespace sluice::mock::gemini
