#include "core/JsonText.hpp"

#include <boost/json/parse.hpp>
#include <boost/json/parser.hpp>
#include <gtest/gtest.h>

namespace sluice {
namespace {
namespace json_text_test {

std::string asJson(std::string_view s) {
  std::string out;
  appendJsonString(out, s);
  return out;
}

TEST(JsonText, EscapesWhatJsonRequires) {
  EXPECT_EQ(asJson("a\"b\\c\n\t\x01"), R"("a\"b\\c\n\t\u0001")");
  EXPECT_EQ(asJson(""), R"("")");
}

TEST(JsonText, KeepsValidUtf8AsItIs) {
  EXPECT_EQ(asJson("h\xC3\xA9llo \xE2\x82\xAC \xF0\x9F\x98\x80"), "\"h\xC3\xA9llo \xE2\x82\xAC \xF0\x9F\x98\x80\"");
}

// Regression (translate fuzzer): an upstream error body cut inside a character produced JSON
// that strict parsers reject.
TEST(JsonText, InvalidUtf8BecomesReplacementCharacters) {
  std::string cut = std::string(499, 'a') + "\xC3";
  auto out = asJson(cut);
  EXPECT_EQ(out.substr(out.size() - 8), R"(a\ufffd")");
  for (std::string_view bad : {"\xFF", "\xC0\xAF", "\xED\xA0\x80", "\xF4\x90\x80\x80", "\xE2\x82", "\x80"}) {
    boost::system::error_code ec;
    boost::json::parse(asJson(bad), ec);
    EXPECT_FALSE(ec) << "not valid JSON for input of " << bad.size() << " bytes";
    EXPECT_NE(asJson(bad).find("\\ufffd"), std::string::npos);
  }
}

std::string nested(std::size_t depth) { return std::string(depth, '[') + std::string(depth, ']'); }

// Real tool schemas nest deeper than Boost.JSON's default of 32: the limit is kMaxJsonDepth.
TEST(JsonText, ParseJsonTakesNestingUpToTheLimit) {
  static_assert(kMaxJsonDepth >= 128);
  for (std::size_t depth : {std::size_t{33}, std::size_t{128}, kMaxJsonDepth}) {
    boost::system::error_code ec;
    auto v = parseJson(nested(depth), ec);
    EXPECT_FALSE(ec) << depth << ": " << ec.message();
    EXPECT_TRUE(v.is_array());
  }
}

TEST(JsonText, ParseJsonRefusesDeeperAsTooDeep) {
  for (std::size_t depth : {kMaxJsonDepth + 1, std::size_t{100'000}}) {
    boost::system::error_code ec;
    parseJson(nested(depth), ec);
    EXPECT_TRUE(isTooDeep(ec)) << depth << ": " << ec.message();
  }
  boost::system::error_code ec;
  parseJson(std::string(100'000, '['), ec);  // never closed
  EXPECT_TRUE(isTooDeep(ec));
  parseJson("[1,", ec);
  EXPECT_TRUE(ec);
  EXPECT_FALSE(isTooDeep(ec));
  EXPECT_EQ(tooDeepMessage("request body"),
            "request body is nested deeper than " + std::to_string(kMaxJsonDepth) +
                " levels of arrays and objects, the gateway's limit: flatten it");
}

// A parser made by hand takes the same options (the stream and request parsers reuse one).
TEST(JsonText, ParseOptionsCarryTheLimit) {
  boost::json::parser p(boost::json::storage_ptr(), jsonParseOptions());
  boost::system::error_code ec;
  const auto ok = nested(kMaxJsonDepth);
  p.write(ok.data(), ok.size(), ec);
  EXPECT_FALSE(ec);
  p.reset();
  const auto deep = nested(kMaxJsonDepth + 1);
  p.write(deep.data(), deep.size(), ec);
  EXPECT_TRUE(isTooDeep(ec));
}

}  // namespace json_text_test
}  // namespace
}  // namespace sluice
