// The MCP wire: a client's message, an upstream answer (JSON or SSE), and the namespacing.
#include "mcp/JsonRpc.hpp"

#include <gtest/gtest.h>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

namespace sluice::mcp {
namespace {
namespace json_rpc_test {

namespace json = boost::json;

TEST(McpNames, SplitAtTheFirstSeparator) {
  auto r = splitName("github__create_issue");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->server, "github");
  EXPECT_EQ(r->name, "create_issue");
  r = splitName("a__b__c");  // a server name never holds "__": the rest is the tool's
  ASSERT_TRUE(r);
  EXPECT_EQ(r->server, "a");
  EXPECT_EQ(r->name, "b__c");
  r = splitName("x-y__../etc/passwd");  // passed on as a name; never a path here
  ASSERT_TRUE(r);
  EXPECT_EQ(r->name, "../etc/passwd");
  EXPECT_FALSE(splitName("create_issue"));
  EXPECT_FALSE(splitName("__tool"));
  EXPECT_FALSE(splitName("github__"));
  EXPECT_FALSE(splitName("git hub__x"));
  EXPECT_FALSE(splitName("github__a\r\nb"));
  EXPECT_FALSE(splitName("github__" + std::string(257, 'x')));
  EXPECT_EQ(joinName("github", "create_issue"), "github__create_issue");
}

TEST(McpNames, ResourceUrisRoundTrip) {
  const std::string original = "demo://resource/static/document/a.md?x=1#y";
  const std::string wrapped = wrapUri("files", original);
  EXPECT_EQ(wrapped, "sluice-mcp://files/" + original);
  auto r = unwrapUri(wrapped);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->server, "files");
  EXPECT_EQ(r->name, original);
  EXPECT_FALSE(unwrapUri("file:///etc/passwd"));
  EXPECT_FALSE(unwrapUri("sluice-mcp://files"));
  EXPECT_FALSE(unwrapUri("sluice-mcp://files/"));
  EXPECT_FALSE(unwrapUri("sluice-mcp://fi les/x"));
  EXPECT_FALSE(unwrapUri("sluice-mcp://files/a\nb"));
}

TEST(McpVersions, NegotiatesTheClientsWhenSpoken) {
  EXPECT_EQ(negotiateVersion("2025-06-18"), "2025-06-18");
  EXPECT_EQ(negotiateVersion("2025-11-25"), "2025-11-25");
  EXPECT_EQ(negotiateVersion("1999-01-01"), protocolVersions().front());
  EXPECT_EQ(negotiateVersion(""), protocolVersions().front());
}

TEST(McpMessage, ParsesRequestsNotificationsAndResponses) {
  auto p = parseMessage(R"({"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"a__b"}})");
  ASSERT_TRUE(p.ok) << p.message;
  EXPECT_EQ(p.msg.kind, RpcMessage::Kind::Request);
  EXPECT_EQ(p.msg.id, json::value(7));
  EXPECT_EQ(p.msg.method, "tools/call");
  EXPECT_EQ(p.msg.params.at("name"), "a__b");
  p = parseMessage(R"({"jsonrpc":"2.0","id":"s","method":"ping"})");
  ASSERT_TRUE(p.ok);
  EXPECT_EQ(p.msg.id, json::value("s"));
  p = parseMessage(R"({"jsonrpc":"2.0","method":"notifications/initialized"})");
  ASSERT_TRUE(p.ok);
  EXPECT_EQ(p.msg.kind, RpcMessage::Kind::Notification);
  p = parseMessage(R"({"jsonrpc":"2.0","id":1,"result":{}})");
  ASSERT_TRUE(p.ok);
  EXPECT_EQ(p.msg.kind, RpcMessage::Kind::Response);
}

TEST(McpMessage, RefusesWhatIsNotOneMessage) {
  struct Case {
    const char* body;
    int code;
  };
  for (const Case& c :
       {Case{"{", kParseError}, Case{"", kParseError}, Case{"[]", kInvalidRequest},
        Case{R"([{"jsonrpc":"2.0","id":1,"method":"ping"}])", kInvalidRequest}, Case{"42", kInvalidRequest},
        Case{R"("x")", kInvalidRequest}, Case{R"({"id":1,"method":"ping"})", kInvalidRequest},
        Case{R"({"jsonrpc":"1.0","id":1,"method":"ping"})", kInvalidRequest},
        Case{R"({"jsonrpc":"2.0","id":1})", kInvalidRequest},
        Case{R"({"jsonrpc":"2.0","id":1,"method":7})", kInvalidRequest},
        Case{R"({"jsonrpc":"2.0","id":1,"method":"a\r\nb"})", kInvalidRequest},
        Case{R"({"jsonrpc":"2.0","id":{},"method":"ping"})", kInvalidRequest},
        Case{R"({"jsonrpc":"2.0","id":1.5,"method":"ping"})", kInvalidRequest},
        Case{R"({"jsonrpc":"2.0","id":1,"method":"ping","params":[1]})", kInvalidRequest}}) {
    auto p = parseMessage(c.body);
    EXPECT_FALSE(p.ok) << c.body;
    EXPECT_EQ(p.code, c.code) << c.body;
    EXPECT_FALSE(p.message.empty()) << c.body;
  }
  // The id of a refused request is kept for the error answer when it can be read.
  auto p = parseMessage(R"({"jsonrpc":"2.0","id":9,"method":"ping","params":"x"})");
  EXPECT_EQ(p.id, json::value(9));
  std::string deep(300, '[');
  EXPECT_EQ(parseMessage(deep).code, kParseError);
}

TEST(McpMessage, AnswersAreWellFormed) {
  const auto ok = json::parse(resultText(json::value("a\"b"), json::object{{"x", 1}}));
  EXPECT_EQ(ok.at("id"), "a\"b");
  EXPECT_EQ(ok.at("result").at("x"), 1);
  const auto err = json::parse(errorText(nullptr, kInvalidParams, std::string(5000, 'x') + "\r\n"));
  EXPECT_EQ(err.at("error").at("code"), kInvalidParams);
  EXPECT_LE(err.at("error").at("message").as_string().size(), 1024u);
  EXPECT_TRUE(err.at("id").is_null());
}

TEST(McpUpstream, ReadsAJsonAnswer) {
  auto a = readUpstreamAnswer("application/json", R"({"jsonrpc":"2.0","id":3,"result":{"tools":[]}})", 3);
  ASSERT_TRUE(a.ok);
  EXPECT_FALSE(a.is_error);
  EXPECT_TRUE(a.result.at("tools").is_array());
  a = readUpstreamAnswer("application/json; charset=utf-8",
                         R"({"jsonrpc":"2.0","id":3,"error":{"code":-32602,"message":"Unknown tool"}})", 3);
  ASSERT_TRUE(a.ok);
  EXPECT_TRUE(a.is_error);
  EXPECT_EQ(a.code, -32602);
  EXPECT_EQ(a.message, "Unknown tool");
  EXPECT_FALSE(readUpstreamAnswer("application/json", R"({"jsonrpc":"2.0","id":4,"result":{}})", 3).ok);
  EXPECT_FALSE(readUpstreamAnswer("application/json", "not json", 3).ok);
  EXPECT_TRUE(readUpstreamAnswer("application/json", R"([{"jsonrpc":"2.0","id":3,"result":{}}])", 3).ok);
}

TEST(McpUpstream, ReadsAnSseAnswerPastOtherMessages) {
  const std::string body =
      "event: message\r\nid: 1\r\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\"}\r\n\r\n"
      ": a comment\n\n"
      "event: message\ndata: {\"jsonrpc\":\"2.0\",\n"
      "data: \"id\":5,\"result\":{\"content\":[]}}\n\n";
  auto a = readUpstreamAnswer("text/event-stream", body, 5);
  ASSERT_TRUE(a.ok) << a.message;
  EXPECT_TRUE(a.result.at("content").is_array());
  // The last event without its blank line still counts.
  a = readUpstreamAnswer("text/event-stream", "data: {\"jsonrpc\":\"2.0\",\"id\":5,\"result\":{}}", 5);
  EXPECT_TRUE(a.ok);
  a = readUpstreamAnswer("text/event-stream", "data: {\"jsonrpc\":\"2.0\",\"id\":6,\"result\":{}}\n\n", 5);
  EXPECT_FALSE(a.ok);
  EXPECT_FALSE(a.message.empty());
}

TEST(McpUpstream, ResponseIdOfAStdioLine) {
  EXPECT_EQ(responseId(json::parse(R"({"jsonrpc":"2.0","id":3,"result":{}})")), 3);
  EXPECT_FALSE(responseId(json::parse(R"({"jsonrpc":"2.0","id":3,"method":"ping"})")));
  EXPECT_FALSE(responseId(json::parse(R"({"jsonrpc":"2.0","id":"x","result":{}})")));
  EXPECT_FALSE(responseId(json::parse("[]")));
}

TEST(McpOrigin, TheRequestsOwnHostOrLoopbackOnly) {
  EXPECT_TRUE(originAllowed("http://gateway.internal:8080", "gateway.internal:8080"));
  EXPECT_TRUE(originAllowed("https://Gateway.Internal", "gateway.internal:443"));  // ports aside, any case
  EXPECT_TRUE(originAllowed("http://localhost:5173", "127.0.0.1:8080"));
  EXPECT_TRUE(originAllowed("http://127.0.0.1:8080/", "localhost:8080"));
  EXPECT_TRUE(originAllowed("http://[::1]:3000", "localhost"));
  EXPECT_FALSE(originAllowed("http://evil.example", "127.0.0.1:8080"));
  EXPECT_FALSE(originAllowed("http://evil.example", "gateway.internal"));
  EXPECT_FALSE(originAllowed("http://127.0.0.1.evil.example", "127.0.0.1:8080"));
  EXPECT_FALSE(originAllowed("http://localhost", "gateway.internal"));  // loopback only matches loopback
  EXPECT_FALSE(originAllowed("null", "127.0.0.1:8080"));
  EXPECT_FALSE(originAllowed("file://", "127.0.0.1:8080"));
  EXPECT_FALSE(originAllowed("chrome-extension://abc", "127.0.0.1:8080"));
  EXPECT_FALSE(originAllowed("http://user@127.0.0.1", "127.0.0.1"));
  EXPECT_FALSE(originAllowed("http://127.0.0.1:80x", "127.0.0.1"));
  EXPECT_FALSE(originAllowed("http://127.0.0.1/path", "127.0.0.1"));
  EXPECT_FALSE(originAllowed("http://[::1", "[::1]"));
  EXPECT_FALSE(originAllowed("http://a b", "a b"));
  EXPECT_FALSE(originAllowed("http://gateway.internal", ""));  // no Host: nothing to match
}

}  // namespace json_rpc_test
}  // namespace
}  // namespace sluice::mcp
