// Anthropic Messages as Vertex AI takes them (rawPredict / streamRawPredict): the model is in the
// URL, so the body names none, and the API version is a body field ("vertex-2023-10-16") rather
// than the anthropic-version header. Pure; any thread.
#pragma once
#include <optional>
#include <string>
#include <string_view>

namespace sluice::providers::anthropic {

inline constexpr std::string_view kVertexAnthropicVersion = "vertex-2023-10-16";

// `body` without "model" and with "anthropic_version" (the client's own value kept when it gave
// one); nullopt when it is not a JSON object.
std::optional<std::string> vertexMessagesBody(std::string_view body);

}  // namespace sluice::providers::anthropic
