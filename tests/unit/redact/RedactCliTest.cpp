// `sluice redact --explain` on good and bad lines.
#include <gtest/gtest.h>

#include <boost/json.hpp>

#include <sstream>
#include <string>
#include <vector>

#include "redact/RedactCli.hpp"

namespace sluice::redact {
namespace {
namespace redact_cli_test {

std::vector<boost::json::value> lines(const std::string& s) {
  std::vector<boost::json::value> out;
  std::istringstream in(s);
  for (std::string l; std::getline(in, l);) out.push_back(boost::json::parse(l));
  return out;
}

TEST(RedactExplain, GoodLinesGiveByteOffsets) {
  std::istringstream in(R"({"text":"héllo jane@example.com"})"
                        "\n"
                        R"({"text":"nothing here","id":7})"
                        "\n"
                        R"({"text":"SSN 123-45-6789 and 10.0.0.1"})"
                        "\n");
  std::ostringstream out, err;
  EXPECT_EQ(runRedactExplain(in, out, err), 0);
  const auto got = lines(out.str());
  ASSERT_EQ(got.size(), 3u);
  // "héllo " is 7 bytes (é is two).
  EXPECT_EQ(boost::json::serialize(got[0]), R"({"matches":[{"rule":"EMAIL","start":7,"end":23,"action":"encrypt"}]})");
  EXPECT_EQ(boost::json::serialize(got[1]), R"({"matches":[]})");
  const auto& m = got[2].at("matches").as_array();
  ASSERT_EQ(m.size(), 2u);
  EXPECT_EQ(m[0].at("rule").as_string(), "US_SSN");
  EXPECT_EQ(m[0].at("start").as_int64(), 4);
  EXPECT_EQ(m[0].at("end").as_int64(), 15);
  EXPECT_EQ(m[1].at("rule").as_string(), "IPV4");
  EXPECT_TRUE(err.str().empty());
}

TEST(RedactExplain, BadLinesGetAnErrorAndProcessingContinues) {
  std::istringstream in("not json\n{\"text\": 5}\n[1]\n\n{\"text\":\"a@b.io\"}\n");
  std::ostringstream out, err;
  EXPECT_EQ(runRedactExplain(in, out, err), 1);
  const auto got = lines(out.str());
  ASSERT_EQ(got.size(), 5u);
  for (int i = 0; i < 4; ++i) {
    ASSERT_TRUE(got[i].as_object().contains("error")) << i;
    EXPECT_NE(std::string(got[i].at("error").as_string()).find("line " + std::to_string(i + 1)), std::string::npos);
  }
  EXPECT_EQ(got[4].at("matches").as_array().size(), 1u);
  EXPECT_NE(err.str().find("4 of 5"), std::string::npos) << err.str();
}

}  // namespace redact_cli_test
}  // namespace
}  // namespace sluice::redact
