// MockGeneration: what the mock "says", independent of any wire format. Every provider format
// (OpenAI now; Anthropic and Gemini later) renders the same Generation, so the answers, token
// counts and embeddings agree across formats. Pure functions; thread-safe.
#pragma once
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/JsonText.hpp"

namespace sluice::mock {

// The answer of one request: `pieces` content chunks per choice, each one word of a fixed
// sentence ("Hello from sluice mock. ..."), the last possibly cut short by a stop sequence.
struct Generation {
  int choices = 1;
  std::size_t pieces = 0;                 // content chunks per choice == completion tokens per choice
  std::optional<std::string> last_piece;  // replaces piece(pieces-1) when a stop sequence cut it
  bool truncated_by_length = false;       // max_tokens capped the answer
  std::size_t piece_bytes = 0;            // when set, each piece is padded to this size

  // OpenAI's names; other formats map them (e.g. Anthropic end_turn / max_tokens).
  const char* finishReason() const { return truncated_by_length ? "length" : "stop"; }
  std::string piece(std::size_t i) const;
  std::string text() const;  // all pieces of one choice, concatenated
  std::size_t completionTokens() const { return pieces * static_cast<std::size_t>(choices); }
};

// chunks: the configured number of content chunks; max_tokens caps it (finish "length");
// a stop sequence found in the text ends it early (finish "stop").
Generation planGeneration(std::size_t chunks, std::optional<std::int64_t> max_tokens,
                          const std::vector<std::string>& stop, int choices);

// The raw word of piece i, without the separating space.
std::string_view mockWord(std::size_t i);

// Deterministic token estimate: bytes / 4, rounded up.
std::int64_t estimateTokens(std::string_view text);

// A deterministic unit-length vector for a text (same text, same vector).
std::vector<float> embeddingVector(std::string_view text, int dimensions);

// RFC 4648 base64 of raw bytes, with padding.
std::string base64Encode(std::string_view bytes);
// Base64 of the little-endian float32 array, as OpenAI's encoding_format "base64" returns it.
std::string base64Floats(const std::vector<float>& v);

// Random identifiers from a thread-local PRNG: `prefix` + n alphanumerics.
std::string randomId(std::string_view prefix, std::size_t n);
// Thread-local uniform [0, 1).
double randomUnit();

}  // namespace sluice::mock
