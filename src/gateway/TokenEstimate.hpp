// TokenEstimate: the answer to a token-count request (Anthropic's /v1/messages/count_tokens,
// Gemini's countTokens) when the model's channel cannot count (its provider has no such call):
// an estimate, never 0, marked as one (x-sluice-token-count: estimate). Rule: the bytes of the
// body's text (every string value but inline file or image data and the model name) over 4,
// rounded up, plus 3 a message or turn (the framing every chat format adds), plus 1,600 an inline
// image or file (`data`, Anthropic's cost of a ~1100x1100 image); at least 1. Pure; thread-safe.
#pragma once
#include <cstdint>
#include <optional>
#include <string_view>

namespace sluice::gateway {

// nullopt: the body is not a JSON object.
std::optional<std::int64_t> estimateCountTokens(std::string_view body);

}  // namespace sluice::gateway
