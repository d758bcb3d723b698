// Recorder: builds the cache Entry of one answer as it passes: fed a stream's bytes in one
// wire format (any split), or handed a whole response body. One per request; not thread-safe.
// Memory is bounded: past `max_bytes` of content it stops keeping anything and gives up.
//
// Which bytes to feed: those of a format that has a decoder: OpenAI Chat, Anthropic Messages,
// Gemini (SSE, i.e. alt=sse; a JSON-array stream is given up on). The simplest rule in the relay
// is "the upstream's bytes in the upstream's format" (the OpenAI upstream always reports usage
// there, since the gateway asks for it). OpenAI Responses is decoded as an upstream's (a ChatGPT
// subscription channel's); a Responses client of another channel is recorded from the Chat,
// Anthropic or Gemini bytes its answer is translated from.
#pragma once
#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "cache/Entry.hpp"
#include "providers/Canonical.hpp"

namespace sluice::cache {

inline constexpr std::size_t kDefaultMaxEntryBytes = 1u << 20;

class Recorder {
 public:
  // Null when `f` cannot be decoded.
  static std::unique_ptr<Recorder> forStream(providers::Format f, std::size_t max_bytes = kDefaultMaxEntryBytes);
  ~Recorder();

  // Bytes of the stream as they pass; cheap once given up.
  void feed(std::string_view bytes);
  // The stream ended cleanly on the wire (call only then): the entry, or nullopt when the
  // answer is not worth keeping: an error event, no finish reason, a truncated event, over the
  // bound, or a JSON-array (non-SSE) stream. why() says which.
  std::optional<Entry> finish();

  bool gaveUp() const { return !why_.empty(); }
  const std::string& why() const { return why_; }

  // A whole (non-streamed) success body in format `f` -> entry; nullopt when it is not a
  // 2xx, not decodable, or over the bound (`why`, when given, says which).
  static std::optional<Entry> fromWhole(providers::Format f, int status, std::string_view body,
                                        std::size_t max_bytes = kDefaultMaxEntryBytes, std::string* why = nullptr);
  // A whole answer as the upstream sent it: fromWhole for an object body, or the JSON array a
  // Gemini stream requested without alt=sse is (its elements are the stream's chunks).
  static std::optional<Entry> fromAnswer(providers::Format f, int status, std::string_view body,
                                         std::size_t max_bytes = kDefaultMaxEntryBytes);

 private:
  class Sink;
  Recorder(std::unique_ptr<providers::StreamDecoder> dec, std::size_t max_bytes);
  void giveUp(std::string why);

  std::unique_ptr<providers::StreamDecoder> decoder_;
  std::unique_ptr<Sink> sink_;
  bool first_ = true;
  std::string why_;
};

}  // namespace sluice::cache
