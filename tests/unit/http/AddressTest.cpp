#include <gtest/gtest.h>

#include "http/Server.hpp"
#include "upstream/Client.hpp"

namespace sluice {
namespace {
namespace address_test {

TEST(SplitHostPort, AcceptsV4V6AndRejectsJunk) {
  std::string host;
  std::uint16_t port = 0;
  ASSERT_TRUE(http::splitHostPort("127.0.0.1:8080", host, port));
  EXPECT_EQ(host, "127.0.0.1");
  EXPECT_EQ(port, 8080);
  ASSERT_TRUE(http::splitHostPort("[::1]:0", host, port));
  EXPECT_EQ(host, "::1");
  EXPECT_EQ(port, 0);
  ASSERT_TRUE(http::splitHostPort(":9000", host, port));
  EXPECT_EQ(host, "0.0.0.0");
  EXPECT_FALSE(http::splitHostPort("localhost", host, port));
  EXPECT_FALSE(http::splitHostPort("::1:80", host, port));
  EXPECT_FALSE(http::splitHostPort("h:70000", host, port));
  EXPECT_FALSE(http::splitHostPort("h:", host, port));
  EXPECT_FALSE(http::splitHostPort("h:80x", host, port));
}

TEST(ParseBaseUrl, SplitsWhatTheClientNeeds) {
  upstream::Endpoint e;
  ASSERT_EQ(upstream::parseBaseUrl("https://api.openai.com/v1/", e), "");
  EXPECT_TRUE(e.tls);
  EXPECT_EQ(e.host, "api.openai.com");
  EXPECT_EQ(e.port, 443);
  EXPECT_EQ(e.base_path, "/v1");
  EXPECT_EQ(e.host_header, "api.openai.com");
  ASSERT_EQ(upstream::parseBaseUrl("http://127.0.0.1:9000/v1", e), "");
  EXPECT_FALSE(e.tls);
  EXPECT_EQ(e.port, 9000);
  EXPECT_EQ(e.host_header, "127.0.0.1:9000");
  ASSERT_EQ(upstream::parseBaseUrl("http://[::1]:8000", e), "");
  EXPECT_EQ(e.host, "::1");
  EXPECT_EQ(e.base_path, "");
  EXPECT_EQ(e.host_header, "[::1]:8000");
  EXPECT_NE(upstream::parseBaseUrl("ftp://x/", e), "");
  EXPECT_NE(upstream::parseBaseUrl("not a url", e), "");
}

}  // namespace address_test
}  // namespace
}  // namespace sluice
