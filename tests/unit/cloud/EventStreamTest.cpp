// EventStream: messages as Bedrock sends them, split at every byte, every header type, and every
// way a frame can be broken (each stops the decoder with a reason and nothing after it is given).
#include "cloud/EventStream.hpp"

#include <gtest/gtest.h>

namespace event_stream_test {
using namespace sluice::cloud;

std::string bedrockDelta(std::string_view text) {
  return encodeEventStreamMessage(
      {{":event-type", "contentBlockDelta"}, {":content-type", "application/json"}, {":message-type", "event"}},
      R"({"contentBlockIndex":0,"delta":{"text":")" + std::string(text) + R"("},"p":"abcd"})");
}

void putBe32(std::string& s, size_t at, uint32_t v) {
  s[at] = static_cast<char>(v >> 24);
  s[at + 1] = static_cast<char>(v >> 16);
  s[at + 2] = static_cast<char>(v >> 8);
  s[at + 3] = static_cast<char>(v);
}

// Rewrites both checksums after a test changed a frame's bytes on purpose.
void reseal(std::string& frame) {
  putBe32(frame, 8, crc32Of(std::string_view(frame).substr(0, 8)));
  putBe32(frame, frame.size() - 4, crc32Of(std::string_view(frame).substr(0, frame.size() - 4)));
}

TEST(EventStreamTest, KnownFrameOfAwsDocumentation) {
  // AWS's documented example frame: no headers, the payload "{'foo':'bar'}".
  const unsigned char bytes[] = {0x00, 0x00, 0x00, 0x1d, 0x00, 0x00, 0x00, 0x00, 0xfd, 0x52,
                                 0x8c, 0x5a, 0x7b, 0x27, 0x66, 0x6f, 0x6f, 0x27, 0x3a, 0x27,
                                 0x62, 0x61, 0x72, 0x27, 0x7d, 0xc3, 0x65, 0x39, 0x36};
  EventStreamDecoder d;
  std::vector<EventStreamMessage> out;
  ASSERT_TRUE(d.feed({reinterpret_cast<const char*>(bytes), sizeof bytes}, out)) << d.error();
  ASSERT_EQ(out.size(), 1u);
  EXPECT_TRUE(out[0].headers.empty());
  EXPECT_EQ(out[0].payload, "{'foo':'bar'}");
  EXPECT_EQ(encodeEventStreamMessage({}, "{'foo':'bar'}"),
            std::string(reinterpret_cast<const char*>(bytes), sizeof bytes));
}

TEST(EventStreamTest, MessagesSplitAtEveryByteComeOutWhole) {
  std::string stream = bedrockDelta("Hello") + bedrockDelta(", world") +
                       encodeEventStreamMessage({{":event-type", "messageStop"}, {":message-type", "event"}},
                                                R"({"stopReason":"end_turn"})");
  for (size_t piece = 1; piece <= stream.size(); ++piece) {
    EventStreamDecoder d;
    std::vector<EventStreamMessage> out;
    for (size_t i = 0; i < stream.size(); i += piece)
      ASSERT_TRUE(d.feed(std::string_view(stream).substr(i, piece), out));
    ASSERT_EQ(out.size(), 3u) << "pieces of " << piece;
    EXPECT_TRUE(d.idle());
    EXPECT_EQ(out[0].header(":event-type"), "contentBlockDelta");
    EXPECT_EQ(out[0].header(":message-type"), "event");
    EXPECT_NE(out[1].payload.find(", world"), std::string::npos);
    EXPECT_EQ(out[2].header(":event-type"), "messageStop");
    EXPECT_EQ(out[2].header(":absent"), "");
  }
}

TEST(EventStreamTest, EveryHeaderType) {
  // name, type, value bytes: the types with a fixed size and the two with a length.
  std::string headers;
  auto add = [&](std::string name, uint8_t type, std::string value, bool length) {
    headers.push_back(static_cast<char>(name.size()));
    headers += name;
    headers.push_back(static_cast<char>(type));
    if (length) {
      headers.push_back(static_cast<char>(value.size() >> 8));
      headers.push_back(static_cast<char>(value.size()));
    }
    headers += value;
  };
  add("t", 0, "", false);
  add("f", 1, "", false);
  add("b", 2, "\x7f", false);
  add("s", 3, std::string("\x01\x02", 2), false);
  add("i", 4, std::string("\0\0\0\x05", 4), false);
  add("l", 5, std::string(8, '\x01'), false);
  add("y", 6, std::string("\0\xff", 2), true);
  add("str", 7, "text", true);
  add("ts", 8, std::string(8, '\x02'), false);
  add("u", 9, std::string(16, '\x03'), false);
  std::string frame(12, '\0');
  frame += headers;
  frame += "payload";
  frame.append(4, '\0');
  putBe32(frame, 0, static_cast<uint32_t>(frame.size()));
  putBe32(frame, 4, static_cast<uint32_t>(headers.size()));
  reseal(frame);
  EventStreamDecoder d;
  std::vector<EventStreamMessage> out;
  ASSERT_TRUE(d.feed(frame, out)) << d.error();
  ASSERT_EQ(out.size(), 1u);
  ASSERT_EQ(out[0].headers.size(), 10u);
  EXPECT_EQ(out[0].headers[0].type, EventHeaderType::BoolTrue);
  EXPECT_EQ(out[0].headers[6].value, std::string("\0\xff", 2));
  EXPECT_EQ(out[0].header("str"), "text");
  EXPECT_EQ(out[0].header("i"), "") << "only string headers are read as text";
  EXPECT_EQ(out[0].headers[9].value.size(), 16u);
  EXPECT_EQ(out[0].payload, "payload");
}

struct Broken {
  const char* name;
  std::string frame;
  const char* why;
};

TEST(EventStreamTest, BrokenFramesStopTheDecoderWithAReason) {
  std::string good = bedrockDelta("x");
  std::vector<Broken> cases;
  {
    std::string f = good;
    f[20] ^= 1;  // a header byte, the message checksum no longer matches
    cases.push_back({"message checksum", f, "a message's checksum does not match"});
  }
  {
    std::string f = good;
    f[9] ^= 1;
    cases.push_back({"prelude checksum", f, "the prelude's checksum does not match"});
  }
  {
    std::string f = good;
    putBe32(f, 0, 8);
    reseal(f);
    cases.push_back({"shorter than its framing", f, "shorter than its own framing"});
  }
  {
    std::string f = good;
    putBe32(f, 0, (16u << 20) + 1);
    putBe32(f, 8, crc32Of(std::string_view(f).substr(0, 8)));
    cases.push_back({"over 16 MiB", f, "16 MiB at most"});
  }
  {
    std::string f = good;
    putBe32(f, 4, static_cast<uint32_t>(f.size()));
    reseal(f);
    cases.push_back({"headers past the message", f, "headers longer than their message"});
  }
  {
    std::string f = good;
    f[12 + 1 + 11] = 42;  // the first header's type
    reseal(f);
    cases.push_back({"unknown header type", f, "unknown type 42"});
  }
  {
    std::string f = good;
    f[12] = 0;  // the first header's name length
    reseal(f);
    cases.push_back({"empty header name", f, "empty name"});
  }
  {
    std::string f = good;
    f[12 + 1 + 11 + 1] = '\x7f';  // the first string header's length, far past the headers
    reseal(f);
    cases.push_back({"header runs past", f, "runs past the headers"});
  }
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    EventStreamDecoder d;
    std::vector<EventStreamMessage> out;
    std::string stream = good + c.frame + good;
    EXPECT_FALSE(d.feed(stream, out));
    EXPECT_EQ(out.size(), 1u) << "the good message before it still comes out, nothing after it";
    EXPECT_NE(d.error().find(c.why), std::string::npos) << d.error();
    EXPECT_FALSE(d.idle());
    EXPECT_FALSE(d.feed(good, out)) << "a broken stream stays broken";
    EXPECT_EQ(out.size(), 1u);
  }
}

TEST(EventStreamTest, AStreamCutInsideAMessageIsNotIdle) {
  std::string f = bedrockDelta("cut");
  EventStreamDecoder d;
  std::vector<EventStreamMessage> out;
  ASSERT_TRUE(d.feed(std::string_view(f).substr(0, f.size() - 1), out));
  EXPECT_TRUE(out.empty());
  EXPECT_FALSE(d.idle());
  ASSERT_TRUE(d.feed(std::string_view(f).substr(f.size() - 1), out));
  EXPECT_EQ(out.size(), 1u);
  EXPECT_TRUE(d.idle());
}

}  // namespace event_stream_test
