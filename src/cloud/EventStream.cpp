#include "cloud/EventStream.hpp"

#include <zlib.h>

namespace sluice::cloud {
namespace {

constexpr size_t kPreludeBytes = 12;   // total length, headers length, prelude CRC
constexpr size_t kFrameOverhead = 16;  // the prelude and the message CRC

uint32_t be32(std::string_view s, size_t at) {
  auto b = [&](size_t i) { return static_cast<uint32_t>(static_cast<unsigned char>(s[at + i])); };
  return (b(0) << 24) | (b(1) << 16) | (b(2) << 8) | b(3);
}

void putBe32(std::string& out, uint32_t v) {
  out.push_back(static_cast<char>(v >> 24));
  out.push_back(static_cast<char>(v >> 16));
  out.push_back(static_cast<char>(v >> 8));
  out.push_back(static_cast<char>(v));
}

// The fixed size of a header value of this type; -1 for the length-prefixed ones, -2 for an
// unknown type.
int fixedSize(uint8_t type) {
  switch (static_cast<EventHeaderType>(type)) {
    case EventHeaderType::BoolTrue:
    case EventHeaderType::BoolFalse:
      return 0;
    case EventHeaderType::Byte:
      return 1;
    case EventHeaderType::Short:
      return 2;
    case EventHeaderType::Integer:
      return 4;
    case EventHeaderType::Long:
    case EventHeaderType::Timestamp:
      return 8;
    case EventHeaderType::Uuid:
      return 16;
    case EventHeaderType::Bytes:
    case EventHeaderType::String:
      return -1;
  }
  return -2;
}

}  // namespace

uint32_t crc32Of(std::string_view bytes, uint32_t crc) {
  return static_cast<uint32_t>(
      ::crc32(crc, reinterpret_cast<const Bytef*>(bytes.data()), static_cast<uInt>(bytes.size())));
}

std::string_view EventStreamMessage::header(std::string_view name) const {
  for (const auto& h : headers) {
    if (h.name == name && h.type == EventHeaderType::String) return h.value;
  }
  return {};
}

bool EventStreamDecoder::fail(std::string why) {
  error_ = "malformed event stream: " + std::move(why);
  buffer_.clear();
  buffer_.shrink_to_fit();
  return false;
}

bool EventStreamDecoder::feed(std::string_view bytes, std::vector<EventStreamMessage>& out) {
  if (!error_.empty()) return false;
  // Whole messages straight from `bytes` when nothing is buffered; the rest waits in buffer_.
  std::string_view data = bytes;
  if (!buffer_.empty()) {
    buffer_.append(bytes);
    data = buffer_;
  }
  size_t used = 0;
  while (data.size() - used >= kPreludeBytes) {
    std::string_view at = data.substr(used);
    uint32_t total = be32(at, 0), headers_len = be32(at, 4), prelude_crc = be32(at, 8);
    if (crc32Of(at.substr(0, 8)) != prelude_crc) return fail("the prelude's checksum does not match");
    if (total < kFrameOverhead) return fail("a message shorter than its own framing");
    if (total > kMaxMessageBytes) return fail("a message of " + std::to_string(total) + " bytes (16 MiB at most)");
    if (headers_len > kMaxHeaderBytes)
      return fail("headers of " + std::to_string(headers_len) + " bytes (128 KiB at most)");
    if (headers_len > total - kFrameOverhead) return fail("headers longer than their message");
    if (at.size() < total) break;
    EventStreamMessage message;
    if (!decodeOne(at.substr(0, total), message)) return false;
    out.push_back(std::move(message));
    used += total;
  }
  if (data.data() == buffer_.data() && !buffer_.empty()) {
    buffer_.erase(0, used);
  } else {
    buffer_.assign(data.substr(used));
  }
  return true;
}

bool EventStreamDecoder::decodeOne(std::string_view frame, EventStreamMessage& message) {
  size_t total = frame.size();
  if (crc32Of(frame.substr(0, total - 4)) != be32(frame, total - 4)) return fail("a message's checksum does not match");
  uint32_t headers_len = be32(frame, 4);
  std::string_view headers = frame.substr(kPreludeBytes, headers_len);
  size_t i = 0;
  while (i < headers.size()) {
    uint8_t name_len = static_cast<uint8_t>(headers[i]);
    if (name_len == 0) return fail("a header with an empty name");
    if (i + 1 + name_len + 1 > headers.size()) return fail("a header runs past the headers");
    EventHeader h;
    h.name.assign(headers.substr(i + 1, name_len));
    i += 1 + name_len;
    uint8_t type = static_cast<uint8_t>(headers[i++]);
    int size = fixedSize(type);
    if (size == -2) return fail("header '" + h.name + "' has an unknown type " + std::to_string(type));
    h.type = static_cast<EventHeaderType>(type);
    size_t n = 0;
    if (size == -1) {
      if (i + 2 > headers.size()) return fail("a header runs past the headers");
      n = (static_cast<size_t>(static_cast<unsigned char>(headers[i])) << 8) |
          static_cast<unsigned char>(headers[i + 1]);
      i += 2;
    } else {
      n = static_cast<size_t>(size);
    }
    if (i + n > headers.size()) return fail("header '" + h.name + "' runs past the headers");
    h.value.assign(headers.substr(i, n));
    i += n;
    message.headers.push_back(std::move(h));
  }
  message.payload.assign(frame.substr(kPreludeBytes + headers_len, total - kFrameOverhead - headers_len));
  return true;
}

std::string encodeEventStreamMessage(const std::vector<std::pair<std::string, std::string>>& string_headers,
                                     std::string_view payload) {
  std::string headers;
  for (const auto& [name, value] : string_headers) {
    headers.push_back(static_cast<char>(name.size()));
    headers += name;
    headers.push_back(static_cast<char>(EventHeaderType::String));
    headers.push_back(static_cast<char>(value.size() >> 8));
    headers.push_back(static_cast<char>(value.size()));
    headers += value;
  }
  std::string out;
  uint32_t total = static_cast<uint32_t>(kFrameOverhead + headers.size() + payload.size());
  out.reserve(total);
  putBe32(out, total);
  putBe32(out, static_cast<uint32_t>(headers.size()));
  putBe32(out, crc32Of(out));
  out += headers;
  out += payload;
  putBe32(out, crc32Of(out));
  return out;
}

}  // namespace sluice::cloud
