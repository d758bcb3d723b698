// Restorer: puts redacted values back where the model returned an intact token, in a stream
// of text chunks (or all at once). A token split across chunks at any byte is still restored:
// feed() holds back only a tail that could still begin a token (at most kMaxTokenLen bytes)
// and passes everything else on at once. A token that does not open under the cipher
// (altered, relabelled, another scope's) is passed on as it is and counted as tampered.
//
// Where the tokens sit decides how a value is written back (jsonDepth):
//   0  plain text: decoded message content / text deltas;
//   1  inside JSON string literals of the text: decoded tool-call arguments (a JSON document,
//      streamed as fragments), or message content in raw JSON bytes; the value is JSON-escaped
//      (a PEM key's newlines become \n, quotes \");
//   2  tool-call arguments inside raw JSON bytes (the arguments string embedded in an SSE
//      event): escaped twice.
// Tokens are made of JSON-safe characters, so they read the same at every depth.
// Use one Restorer per independent text stream (per choice's content, per tool call's
// arguments); call finish() when that stream ends.
// Thread-safety: none; a Restorer belongs to one response.
#pragma once
#include <array>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace sluice::redact {

class TokenCipher;

struct RestoreStats {
  std::size_t restored = 0;
  std::size_t tampered = 0;
};

// The tokens one request sealed, with their values: filled by that request's Redactor, read by
// the Restorers of its answer, so a token the model copies back is put back without decrypting
// it (an AES-SIV open costs ~0.2 us and a base64 decode; a lookup here tens of nanoseconds).
// Sealing is deterministic, so the value found here is the one open() would give; a token not
// found (an earlier turn's, a tampered one) is opened as usual. Bounded: past kMaxEntries further
// tokens are simply not remembered.
// Thread-safety: filled before the answer starts, then only read.
class SealMemo {
 public:
  static constexpr std::size_t kMaxEntries = 16;  // inline: the memo is one small allocation
  void add(std::string_view token, std::string_view value);
  std::optional<std::string_view> find(std::string_view token) const;  // the value
  std::size_t size() const { return count_; }

 private:
  struct Entry {
    std::size_t at, tokenLen, valueLen;  // token then value, in bytes_
  };
  std::array<Entry, kMaxEntries> entries_{};
  std::size_t count_ = 0;
  std::string bytes_;
};

class Restorer {
 public:
  // `cipher` (and `memo`, if given) must outlive the Restorer. jsonDepth: 0, 1 or 2 (see
  // above); higher is clamped.
  explicit Restorer(const TokenCipher& cipher, int jsonDepth = 0, const SealMemo* memo = nullptr);

  // Appends to `out` the restored text that is final so far; keeps a possible token's start.
  void feed(std::string_view chunk, std::string& out);
  // Flushes what is held back (an unfinished token goes out as it is).
  void finish(std::string& out);

  const RestoreStats& stats() const { return stats_; }
  std::size_t heldBytes() const { return held_.size(); }

 private:
  void process(std::string_view s, std::string& out);
  bool open(std::string& out, std::string_view token, std::string_view label, std::string_view payload) const;
  const TokenCipher& cipher_;
  const SealMemo* memo_;
  int depth_;
  std::string held_;
  std::string scratch_;
  RestoreStats stats_;
};

// One-shot: the whole text, restored. `stats` (optional) is added to.
std::string restoreAll(std::string_view text, const TokenCipher& cipher, int jsonDepth = 0,
                       RestoreStats* stats = nullptr, const SealMemo* memo = nullptr);

// Appends `s` with JSON string escaping (no quotes): " \ and control characters.
void appendJsonEscaped(std::string& out, std::string_view s);

}  // namespace sluice::redact
