// Framing: a strict reading of RFC 9112 message framing, applied to the raw bytes of a request
// head before Beast parses it. Beast 1.81 is lenient exactly where two HTTP implementations can
// disagree on where a request ends (it ignores a Transfer-Encoding whose last coding is not
// chunked, takes repeated Content-Length, unfolds obs-fold), so a front proxy and Sluice could
// frame the same bytes differently. Anything that could be read two ways is refused instead; the
// server answers 400 (501 for a transfer coding it does not implement) and closes the connection.
// Pure code, no I/O; a HeadScanner belongs to one request.
#pragma once
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/Error.hpp"

namespace sluice::http {

enum class BodyFraming { None, Length, Chunked };

struct HeadVerdict {
  enum class State { Incomplete, Complete, Refused };
  State state = State::Incomplete;
  std::size_t head_bytes = 0;            // Complete: request line through the blank line, inclusive
  BodyFraming body = BodyFraming::None;  // Complete
  std::uint64_t content_length = 0;      // Complete, body == Length
  Error error;                           // Refused: a client error whose message says what to fix

  bool complete() const { return state == State::Complete; }
  bool refused() const { return state == State::Refused; }
};

// Checks a request head as its bytes arrive. feed() is given everything received for this
// request so far, starting at its first byte (the view may move between calls, its contents only
// grow); it examines each byte once, so a head dripped in byte by byte costs linear time. A
// refusal comes as soon as the offending line is complete (a bare LF or CR at once), not only
// when the whole head is in.
class HeadScanner {
 public:
  const HeadVerdict& feed(std::string_view bytes);

 private:
  void refuse(int status, std::string message);
  void requestLine(std::string_view line);
  void fieldLine(std::string_view line);
  void endOfHead(std::size_t head_bytes);

  HeadVerdict verdict_;
  std::size_t cursor_ = 0;      // next byte to examine
  std::size_t line_start_ = 0;  // first byte of the line being received
  bool first_line_ = true;
  int version_ = 0;  // 10 or 11 once the request line is in
  int content_lengths_ = 0;
  int transfer_encodings_ = 0;
  int hosts_ = 0;
  std::string host_;                      // lower-cased
  std::optional<std::string> authority_;  // lower-cased, from an absolute-form target
};

// The whole head at once (tests, the fuzzer): Incomplete if `bytes` ends before the blank line.
HeadVerdict checkRequestHead(std::string_view bytes);

// A chunk's extensions as Beast hands them over (already split from the size, grammar-checked):
// refused when longer than kMaxChunkExtension or holding a control character (Beast lets a bare
// LF, NUL or DEL through inside a quoted extension value).
inline constexpr std::size_t kMaxChunkExtension = 1024;
std::optional<Error> checkChunkExtension(std::string_view extensions);

// RFC 9110 tchar: a byte a field name (or method, or token) may hold.
bool isTchar(char c);
// A byte a field value may hold: field-vchar, SP, HTAB and obs-text (0x80-0xFF); no CR, LF, NUL
// or other control byte.
bool isFieldByte(unsigned char c);

}  // namespace sluice::http
