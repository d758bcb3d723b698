// Helpers shared by the fuzz harnesses: fuzzer-chosen splits of a byte stream, the formats and
// wires that exist at build time, and the output checks (valid JSON, SSE data payloads).
//
// Stream harness inputs are: [option byte] [split byte] [payload...]. The payload is plain
// upstream bytes (an SSE fixture in the seeds), so mutations stay meaningful; the split byte
// picks the chunking (one byte at a time, small, medium or large chunks) and seeds the chunk
// sizes.
#pragma once
#include <boost/json/parse.hpp>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "core/JsonText.hpp"
#include "gateway/Wire.hpp"
#include "providers/Canonical.hpp"

namespace sluice::fuzz {

// Aborts with a message: libFuzzer records the input as a crash.
[[noreturn]] inline void fail(const char* what, std::string_view detail = {}) {
  std::fprintf(stderr, "FUZZ INVARIANT VIOLATED: %s\n", what);
  if (!detail.empty()) {
    std::fputs("---\n", stderr);
    std::fwrite(detail.data(), 1, detail.size(), stderr);  // may hold NUL bytes
    std::fputs("\n---\n", stderr);
  }
  std::abort();
}

// Chunk sizes for splitting a payload, from one fuzzer-chosen byte. Deterministic.
class Splits {
 public:
  explicit Splits(std::uint8_t seed) : state_(0x9E3779B9u * (seed + 1u) | 1u) {
    switch (seed & 3u) {
      case 0: max_ = 1; break;       // byte by byte: every boundary lands everywhere
      case 1: max_ = 8; break;
      case 2: max_ = 96; break;
      default: max_ = seed == 0xFF ? SIZE_MAX : 2048; break;  // 0xFF: all in one piece
    }
  }
  std::size_t next(std::size_t remaining) {
    if (max_ == SIZE_MAX) return remaining;
    state_ ^= state_ << 13;
    state_ ^= state_ >> 17;
    state_ ^= state_ << 5;
    std::size_t n = 1 + state_ % max_;
    return n < remaining ? n : remaining;
  }

 private:
  std::uint32_t state_;
  std::size_t max_;
};

// Calls feed(chunk) for consecutive chunks of `payload`; stops early when feed returns false.
template <class Feed>
bool feedSplit(std::string_view payload, std::uint8_t seed, Feed&& feed) {
  Splits s(seed);
  std::size_t pos = 0;
  while (pos < payload.size()) {
    std::size_t n = s.next(payload.size() - pos);
    if (!feed(payload.substr(pos, n))) return false;
    pos += n;
  }
  return true;
}

// The translator formats that exist in this build: formatName() names every enumerator and
// answers "?" past the last, so new members (Gemini, Responses, ...) are fuzzed without an edit.
inline const std::vector<providers::Format>& formats() {
  static const std::vector<providers::Format> all = [] {
    std::vector<providers::Format> v;
    for (int i = 0; i < 32; ++i) {
      auto f = static_cast<providers::Format>(i);
      if (providers::formatName(f) != "?") v.push_back(f);
    }
    if (v.size() < 2) fail("fewer than two translator formats found");
    return v;
  }();
  return all;
}
inline providers::Format formatAt(unsigned i) { return formats()[i % formats().size()]; }

inline const std::vector<gateway::Wire>& wires() {
  static const std::vector<gateway::Wire> all = [] {
    std::vector<gateway::Wire> v;
    for (int i = 0; i < 32; ++i) {
      auto w = static_cast<gateway::Wire>(i);
      if (std::string_view(gateway::wireName(w)) != "?") v.push_back(w);
    }
    if (v.empty()) fail("no wires found");
    return v;
  }();
  return all;
}

// Generated ids differ between two runs over the same input (the Responses encoder makes a
// random 32-hex-digit id when the upstream sent none): blank every run of 32+ hex digits
// before comparing outputs.
inline std::string maskRandomIds(std::string_view s) {
  auto hex = [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); };
  std::string out;
  out.reserve(s.size());
  std::size_t i = 0;
  while (i < s.size()) {
    std::size_t j = i;
    while (j < s.size() && hex(s[j])) ++j;
    if (j - i >= 32) {
      out.append("<id>");
    } else {
      out.append(s.substr(i, j - i));
      if (j < s.size()) out.push_back(s[j]);
      ++j;
    }
    i = j;
  }
  return out;
}

// A stream as its SSE events: line ends normalized to LF, events split at blank lines, empty
// events (stray blank lines) dropped; an unfinished last event is kept. Two byte streams with
// the same events mean the same to a client.
inline std::vector<std::string> sseEvents(std::string_view raw) {
  std::string lf;
  lf.reserve(raw.size());
  for (std::size_t i = 0; i < raw.size(); ++i) {
    if (raw[i] == '\r') {
      lf.push_back('\n');
      if (i + 1 < raw.size() && raw[i + 1] == '\n') ++i;
    } else {
      lf.push_back(raw[i]);
    }
  }
  std::vector<std::string> events;
  std::size_t pos = 0;
  while (pos < lf.size()) {
    while (pos < lf.size() && lf[pos] == '\n') ++pos;
    if (pos >= lf.size()) break;
    auto end = lf.find("\n\n", pos);
    if (end == std::string::npos) end = lf.size();
    events.push_back(lf.substr(pos, end - pos));
    pos = end;
  }
  return events;
}

inline bool isJson(std::string_view text) {
  boost::system::error_code ec;
  sluice::parseJson(text, ec);  // the gateway's own nesting limit
  return !ec;
}

// Every event of a stream the gateway wrote must carry JSON in its data lines ("[DONE]"
// aside) and end with a blank line (LF or, as Gemini writes them, CRLF line ends).
inline void checkSseOutput(std::string_view raw, const char* who) {
  std::string lf;
  lf.reserve(raw.size());
  for (std::size_t i = 0; i < raw.size(); ++i)
    if (!(raw[i] == '\r' && i + 1 < raw.size() && raw[i + 1] == '\n')) lf.push_back(raw[i]);
  std::string_view out = lf;
  std::size_t pos = 0;
  while (pos < out.size()) {
    auto end = out.find("\n\n", pos);
    if (end == std::string_view::npos) fail(who, "stream output ends inside an event");
    std::string_view ev = out.substr(pos, end - pos);
    std::size_t lp = 0;
    while (lp <= ev.size()) {
      auto le = ev.find('\n', lp);
      if (le == std::string_view::npos) le = ev.size();
      std::string_view line = ev.substr(lp, le - lp);
      if (line.starts_with("data:")) {
        auto data = line.substr(5);
        if (data.starts_with(' ')) data.remove_prefix(1);
        if (data != "[DONE]" && !isJson(data)) fail(who, ev);
      }
      lp = le + 1;
    }
    pos = end + 2;
  }
}

}  // namespace sluice::fuzz
