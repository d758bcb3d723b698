#include "core/JsonText.hpp"

#include <boost/json/parse.hpp>
#include <gtest/gtest.h>

namespace sluice {
namespace {

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

}  // namespace
}  // namespace sluice
