// MockKnobs: the behaviour of one mock answer (latency, chunking, failures), taken from the
// process-wide MockOptions and overridden per request by x-mock-* headers. Pure; thread-safe.
#pragma once
#include "http/Server.hpp"
#include "mock/MockGeneration.hpp"
#include "mock/MockServer.hpp"

#include <optional>
#include <utility>
#include <vector>
#include <string>

namespace sluice::mock {

inline constexpr int kMaxKnobChunks = 100'000;
inline constexpr int kMaxKnobDelayMs = 600'000;

struct MockKnobs {
  int ttfb_ms = 0;
  int chunks = 8;
  int chunk_interval_ms = 0;
  double fail_rate = 0.0;
  int fail_status = 500;
  int reset_after = -1;                   // break the connection after N content chunks; -1 = never
  std::optional<int> retry_after_s;       // Retry-After on a failure
  std::optional<std::string> fail_body;   // raw body of a failure, instead of the OpenAI error
  std::optional<std::string> fail_key;    // fail only requests made with this upstream key (every fault:
                                          // the failure, the error event, the reset, the stall)
  int piece_bytes = 0;                    // pad each content piece to this many bytes (0: natural)
  bool echo = false;                      // answer with the last user text (and put it in tool arguments)
  bool echo_key = false;                  // a failure's message quotes the credential received
  double error_event_rate = 0.0;          // a stream's in-band error event (its kind from fail_status)
  int error_event_after = 0;              // ... after this many content chunks
  int stall_after = -1;                   // stop sending after N content chunks, hold the connection
  double stall_rate = 1.0;                // ... this share of streams
  double slow_rate = 0.0;                 // the first byte waits slow_ms (not ttfb_ms) this often
  int slow_ms = 0;
  ExtraUsage usage;  // cache and reasoning counts the answer reports
  // Headers a successful answer carries (a subscription endpoint's usage windows).
  std::vector<std::pair<std::string, std::string>> extra_headers;

  static MockKnobs fromOptions(const MockOptions& o);
};

// Checks the process-wide options; returns a message naming the bad option, or nullopt.
std::optional<std::string> validateOptions(const MockOptions& o);

// Applies x-mock-ttfb-ms, x-mock-chunks, x-mock-chunk-interval-ms, x-mock-fail-rate,
// x-mock-fail-status, x-mock-reset-after, x-mock-retry-after, x-mock-fail-body,
// x-mock-fail-key, x-mock-chunk-bytes, x-mock-echo (1/true: the answer text, and every string
// of tool-call arguments, is the last user turn's text; how tests see what the upstream got),
// x-mock-echo-key (1/true: a simulated failure's message quotes the API key the request carried,
// as real providers' "Incorrect API key provided: sk-..." do; how tests see a gateway mask it),
// x-mock-error-event-rate and x-mock-error-event-after (a 200 stream that carries the format's
// error event after N content chunks and ends: OpenAI's {"error":...} chunk, Responses'
// response.failed, Anthropic's `error` event, Gemini's error chunk; overload for fail-status 503
// or 529, rate limit for 429, a server error otherwise), x-mock-stall-after (a stream sends N
// content chunks, then nothing more while the connection stays open) and x-mock-stall-rate (the
// share of streams that do; 1 by default), x-mock-slow-rate and
// x-mock-slow-ms (that share of answers waits slow-ms before its first byte instead of ttfb-ms),
// x-mock-usage (`cache_read=N,cache_write=N,reasoning=N`, any of them: the answer's usage reports
// that many cache reads, cache writes and reasoning tokens, as ExtraUsage says).
// Returns a message naming the malformed header, or nullopt.
std::optional<std::string> applyKnobHeaders(const http::Request& req, MockKnobs& k);

}  // namespace sluice::mock
