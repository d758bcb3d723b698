// The admin API's MCP server fields and shape: the config loader's rules, bounds, masking.
#include "admin/McpServerOps.hpp"

#include <gtest/gtest.h>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

#include "admin/Fields.hpp"
#include "mcp/McpHub.hpp"

namespace sluice::admin {
namespace {
namespace mcp_server_ops_test {

namespace json = boost::json;

json::object body(std::string_view text) {
  return json::parse(text).as_object();
}

// The field a refusal names ("" when it was accepted).
std::string refused(std::string_view text, McpServerDraft d = {}, bool creating = true) {
  try {
    applyMcpServerFields(d, body(text), creating);
  } catch (const FieldError& e) {
    return e.param();
  }
  return "";
}

TEST(McpServerOps, CreatesHttpAndStdioServers) {
  McpServerDraft d;
  applyMcpServerFields(d, body(R"({"name":"files","url":"https://mcp.example/mcp","headers":{"Authorization":"Bearer abcdef123"},"timeout_ms":5000})"), true);
  EXPECT_EQ(d.name, "files");
  EXPECT_EQ(d.url, "https://mcp.example/mcp");
  EXPECT_EQ(d.headers.at("Authorization"), "Bearer abcdef123");
  EXPECT_EQ(d.timeout_ms, 5000);
  McpServerDraft s;
  applyMcpServerFields(s, body(R"({"name":"local","command":["npx","-y","pkg"]})"), true);
  EXPECT_EQ(s.command.size(), 3u);
  EXPECT_TRUE(s.url.empty());
  EXPECT_EQ(s.timeout_ms, 30000);
}

TEST(McpServerOps, RefusesWhatTheConfigRefusesAndMore) {
  EXPECT_EQ(refused(R"({"url":"http://h/"})"), "name");
  EXPECT_EQ(refused(R"({"name":"a__b","url":"http://h/"})"), "name");
  EXPECT_EQ(refused(R"({"name":"a/b","url":"http://h/"})"), "name");
  EXPECT_EQ(refused(R"({"name":"ok"})"), "url");
  EXPECT_EQ(refused(R"({"name":"ok","url":"http://h/","command":["x"]})"), "url");
  EXPECT_EQ(refused(R"({"name":"ok","url":"file:///etc/passwd"})"), "url");
  EXPECT_EQ(refused(R"({"name":"ok","url":"http://u:p@h/"})"), "url");
  EXPECT_EQ(refused(R"({"name":"ok","url":"http://h/\r\nX: 1"})"), "url");
  EXPECT_EQ(refused(R"({"name":"ok","url":"http://h/","headers":{"X\r\nY":"v"}})"), "headers.(a name with control characters)");
  EXPECT_EQ(refused(R"({"name":"ok","url":"http://h/","headers":{"X":"v\r\nY: 1"}})"), "headers.X");
  EXPECT_EQ(refused(R"({"name":"ok","command":["x"],"headers":{"X":"v"}})"), "headers");
  EXPECT_EQ(refused(R"({"name":"ok","command":[""]})"), "command[0]");
  EXPECT_EQ(refused(R"({"name":"ok","url":"http://h/","timeout_ms":50})"), "timeout_ms");
  EXPECT_EQ(refused(R"({"name":"ok","url":"http://h/","colour":"red"})"), "colour");
  EXPECT_EQ(refused(R"({"name":"ok","url":"http://h/","tools":[]})"), "tools");
  EXPECT_EQ(refused(R"({"name":"ok","url":"http://h/"})"), "");
}

TEST(McpServerOps, AMaskedHeaderSentBackKeepsItsValue) {
  McpServerDraft d;
  d.name = "files";
  d.url = "https://mcp.example/mcp";
  d.headers["Authorization"] = "Bearer the-real-secret";
  const auto shown = mcpServerJson(d, 3, false, true, nullptr);
  const std::string masked(shown.at("headers").at("Authorization").as_string());
  EXPECT_EQ(masked.find("the-real-secret"), std::string::npos);
  applyMcpServerFields(d, body(R"({"headers":{"Authorization":")" + masked + R"("}})"), false);
  EXPECT_EQ(d.headers.at("Authorization"), "Bearer the-real-secret");
  applyMcpServerFields(d, body(R"({"headers":{"Authorization":"Bearer new"}})"), false);
  EXPECT_EQ(d.headers.at("Authorization"), "Bearer new");
  // Turned into a stdio server: the headers go with the url.
  applyMcpServerFields(d, body(R"({"command":["node","s.js"]})"), false);
  EXPECT_TRUE(d.url.empty());
  EXPECT_TRUE(d.headers.empty());
}

TEST(McpServerOps, TheShapeTheConsoleReads) {
  McpServerDraft d;
  d.name = "local";
  d.command = {"node", "s.js"};
  mcp::ServerState live;
  live.name = "local";
  live.state = "down";
  live.error = "the server process exited";
  live.restarts = 2;
  const auto o = mcpServerJson(d, std::nullopt, true, true, &live);
  EXPECT_TRUE(o.at("id").is_null());
  EXPECT_EQ(o.at("source"), "config");
  EXPECT_EQ(o.at("transport"), "stdio");
  EXPECT_TRUE(o.at("url").is_null());
  EXPECT_EQ(o.at("command").as_array().size(), 2u);
  EXPECT_EQ(o.at("state"), "down");
  EXPECT_EQ(o.at("error"), "the server process exited");
  EXPECT_EQ(o.at("restarts"), 2);
  EXPECT_TRUE(o.at("tools").as_array().empty());
  const auto starting = mcpServerJson(d, 4, false, false, nullptr);
  EXPECT_EQ(starting.at("state"), "starting");
  EXPECT_TRUE(starting.at("headers").is_null());
  EXPECT_TRUE(starting.at("error").is_null());
}

}  // namespace mcp_server_ops_test
}  // namespace
}  // namespace sluice::admin
