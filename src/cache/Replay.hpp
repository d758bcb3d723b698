// Replay: a cache Entry rendered for the client that asked, in its own format: a whole response
// body, or a well-formed stream (every event the format uses, usage, and its closing events:
// OpenAI `data: [DONE]`, Anthropic message_delta + message_stop, Gemini the finishReason chunk,
// Responses response.completed). The rendering goes through the same provider encoders a
// translated answer does, so a replay looks like a live answer. Pure functions; thread-safe.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "cache/Entry.hpp"
#include "providers/Canonical.hpp"

namespace sluice::providers::openai {
struct ResponsesEcho;
}

namespace sluice::cache {

struct ReplayOptions {
  // OpenAI `created` / Responses created_at when the entry has none (recorded streams carry
  // none; whole answers keep the original's); 0: the current time.
  std::int64_t created = 0;
  bool include_usage = false;     // OpenAI Chat streams: the client asked for the usage chunk
  bool gemini_json_array = false; // Gemini streamGenerateContent without alt=sse
  // Responses clients: the current request's echoed fields (RequestInfo::responses_echo).
  std::shared_ptr<const providers::openai::ResponsesEcho> responses_echo;
};

// The whole response body (status: Entry::status; content type application/json).
std::string replayWhole(providers::Format client, const Entry& e, const ReplayOptions& opts = {});

// The stream body as chunks in order, one per event group the encoder wrote (write each as it
// comes, or join them: they are the whole body). Content type: text/event-stream, or
// application/json for a Gemini JSON-array stream.
std::vector<std::string> replayStream(providers::Format client, const Entry& e, const ReplayOptions& opts = {});

}  // namespace sluice::cache
