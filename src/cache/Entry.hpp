// Entry: one cached answer, in the canonical form so it can be rendered for a client of any
// format, whole or streamed (Replay.hpp). Plain data; immutable once stored and shared as
// shared_ptr<const Entry> between threads.
//
// It keeps what the canonical Response holds (text, reasoning and its signatures, tool calls,
// finish reason, usage, id, model) plus the delta boundaries of a recorded stream, so a replayed
// stream has the original's rhythm of events and, rendered in the original format, the same
// bytes as a fresh rendering of the original. Fields the canonical form does not hold (logprobs,
// system_fingerprint, citations) are not kept; CacheKey marks requests that ask for them as
// uncacheable.
#pragma once
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "providers/Canonical.hpp"

namespace sluice::cache {

struct Entry {
  int status = 200;                // of the original answer (only successes are recorded)
  providers::Response response;    // content: Text, Reasoning, RedactedReasoning, ToolCall parts
  providers::Usage start_usage;    // what a stream's start reported (Anthropic message_start)
  // pieces[i]: the lengths of the deltas that made content[i]'s text (Text, Reasoning) or
  // arguments (ToolCall), in order; summing to its size. Empty: one piece (a whole answer).
  std::vector<std::vector<std::uint32_t>> pieces;
  std::int64_t stored_at_ms = 0;   // Unix ms when recorded (for an Age header)

  // Bytes the entry is charged for against a cache's bound (its serialized size).
  std::size_t byteSize() const;
};

// The stored form: a versioned, length-prefixed binary encoding (compact, no JSON parse on hit).
std::string serializeEntry(const Entry& e);
// nullopt when `bytes` is not an entry of this version (corrupt, truncated or older).
std::optional<Entry> parseEntry(std::string_view bytes);

}  // namespace sluice::cache
