// MockGeneration: what the mock "says", independent of any wire format. Every provider format
// (OpenAI Chat/Completions/Responses, Anthropic Messages, Gemini) renders the same Generation,
// so the answers, tool calls, token counts and embeddings agree across formats.
// Pure functions; thread-safe.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/JsonText.hpp"

namespace sluice::mock {

// Prompt-cache and reasoning counts an answer reports beside its own (x-mock-usage), each format
// in its own terms: the cache reads and writes are prompt tokens on top of the request's own
// (Anthropic's input_tokens leaves them out, OpenAI's prompt_tokens and Gemini's
// promptTokenCount hold them; Gemini reports no writes), the reasoning tokens are answer tokens
// on top of the text's (inside OpenAI's completion_tokens and Anthropic's output_tokens, beside
// Gemini's candidatesTokenCount).
struct ExtraUsage {
  std::int64_t cache_read = 0;
  std::int64_t cache_write = 0;
  std::int64_t reasoning = 0;
};

// One function/tool call the mock decided to make. Ids are format-specific prefixes
// ("call_", "toolu_", "fc_") + `id_token`, so one answer has the same ids in every format.
struct ToolCall {
  std::string name;
  std::string arguments;            // a JSON object, compact; a custom tool's: its free-form input
  std::string ns;                   // Responses: the namespace the tool was declared in
  bool custom = false;              // Responses: a {"type":"custom"} (free-form input) tool
  std::string id_token;             // random alphanumerics
  std::vector<std::string> deltas;  // `arguments` cut for streaming; concatenated == arguments
};

struct ToolCalls {
  std::vector<ToolCall> calls;
  std::vector<std::pair<std::size_t, std::size_t>> steps;  // content step -> (call, delta)
};

// The answer of one request: `pieces` content chunks per choice, each one word of a fixed
// sentence ("Hello from sluice mock. ..."), or of `script` when set, the last possibly cut short
// by a stop sequence. When `tools` is set the answer is tool calls instead of text, and a content
// step is one argument delta of one call.
struct Generation {
  int choices = 1;
  std::size_t pieces = 0;                                  // content steps per choice (== completion tokens for text)
  std::optional<std::string> last_piece;                   // replaces piece(pieces-1) when a stop sequence cut it
  bool truncated_by_length = false;                        // max_tokens capped the answer
  std::size_t piece_bytes = 0;                             // when set, each piece is padded to this size
  std::optional<std::string> stop_sequence;                // the stop sequence that ended the text
  std::shared_ptr<const std::vector<std::string>> script;  // text pieces instead of the sentence
  std::shared_ptr<const ToolCalls> tools;                  // tool calls instead of text
  ExtraUsage extra;                                        // reported beside the counts above

  bool hasToolCalls() const { return tools && !tools->calls.empty(); }
  // OpenAI's names; other formats map them (e.g. Anthropic end_turn / max_tokens / tool_use).
  const char* finishReason() const { return hasToolCalls() ? "tool_calls" : truncated_by_length ? "length" : "stop"; }
  std::string piece(std::size_t i) const;
  std::string text() const;  // all pieces of one choice, concatenated
  // Text: one token per piece; tool calls: the estimate of their names and arguments.
  std::size_t tokensPerChoice() const;
  std::size_t completionTokens() const { return tokensPerChoice() * static_cast<std::size_t>(choices); }
};

// chunks: the configured number of content chunks; max_tokens caps it (finish "length");
// a stop sequence found in the text ends it early (finish "stop").
Generation planGeneration(std::size_t chunks, std::optional<std::int64_t> max_tokens,
                          const std::vector<std::string>& stop, int choices);

// A given text (e.g. the answer to a tool result) said in min(chunks, code points) pieces, with the
// same max_tokens / stop handling as planGeneration.
Generation planReply(std::string_view text, std::size_t chunks, std::optional<std::int64_t> max_tokens,
                     const std::vector<std::string>& stop, int choices);

// The rest of the usual sentence of `chunks` pieces after `partial` when `partial` is a start of
// it made of whole pieces (white space at its end ignored); else the usual sentence.
Generation planContinuation(std::string_view partial, std::size_t chunks, std::optional<std::int64_t> max_tokens,
                            const std::vector<std::string>& stop, int choices);

// Tool calls as the answer: each call's arguments cut into clamp(chunks, 1, 4) deltas.
Generation planToolCalls(std::vector<ToolCall> calls, std::size_t chunks, int choices);

// `text` cut into at most n pieces of about equal length, on UTF-8 code point boundaries.
std::vector<std::string> splitText(std::string_view text, std::size_t n);
// The first `n` code points of `text`.
std::string_view utf8Prefix(std::string_view text, std::size_t n);

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
