#include "core/JsonOutline.hpp"

#include <gtest/gtest.h>

#include <string>

#include "../../fuzz/JsonOutlineCheck.hpp"

namespace sluice {
namespace {
namespace json_outline_test {

using K = JsonOutline::Kind;

TEST(JsonOutline, ReadsTheMembersAStreamChunkIsJudgedBy) {
  JsonOutline o;
  boost::system::error_code ec;
  ASSERT_TRUE(o.parse(
      R"({"id":"c1","choices":[{"index":0,"delta":{"content":"hi","tool_calls":[{"id":"t"}]},"finish_reason":null}],"usage":{"prompt_tokens":5,"total_tokens":18446744073709551615}})",
      4, ec));
  const auto choices = o.member(JsonOutline::kRoot, "choices");
  ASSERT_TRUE(o.is(choices, K::Array));
  EXPECT_EQ(o.size(choices), 1u);
  const auto c0 = o.element(choices, 0);
  EXPECT_TRUE(o.is(c0, K::Object));
  EXPECT_FALSE(o.has(o.element(choices, 1)));
  EXPECT_TRUE(o.has(o.member(c0, "finish_reason")));
  EXPECT_FALSE(o.present(o.member(c0, "finish_reason")));  // null
  const auto delta = o.member(c0, "delta");
  EXPECT_EQ(o.text(o.member(delta, "content")), "hi");
  EXPECT_EQ(o.size(o.member(delta, "tool_calls")), 1u);
  // Level 5 (the tool call's members) lies below the depth: not recorded.
  EXPECT_FALSE(o.has(o.member(o.element(o.member(delta, "tool_calls"), 0), "id")));
  const auto usage = o.member(JsonOutline::kRoot, "usage");
  EXPECT_EQ(o.integer(o.member(usage, "prompt_tokens")), 5);
  EXPECT_EQ(o.kind(o.member(usage, "total_tokens")), K::Uint);
  EXPECT_EQ(o.integer(o.member(usage, "total_tokens")), INT64_MAX);
  EXPECT_FALSE(o.has(o.member(JsonOutline::kRoot, "absent")));
  EXPECT_FALSE(o.has(o.member(JsonOutline::kNone, "choices")));
  EXPECT_FALSE(o.has(o.member(choices, "0")));  // an array has no members
}

TEST(JsonOutline, ARepeatedKeyAnswersWithItsLastValueAsTheTreeDoes) {
  JsonOutline o;
  boost::system::error_code ec;
  ASSERT_TRUE(o.parse(R"({"error":null,"x":1,"error":{"message":"m"}})", 2, ec));
  EXPECT_TRUE(o.is(o.member(JsonOutline::kRoot, "error"), K::Object));
  EXPECT_EQ(o.text(o.member(o.member(JsonOutline::kRoot, "error"), "message")), "m");
  EXPECT_EQ(outline_check::compare(R"({"error":null,"x":1,"error":{"message":"m"}})", 2), "");
}

TEST(JsonOutline, KeysAreComparedWholeSoASlashOrAnEscapeCannotForgeAPath) {
  JsonOutline o;
  boost::system::error_code ec;
  ASSERT_TRUE(o.parse(R"({"choices/0/delta":{"content":"x"},"choi\u0063es":[],"a\u0000b":1})", 3, ec));
  EXPECT_FALSE(o.has(o.member(o.member(JsonOutline::kRoot, "choices"), "delta")));
  EXPECT_EQ(o.size(o.member(JsonOutline::kRoot, "choices")), 0u);  // the escaped key is "choices"
  EXPECT_TRUE(o.has(o.member(JsonOutline::kRoot, std::string_view("a\0b", 3))));
  EXPECT_FALSE(o.has(o.member(JsonOutline::kRoot, "a")));
}

TEST(JsonOutline, AStringKeepsItsFirstBytesAndItsExactLength) {
  JsonOutline o;
  boost::system::error_code ec;
  const std::string long_text(1000, 'z');
  ASSERT_TRUE(o.parse("{\"t\":\"\\u00e9" + long_text + "\",\"e\":\"\"}", 1, ec));
  const auto t = o.member(JsonOutline::kRoot, "t");
  EXPECT_EQ(o.size(t), 1002u);  // é is two bytes
  EXPECT_EQ(o.text(t), "\xC3\xA9" + std::string(JsonOutline::kCaptured - 2, 'z'));
  EXPECT_FALSE(o.whole(t));
  EXPECT_TRUE(o.whole(o.member(JsonOutline::kRoot, "e")));
  EXPECT_EQ(o.text(o.member(JsonOutline::kRoot, "e")), "");
}

TEST(JsonOutline, RefusesWhatParseJsonRefusesWithTheSameError) {
  for (std::string_view bad :
       {"", "{", "{\"a\":}", "[1,]", "{} {}", "{}x", "\"\xFF\"", "[1] // c", "{\"a\":1,}", "nul", "01"}) {
    boost::system::error_code tree_ec, outline_ec;
    (void)parseJson(bad, tree_ec);
    JsonOutline o;
    EXPECT_FALSE(o.parse(bad, 3, outline_ec)) << bad;
    EXPECT_EQ(outline_ec, tree_ec) << bad;
    EXPECT_EQ(o.nodeCount(), 0u);
  }
  // Past kMaxJsonDepth both refuse with too_deep.
  const std::string deep = std::string(kMaxJsonDepth + 1, '[') + std::string(kMaxJsonDepth + 1, ']');
  EXPECT_EQ(outline_check::compare(deep, 3), "");
  boost::system::error_code ec;
  JsonOutline o;
  EXPECT_FALSE(o.parse(deep, 3, ec));
  EXPECT_TRUE(isTooDeep(ec));
  const std::string ok_deep = std::string(kMaxJsonDepth, '[') + std::string(kMaxJsonDepth, ']');
  EXPECT_TRUE(o.parse(ok_deep, 3, ec));
  EXPECT_EQ(o.nodeCount(), 4u);  // levels 0-3
}

TEST(JsonOutline, AgreesWithTheTreeOnEveryRecordedValue) {
  for (std::string_view text : {
           R"({"a":1,"a":{"b":[true,false,null,-1,18446744073709551615,1.5e300,-0.0]},"s":"\u00e9\ud83d\ude00 \"q\""})",
           R"([[["deep",[["deeper"]]]],{},[],""])",
           R"({"choices":[{"delta":{"content":""}},{"delta":{"refusal":"no"},"finish_reason":"stop"}],"usage":null})",
           R"("just a string")", "42", "-9223372036854775808", "1e999", "null", " {\"k\" : [ 1 , 2 ] } "}) {
    for (int depth = 0; depth < 6; ++depth) EXPECT_EQ(outline_check::compare(text, depth), "") << text << " @" << depth;
  }
}

TEST(JsonOutline, AThreadsScratchOutlineDropsWhatALargeEventGrewItTo) {
  JsonOutline& o = JsonOutline::scratch();
  std::string big = "[";
  for (int i = 0; i < 5000; ++i) big += (i ? ",\"" : "\"") + std::string(10, 'k') + "\"";
  big += "]";
  boost::system::error_code ec;
  ASSERT_TRUE(o.parse(big, 1, ec));
  EXPECT_EQ(o.nodeCount(), 5001u);
  ASSERT_TRUE(o.parse("{}", 1, ec));
  EXPECT_EQ(o.nodeCount(), 1u);
  EXPECT_EQ(&o, &JsonOutline::scratch());
}

}  // namespace json_outline_test
}  // namespace
}  // namespace sluice
