// mcp.servers: each server a url (Streamable HTTP) or a command (stdio), validated with the line.
#include <gtest/gtest.h>

#include <string>

#include "config/Config.hpp"
#include "config/Scalars.hpp"

namespace sluice::config {
namespace {
namespace mcp_config_test {

struct Failure {
  std::string what;
  int line = -1;
};

Failure failure(const std::string& yaml) {
  try {
    parseConfig(yaml, "t.yaml");
  } catch (const ConfigError& e) {
    return {e.what(), e.line()};
  }
  ADD_FAILURE() << "expected a ConfigError for:\n" << yaml;
  return {};
}

TEST(McpConfig, ParsesBothKindsOfServer) {
  auto cfg = parseConfig(
      "mcp:\n"
      "  servers:\n"
      "    - {name: github, url: \"https://api.githubcopilot.com/mcp/\", headers: {Authorization: \"Bearer t0k3n\"}}\n"
      "    - name: files\n"
      "      command: [npx, -y, \"@modelcontextprotocol/server-filesystem\", /srv/docs]\n"
      "      timeout: 5s\n",
      "t.yaml");
  ASSERT_EQ(cfg->mcp.servers.size(), 2u);
  const auto& gh = cfg->mcp.servers[0];
  EXPECT_EQ(gh.name, "github");
  EXPECT_EQ(gh.url, "https://api.githubcopilot.com/mcp");
  EXPECT_EQ(gh.headers.at("Authorization"), "Bearer t0k3n");
  EXPECT_TRUE(gh.command.empty());
  EXPECT_EQ(gh.timeout, std::chrono::seconds(30));
  EXPECT_EQ(gh.line, 3);
  const auto& files = cfg->mcp.servers[1];
  EXPECT_TRUE(files.url.empty());
  ASSERT_EQ(files.command.size(), 4u);
  EXPECT_EQ(files.command[0], "npx");
  EXPECT_EQ(files.timeout, std::chrono::seconds(5));
}

TEST(McpConfig, DescribeMasksHeadersAndArguments) {
  auto cfg = parseConfig(
      "mcp:\n  servers:\n"
      "    - {name: gh, url: \"https://x.example/mcp\", headers: {Authorization: \"Bearer supersecret-token\"}}\n"
      "    - {name: fs, command: [server, --token, hidden-argument]}\n",
      "t.yaml");
  const std::string text = describeConfig(*cfg);
  EXPECT_EQ(text.find("supersecret-token"), std::string::npos) << text;
  EXPECT_EQ(text.find("hidden-argument"), std::string::npos) << text;
  EXPECT_NE(text.find("gh"), std::string::npos);
}

TEST(McpConfig, RefusesWhatCannotWork) {
  auto f = failure("mcp:\n  servers:\n    - {name: a, url: \"http://x/mcp\"}\n    - {name: a, command: [x]}\n");
  EXPECT_EQ(f.line, 4);
  EXPECT_NE(f.what.find("duplicate MCP server name \"a\" (first declared at line 3)"), std::string::npos) << f.what;

  f = failure("mcp:\n  servers:\n    - {name: \"a b\", url: \"http://x/mcp\"}\n");
  EXPECT_EQ(f.line, 3);
  EXPECT_NE(f.what.find("not a valid MCP server name"), std::string::npos) << f.what;
  for (const char* bad : {"a__b", "a_", "a.b", "../x", ""}) {
    f = failure(std::string("mcp:\n  servers:\n    - {name: \"") + bad + "\", url: \"http://x/mcp\"}\n");
    EXPECT_NE(f.what.find("not a valid MCP server name"), std::string::npos) << bad << ": " << f.what;
  }

  f = failure("mcp:\n  servers:\n    - {name: a, url: \"http://x/mcp\", command: [x]}\n");
  EXPECT_NE(f.what.find("exactly one of url"), std::string::npos) << f.what;
  f = failure("mcp:\n  servers:\n    - {name: a}\n");
  EXPECT_NE(f.what.find("exactly one of url"), std::string::npos) << f.what;
  f = failure("mcp:\n  servers:\n    - {url: \"http://x/mcp\"}\n");
  EXPECT_NE(f.what.find("missing required key \"name\""), std::string::npos) << f.what;
  f = failure("mcp:\n  servers:\n    - {name: a, url: \"ftp://x/mcp\"}\n");
  EXPECT_NE(f.what.find("mcp.servers[0].url"), std::string::npos) << f.what;
  EXPECT_NE(f.what.find("http or https"), std::string::npos) << f.what;
  f = failure("mcp:\n  servers:\n    - {name: a, command: []}\n");
  EXPECT_NE(f.what.find("mcp.servers[0].command"), std::string::npos) << f.what;
  f = failure("mcp:\n  servers:\n    - {name: a, command: [x], headers: {A: b}}\n");
  EXPECT_NE(f.what.find("headers are sent to a url"), std::string::npos) << f.what;
  f = failure("mcp:\n  servers:\n    - {name: a, url: \"http://x/mcp\", timeout: 0s}\n");
  EXPECT_NE(f.what.find("mcp.servers[0].timeout"), std::string::npos) << f.what;
  f = failure("mcp:\n  servers:\n    - {name: a, url: \"http://x/mcp\", headers: {A: \"x\\r\\ny\"}}\n");
  EXPECT_NE(f.what.find("control character"), std::string::npos) << f.what;
  f = failure("mcp:\n  server: []\n");
  EXPECT_NE(f.what.find("unknown key \"server\" in mcp"), std::string::npos) << f.what;
}

TEST(McpConfig, ServerNames) {
  EXPECT_TRUE(validMcpServerName("github"));
  EXPECT_TRUE(validMcpServerName("my-files_2"));
  EXPECT_TRUE(validMcpServerName("_x"));
  EXPECT_FALSE(validMcpServerName("x_"));
  EXPECT_FALSE(validMcpServerName("a__b"));
  EXPECT_FALSE(validMcpServerName(std::string(65, 'a')));
}

}  // namespace mcp_config_test
}  // namespace
}  // namespace sluice::config
