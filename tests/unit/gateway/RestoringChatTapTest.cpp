// The restoring OpenAI Chat stream tap: an answer that echoes sealed values as many small content
// chunks comes out with the values back, whatever the read boundaries, with or without the
// request's SealMemo; every event stays valid JSON; a chunk shaped like the earlier ones but ending
// the choice (finish_reason) or carrying a tool call is not taken for the usual shape.
#include <gtest/gtest.h>

#include <boost/json.hpp>

#include <memory>
#include <string>
#include <vector>

#include "gateway/StreamTaps.hpp"
#include "redact/Redactor.hpp"
#include "redact/Restorer.hpp"
#include "redact/TokenCipher.hpp"

namespace sluice::gateway {
namespace {
namespace restoring_chat_tap_test {

namespace json = boost::json;

const std::string kPlain =
    "Write to maria.santos@example.com or call +1 415 555 0134; a [bracket] and [[not a token]] stay.";

struct Fixture {
  std::shared_ptr<const redact::TokenCipher> cipher =
      std::make_shared<redact::TokenCipher>("0123456789abcdef0123456789abcdef", "vk:t");
  std::shared_ptr<redact::SealMemo> memo = std::make_shared<redact::SealMemo>();
  std::string redacted;
  Fixture() {
    const redact::Redactor r(redact::RuleSet::compile(redact::builtinRules()), cipher.get(), memo.get());
    r.redact(kPlain, redact::kUser, redacted);
  }
};

std::string chunk(const json::object& delta, const json::value& finish) {
  json::object o{{"id", "chatcmpl-1"},
                 {"object", "chat.completion.chunk"},
                 {"created", 1796000000},
                 {"model", "gpt-4o-mini"},
                 {"choices", json::array{json::object{{"index", 0}, {"delta", delta}, {"finish_reason", finish}}}}};
  return "data: " + json::serialize(o) + "\n\n";
}

// The answer `text` as content chunks of `step` bytes; the last piece rides on the finish chunk
// when `lastWithFinish`.
std::string stream(const std::string& text, std::size_t step, bool lastWithFinish) {
  std::string s = chunk(json::object{{"role", "assistant"}, {"content", ""}}, nullptr);
  std::size_t at = 0;
  for (; at + step < text.size(); at += step) s += chunk(json::object{{"content", text.substr(at, step)}}, nullptr);
  if (lastWithFinish) {
    s += chunk(json::object{{"content", text.substr(at)}}, "stop");
  } else {
    s += chunk(json::object{{"content", text.substr(at)}}, nullptr);
    s += chunk(json::object{}, "stop");
  }
  return s + "data: [DONE]\n\n";
}

// Feeds `in` in two reads split at `cut`; returns the concatenated content, checking every event.
std::string run(const Fixture& f, const std::string& in, std::size_t cut, bool withMemo) {
  auto stats = std::make_shared<redact::RestoreStats>();
  auto tap = makeRestoringChatTap(false, f.cipher, stats, withMemo ? f.memo : nullptr);
  std::string out;
  EXPECT_TRUE(tap->feed(std::string_view(in).substr(0, cut), out));
  EXPECT_TRUE(tap->feed(std::string_view(in).substr(cut), out));
  tap->finish(out);
  std::string content;
  bool done = false;
  for (std::size_t pos = 0; pos < out.size();) {
    const std::size_t end = out.find("\n\n", pos);
    EXPECT_NE(end, std::string::npos) << out;
    if (end == std::string::npos) break;
    const std::string_view ev = std::string_view(out).substr(pos, end - pos);
    pos = end + 2;
    EXPECT_TRUE(ev.starts_with("data: ")) << ev;
    const auto data = ev.substr(6);
    if (data == "[DONE]") {
      done = true;
      continue;
    }
    EXPECT_FALSE(done) << "an event after [DONE]";
    boost::system::error_code ec;
    const json::value v = json::parse(data, ec);
    EXPECT_FALSE(ec) << ev;
    if (ec) continue;
    for (const auto& c : v.at("choices").as_array())
      if (const auto* d = c.as_object().at("delta").as_object().if_contains("content"); d && d->is_string())
        content += std::string(d->as_string());
  }
  EXPECT_TRUE(done);
  EXPECT_EQ(stats->restored, 2u);
  EXPECT_EQ(stats->tampered, 0u);
  return content;
}

TEST(RestoringChatTap, SmallChunksAtEveryReadBoundaryWithAndWithoutTheMemo) {
  const Fixture f;
  ASSERT_EQ(f.memo->size(), 2u);
  for (std::size_t step : {1u, 3u, 7u, 20u}) {
    for (bool lastWithFinish : {false, true}) {
      const std::string in = stream(f.redacted, step, lastWithFinish);
      const std::size_t stride = in.size() / 600 + 1;  // ~600 boundaries per stream, every byte of a short one
      for (std::size_t cut = 0; cut <= in.size(); cut += stride) {
        ASSERT_EQ(run(f, in, cut, true), kPlain) << "step " << step << " cut " << cut;
        ASSERT_EQ(run(f, in, cut, false), kPlain) << "step " << step << " cut " << cut;
      }
    }
  }
}

// A token still held when a tool call starts in a chunk that otherwise looks like the content
// chunks: the held bytes are not lost and the tool call passes on.
TEST(RestoringChatTap, AToolCallChunkAfterContentChunksIsNotTakenForTheirShape) {
  const Fixture f;
  const std::string token = f.redacted.substr(f.redacted.find("[[sluice:EMAIL"), 40);  // a token's start
  std::string in = chunk(json::object{{"content", "hello "}}, nullptr);
  in += chunk(json::object{{"content", "there "}}, nullptr);
  in += chunk(json::object{{"content", token}}, nullptr);
  in += chunk(json::object{{"content", ""},
                           {"tool_calls", json::array{json::object{{"index", 0},
                                                                   {"id", "call_1"},
                                                                   {"type", "function"},
                                                                   {"function", json::object{{"name", "f"}, {"arguments", "{}"}}}}}}},
              nullptr);
  in += chunk(json::object{}, "tool_calls");
  in += "data: [DONE]\n\n";
  auto tap = makeRestoringChatTap(false, f.cipher, std::make_shared<redact::RestoreStats>(), f.memo);
  std::string out;
  ASSERT_TRUE(tap->feed(in, out));
  tap->finish(out);
  EXPECT_NE(out.find("\"tool_calls\""), std::string::npos);
  EXPECT_NE(out.find("\"name\":\"f\""), std::string::npos);
  EXPECT_NE(out.find(token), std::string::npos) << "the unfinished token goes out as it came";
}

// A provider that escapes '[' as \u005b: the token is still found (the event is decoded).
TEST(RestoringChatTap, ATokenSpelledWithUnicodeEscapesIsRestored) {
  const Fixture f;
  const auto at = f.redacted.find("[[sluice:EMAIL");
  const auto end = f.redacted.find("]]", at) + 2;
  std::string token = f.redacted.substr(at, end - at);
  std::string escaped = "\\u005b\\u005b" + token.substr(2);  // JSON text: \u005b\u005bsluice:...
  const std::string ev = "data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":1796000000,"
                         "\"model\":\"gpt-4o-mini\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"mail " +
                         escaped + " now\"},\"finish_reason\":null}]}\n\n";
  for (std::size_t cut = 0; cut <= ev.size(); ++cut) {
    auto tap = makeRestoringChatTap(false, f.cipher, std::make_shared<redact::RestoreStats>(), f.memo);
    std::string out;
    ASSERT_TRUE(tap->feed(std::string_view(ev).substr(0, cut), out));
    ASSERT_TRUE(tap->feed(std::string_view(ev).substr(cut), out));
    ASSERT_TRUE(tap->feed("data: [DONE]\n\n", out));
    tap->finish(out);
    ASSERT_NE(out.find("mail maria.santos@example.com now"), std::string::npos) << cut << "\n" << out;
  }
}

// The same in tool-call arguments (an event the content splice does not take): decoded too.
TEST(RestoringChatTap, ATokenSpelledWithUnicodeEscapesInToolArgumentsIsRestored) {
  const Fixture f;
  const auto at = f.redacted.find("[[sluice:EMAIL");
  const auto end = f.redacted.find("]]", at) + 2;
  const std::string escaped = "\\u005b\\u005b" + f.redacted.substr(at + 2, end - at - 2);
  const std::string ev =
      "data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":1796000000,"
      "\"model\":\"gpt-4o-mini\",\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,"
      "\"function\":{\"arguments\":\"{\\\"to\\\":\\\"" + escaped + "\\\"}\"}}]},\"finish_reason\":null}]}\n\n";
  ASSERT_TRUE(json::parse(std::string_view(ev).substr(6)).is_object()) << ev;
  auto tap = makeRestoringChatTap(false, f.cipher, std::make_shared<redact::RestoreStats>(), f.memo);
  std::string out;
  ASSERT_TRUE(tap->feed(ev, out));
  ASSERT_TRUE(tap->feed("data: [DONE]\n\n", out));
  tap->finish(out);
  const json::value v = json::parse(std::string_view(out).substr(6, out.find("\n\n") - 6));
  const auto& args = v.at("choices").at(0).at("delta").at("tool_calls").at(0).at("function").at("arguments").as_string();
  EXPECT_EQ(json::parse(args).at("to").as_string(), "maria.santos@example.com") << out;
}

// The stream ends ([DONE], no finish chunk) while the start of a token is held: the held bytes go
// out in a chunk of their own, with the stream's id, created and model.
TEST(RestoringChatTap, BytesHeldAtTheEndGoOutInAChunkOfTheirOwn) {
  const Fixture f;
  std::string in = chunk(json::object{{"content", "hello "}}, nullptr);
  in += chunk(json::object{{"content", "there [[slu"}}, nullptr);
  in += "data: [DONE]\n\n";
  auto tap = makeRestoringChatTap(false, f.cipher, std::make_shared<redact::RestoreStats>(), f.memo);
  std::string out;
  ASSERT_TRUE(tap->feed(in, out));
  tap->finish(out);
  const auto last = out.rfind("data: {");
  ASSERT_NE(last, std::string::npos) << out;
  const auto end = out.find("\n\n", last);
  const json::value v = json::parse(std::string_view(out).substr(last + 6, end - last - 6));
  EXPECT_EQ(v.at("id").as_string(), "chatcmpl-1");
  EXPECT_EQ(v.at("model").as_string(), "gpt-4o-mini");
  EXPECT_EQ(v.at("created").as_int64(), 1796000000);
  EXPECT_EQ(v.at("choices").at(0).at("delta").at("content").as_string(), "[[slu");
  EXPECT_LT(last, out.find("data: [DONE]"));
}

}  // namespace restoring_chat_tap_test
}  // namespace
}  // namespace sluice::gateway
