// BedrockMock: AWS Bedrock's Converse API as the mock provider speaks it: POST
// /model/{modelId}/converse (a JSON answer) and /model/{modelId}/converse-stream (AWS's binary
// event stream, application/vnd.amazon.eventstream, every frame with its CRCs), behind SigV4: a
// request must carry a signature that verifies with one of the mock's AWS keys, as Bedrock
// checks it (the canonical request rebuilt from the bytes received), else 403 with AWS's
// exception shape ({"message"} and x-amzn-ErrorType). Errors name AWS's exceptions
// (ValidationException, ThrottlingException, ...); a stream's in-band failure is an exception
// frame. Pure functions with no I/O; thread-safe.
#pragma once
#include <boost/json/fwd.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cloud/SigV4.hpp"
#include "http/Server.hpp"
#include "mock/ApiError.hpp"
#include "mock/MockGeneration.hpp"
#include "mock/SseScript.hpp"
#include "mock/ToolPlanner.hpp"

namespace sluice::mock::bedrock {

// The key the mock accepts when none is configured (--aws-key): what tests and the README use.
inline constexpr std::string_view kDefaultAwsKey = "AKIAMOCKACCESSKEY001:mock/secret+AccessKey0000000000000000000";

struct ConverseRequest {
  std::string model;  // from the path, decoded
  std::optional<std::int64_t> max_tokens;
  std::vector<std::string> stop;
  std::int64_t input_tokens = 0;  // estimate: system and per message ceil(bytes/4) + 4
  bool thinking = false;          // additionalModelRequestFields.thinking enabled: a reasoning block first
  ToolDecision tools;
};

std::optional<ApiError> parseConverseRequest(const boost::json::value& body, std::string_view model,
                                             ConverseRequest& out);

// Converse's stopReason for a Generation: end_turn, max_tokens, stop_sequence, tool_use.
const char* stopReason(const Generation& gen);

std::string converseJson(const ConverseRequest& req, const Generation& gen);
// Binary event-stream frames: messageStart, [reasoning], contentBlockStart (tool use) /
// contentBlockDelta / contentBlockStop, messageStop, metadata.
SseScript converseStream(const ConverseRequest& req, const Generation& gen);
// An exception frame (a stream's failure after its 200), its kind from an HTTP status.
std::string exceptionFrame(int status);

// The exception AWS names for a status (429 ThrottlingException, 403 AccessDeniedException...).
const char* exceptionName(int status);
ApiError error(int status, std::string message);
ApiError simulatedFailure(int status);
// {"message": ...}; the exception's name goes in x-amzn-ErrorType (errorResponse).
std::string errorJson(const ApiError& e);
http::Response errorResponse(const ApiError& e, std::string_view request_id);

// Checks the request's SigV4 signature against `keys` (the mock's) at `now` (seconds): nullopt
// when it verifies, else the 403 AWS answers (UnrecognizedClientException for an unknown key id
// or session token, InvalidSignatureException for a signature that does not match or a date too
// far off, MissingAuthenticationTokenException without one).
std::optional<ApiError> verifySignature(const http::Request& req, const std::vector<cloud::AwsCredentials>& keys,
                                        long long now);

}  // namespace sluice::mock::bedrock
