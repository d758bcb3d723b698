// Restoring tokens in text and streams: split at every byte, across three chunks, tool-call
// arguments as JSON-escaped fragments, tampered tokens left and counted, bounded hold-back.
#include <gtest/gtest.h>

#include <boost/json.hpp>

#include <random>
#include <string>
#include <vector>

#include "redact/Restorer.hpp"
#include "redact/TokenCipher.hpp"

namespace sluice::redact {
namespace {
namespace restorer_test {

const TokenCipher& cipher() {
  static const TokenCipher c("0123456789abcdef0123456789abcdef", "vk_test");
  return c;
}
std::string tok(std::string_view label, std::string_view value) {
  return *cipher().seal(label, value);
}

std::string streamed(const std::vector<std::string_view>& chunks, int depth = 0, RestoreStats* stats = nullptr) {
  Restorer r(cipher(), depth);
  std::string out;
  for (auto c : chunks) r.feed(c, out);
  r.finish(out);
  if (stats) *stats = r.stats();
  return out;
}

TEST(Restorer, RestoreAllPlainText) {
  RestoreStats st;
  const std::string text = "Mail " + tok("EMAIL", "jane@example.com") + " or call " + tok("PHONE", "+1 415 555 0100") +
                           " [not a token] [[sluice:x";
  EXPECT_EQ(restoreAll(text, cipher(), 0, &st),
            "Mail jane@example.com or call +1 415 555 0100 [not a token] [[sluice:x");
  EXPECT_EQ(st.restored, 2u);
  EXPECT_EQ(st.tampered, 0u);
}

TEST(Restorer, TokenSplitAtEveryByte) {
  const std::string text = "a[b " + tok("EMAIL", "jane@example.com") + " c[[d";
  const std::string want = "a[b jane@example.com c[[d";
  for (std::size_t i = 0; i <= text.size(); ++i) {
    RestoreStats st;
    EXPECT_EQ(streamed({std::string_view(text).substr(0, i), std::string_view(text).substr(i)}, 0, &st), want) << i;
    EXPECT_EQ(st.restored, 1u) << i;
  }
}

TEST(Restorer, TokenAcrossThreeChunksAtEveryPairOfCuts) {
  const std::string text = "x" + tok("IBAN", "DE89370400440532013000") + "y" + tok("EMAIL", "a@b.io");
  const std::string want = "xDE89370400440532013000ya@b.io";
  const std::string_view v(text);
  for (std::size_t i = 0; i <= text.size(); ++i)
    for (std::size_t j = i; j <= text.size(); ++j)
      ASSERT_EQ(streamed({v.substr(0, i), v.substr(i, j - i), v.substr(j)}), want) << i << "," << j;
}

TEST(Restorer, ByteAtATimeHoldsOnlyWhatCouldBeAToken) {
  const std::string t = tok("EMAIL", "jane@example.com");
  const std::string text = "hello [world] " + t + "!";
  Restorer r(cipher());
  std::string out;
  std::size_t maxHeld = 0;
  for (char c : text) {
    r.feed(std::string_view(&c, 1), out);
    maxHeld = std::max(maxHeld, r.heldBytes());
  }
  // Plain text goes out at once; "[world]" is released at 'w'.
  EXPECT_LE(maxHeld, t.size() - 1);
  EXPECT_EQ(out, "hello [world] jane@example.com!");
  r.finish(out);
  EXPECT_EQ(r.stats().restored, 1u);
  EXPECT_EQ(r.heldBytes(), 0u);
}

TEST(Restorer, TextWithoutTokensPassesAtOnce) {
  Restorer r(cipher());
  std::string out;
  r.feed("no tokens here, [a link](x) and [[wiki]]", out);
  EXPECT_EQ(out, "no tokens here, [a link](x) and [[wiki]]");
  EXPECT_EQ(r.heldBytes(), 0u);
  r.feed("ends with [[slu", out);
  EXPECT_EQ(r.heldBytes(), 5u);
  r.finish(out);
  EXPECT_EQ(out, "no tokens here, [a link](x) and [[wiki]]ends with [[slu");
}

TEST(Restorer, TamperedAndForeignTokensAreLeftAndCounted) {
  std::string bad = tok("EMAIL", "jane@example.com");
  bad[20] = bad[20] == 'A' ? 'B' : 'A';
  const TokenCipher otherScope("0123456789abcdef0123456789abcdef", "vk_other");
  const std::string foreign = *otherScope.seal("EMAIL", "jane@example.com");
  const std::string relabelled = "[[sluice:PHONE:" + tok("EMAIL", "x@y.io").substr(15);
  const std::string text = bad + " " + foreign + " " + relabelled + " " + tok("EMAIL", "ok@y.io");
  for (std::size_t i = 0; i <= text.size(); i += 7) {
    RestoreStats st;
    const auto out = streamed({std::string_view(text).substr(0, i), std::string_view(text).substr(i)}, 0, &st);
    EXPECT_EQ(out, bad + " " + foreign + " " + relabelled + " ok@y.io");
    EXPECT_EQ(st.tampered, 3u);
    EXPECT_EQ(st.restored, 1u);
  }
}

TEST(Restorer, ToolCallArgumentsStreamedAsJsonFragments) {
  // The model writes the token inside a JSON string of its arguments; the value goes back
  // JSON-escaped (a PEM key's newlines and quotes must not break the arguments).
  const std::string secret = "line1\nline \"2\"\\end";
  const std::string args =
      R"({"to":")" + tok("EMAIL", "jane@example.com") + R"(","key":")" + tok("PRIVATE_KEY", secret) + R"("})";
  for (std::size_t i = 0; i <= args.size(); i += 3) {
    for (std::size_t j = i; j <= args.size(); j += 11) {
      const std::string_view v(args);
      const auto out = streamed({v.substr(0, i), v.substr(i, j - i), v.substr(j)}, 1);
      const auto parsed = boost::json::parse(out).as_object();
      ASSERT_EQ(parsed.at("to").as_string(), "jane@example.com") << out;
      ASSERT_EQ(parsed.at("key").as_string(), secret) << out;
    }
  }
}

TEST(Restorer, ArgumentsInsideARawSseEventAreEscapedTwice) {
  // data: {"choices":[{"delta":{"tool_calls":[{"function":{"arguments":"{\"k\":\"TOKEN\"}"}}]}}]}
  const std::string secret = "a\"b\nc";
  const std::string event = R"({"arguments":"{\"k\":\")" + tok("SECRET", secret) + R"(\"}"})";
  const auto out = restoreAll(event, cipher(), 2);
  const auto outer = boost::json::parse(out).as_object();
  const auto inner = boost::json::parse(outer.at("arguments").as_string()).as_object();
  EXPECT_EQ(inner.at("k").as_string(), secret) << out;
}

TEST(Restorer, HoldBackNeverExceedsOneToken) {
  // An endless would-be token is released once it can no longer be one.
  Restorer r(cipher());
  std::string out;
  r.feed("[[sluice:EMAIL:", out);
  std::size_t maxHeld = 0;
  for (std::size_t i = 0; i < kMaxTokenLen + 100; ++i) {
    r.feed("A", out);
    maxHeld = std::max(maxHeld, r.heldBytes());
  }
  EXPECT_LE(maxHeld, kMaxTokenLen);
  EXPECT_EQ(r.heldBytes(), 0u);
  r.finish(out);
  EXPECT_EQ(out.size(), std::string("[[sluice:EMAIL:").size() + kMaxTokenLen + 100);
}

// The request's sealed tokens (SealMemo, filled by the Redactor) restore without decrypting: the
// same text at every split, a token the request did not seal still opens, a tampered one is
// still left and counted, and the memo's value is the one sealed (not merely any value).
TEST(Restorer, SealMemoGivesTheSameResultAsOpening) {
  SealMemo memo;
  const std::string mail = tok("EMAIL", "jane@example.com");
  const std::string phone = tok("PHONE", "+1 415 555 0100");
  memo.add(mail, "jane@example.com");
  memo.add(mail, "ignored: already there");
  EXPECT_EQ(memo.size(), 1u);
  ASSERT_TRUE(memo.find(mail));
  EXPECT_EQ(*memo.find(mail), "jane@example.com");
  EXPECT_FALSE(memo.find(phone));
  std::string tampered = mail;
  tampered[20] = tampered[20] == 'A' ? 'B' : 'A';
  const std::string text = "a " + mail + " b " + phone + " c " + tampered + " d";
  const std::string want = "a jane@example.com b +1 415 555 0100 c " + tampered + " d";
  for (std::size_t cut = 0; cut <= text.size(); ++cut) {
    Restorer r(cipher(), 0, &memo);
    std::string out;
    r.feed(std::string_view(text).substr(0, cut), out);
    r.feed(std::string_view(text).substr(cut), out);
    r.finish(out);
    ASSERT_EQ(out, want) << cut;
    EXPECT_EQ(r.stats().restored, 2u);
    EXPECT_EQ(r.stats().tampered, 1u);
  }
  // Past its bound the memo remembers no more; those tokens are opened instead.
  SealMemo full;
  std::string many, wantMany;
  for (std::size_t i = 0; i < SealMemo::kMaxEntries + 4; ++i) {
    const std::string v = "user" + std::to_string(i) + "@example.com";
    const std::string t = tok("EMAIL", v);
    full.add(t, v);
    many += t + " ";
    wantMany += v + " ";
  }
  EXPECT_EQ(full.size(), SealMemo::kMaxEntries);
  EXPECT_EQ(restoreAll(many, cipher(), 0, nullptr, &full), wantMany);
  // Depth 1: a memo value is JSON-escaped like an opened one.
  SealMemo pem;
  const std::string key = tok("PRIVATE_KEY", "line1\nline\"2\"");
  pem.add(key, "line1\nline\"2\"");
  EXPECT_EQ(restoreAll("{\"k\":\"" + key + "\"}", cipher(), 1, nullptr, &pem), restoreAll("{\"k\":\"" + key + "\"}", cipher(), 1));
}

TEST(Restorer, RandomChunkingMatchesOneShot) {
  std::mt19937 rng(42);
  const std::vector<std::string> parts = {"[", "[[", "]]", "[[sluice:", "EMAIL:", "text ", "é", tok("EMAIL", "a@b.io"),
                                          tok("PHONE", "+1 415 555 0100"), "[[sluice:EMAIL:AAAA]]"};
  for (int round = 0; round < 300; ++round) {
    std::string text;
    for (int k = 0; k < 12; ++k) text += parts[rng() % parts.size()];
    const std::string want = restoreAll(text, cipher());
    std::vector<std::string_view> chunks;
    for (std::size_t at = 0; at < text.size();) {
      const std::size_t n = std::min<std::size_t>(text.size() - at, rng() % 9);
      chunks.push_back(std::string_view(text).substr(at, n));
      at += n;
    }
    ASSERT_EQ(streamed(chunks), want) << text;
  }
}

TEST(Restorer, JsonEscaping) {
  std::string out;
  appendJsonEscaped(out, "a\"b\\c\n\t\x01 é");
  EXPECT_EQ(out, "a\\\"b\\\\c\\n\\t\\u0001 é");
}

}  // namespace restorer_test
}  // namespace
}  // namespace sluice::redact
