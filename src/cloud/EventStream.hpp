// EventStream: AWS's binary event-stream framing (application/vnd.amazon.eventstream), which
// Bedrock's ConverseStream and InvokeModelWithResponseStream answer in. A message is a prelude
// (total length, headers length, CRC32 of those 8 bytes), typed headers, a payload and a CRC32 of
// all that precedes it, every integer big-endian.
// EventStreamDecoder takes the bytes as they arrive, in pieces of any size, and gives out each
// message once it is whole and both its checksums match; a malformed or corrupted stream stops it
// for good with a reason (nothing after a bad frame can be trusted). It holds at most one message
// (bounded by kMaxMessageBytes). encodeEventStreamMessage writes one (the mock and the tests).
// Thread-safety: a decoder belongs to one stream.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace sluice::cloud {

enum class EventHeaderType : uint8_t {
  BoolTrue = 0,
  BoolFalse = 1,
  Byte = 2,
  Short = 3,
  Integer = 4,
  Long = 5,
  Bytes = 6,
  String = 7,
  Timestamp = 8,
  Uuid = 9,
};

struct EventHeader {
  std::string name;
  EventHeaderType type = EventHeaderType::String;
  std::string value;  // a string's or byte array's bytes; the big-endian bytes of the other types
};

struct EventStreamMessage {
  std::vector<EventHeader> headers;
  std::string payload;

  // A string header's value (":event-type", ":message-type", ":exception-type"); empty when absent.
  std::string_view header(std::string_view name) const;
};

class EventStreamDecoder {
 public:
  // AWS's limits: 16 MiB a message, 128 KiB of headers.
  static constexpr uint32_t kMaxMessageBytes = 16u << 20;
  static constexpr uint32_t kMaxHeaderBytes = 128u << 10;

  // Appends every message `bytes` completes to `out`. false once the stream is malformed (then
  // error() says how, and every later call returns false too).
  bool feed(std::string_view bytes, std::vector<EventStreamMessage>& out);

  const std::string& error() const { return error_; }
  // No part of a message is waiting for more bytes: a stream that ends now ended cleanly.
  bool idle() const { return buffer_.empty() && error_.empty(); }
  // Bytes of an unfinished message held back.
  std::size_t buffered() const { return buffer_.size(); }

 private:
  bool fail(std::string why);
  // Decodes the whole message at the start of buffer_ (its length checked already).
  bool decodeOne(std::string_view frame, EventStreamMessage& message);

  std::string buffer_;
  std::string error_;
};

std::string encodeEventStreamMessage(const std::vector<std::pair<std::string, std::string>>& string_headers,
                                     std::string_view payload);

uint32_t crc32Of(std::string_view bytes, uint32_t crc = 0);

}  // namespace sluice::cloud
