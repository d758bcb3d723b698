// The MCP gateway's parsers (mcp/JsonRpc.hpp) on untrusted bytes: a client's JSON-RPC message,
// an upstream server's answer (a JSON body or an SSE stream), and the namespaced names and
// resource URIs a client sends back, and the Origin rule (the bytes split at their first '|'
// into Origin and Host). Input: [mode] [bytes]; mode bit 0 reads the bytes as SSE.
// Checks: no crash; a refused message has a JSON-RPC code and a reason; every answer the
// gateway would write parses as JSON-RPC; a name or URI that splits joins back to itself, its
// server a valid server name and its name free of control bytes.
#include <boost/json/parse.hpp>

#include <string>

#include "FuzzUtil.hpp"
#include "config/Scalars.hpp"
#include "mcp/JsonRpc.hpp"

using namespace sluice;

namespace {

void checkRpc(const std::string& text, const char* what) {
  boost::system::error_code ec;
  const auto v = boost::json::parse(text, ec);
  if (ec || !v.is_object() || v.as_object().if_contains("jsonrpc") == nullptr) fuzz::fail(what, text);
}

bool hasControl(std::string_view s) {
  for (const char c : s)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) return true;
  return false;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1) return 0;
  const bool sse = data[0] & 1;
  const std::string_view body(reinterpret_cast<const char*>(data) + 1, size - 1);

  mcp::RpcParse p = mcp::parseMessage(body);
  if (!p.ok) {
    if (p.code != mcp::kParseError && p.code != mcp::kInvalidRequest) fuzz::fail("a refusal with another code");
    if (p.message.empty()) fuzz::fail("a refusal without a reason");
    checkRpc(mcp::errorText(p.id, p.code, p.message), "an error answer that is not JSON-RPC");
  } else if (p.msg.kind == mcp::RpcMessage::Kind::Request) {
    if (!p.msg.id.is_string() && !p.msg.id.is_int64() && !p.msg.id.is_uint64()) fuzz::fail("a request id of another type");
    if (p.msg.method.empty() || hasControl(p.msg.method)) fuzz::fail("a method name with control bytes", p.msg.method);
    checkRpc(mcp::resultText(p.msg.id, p.msg.params), "a result answer that is not JSON-RPC");
  }

  const mcp::UpstreamAnswer a = mcp::readUpstreamAnswer(sse ? "text/event-stream" : "application/json", body, 1);
  if (!a.ok && a.message.empty()) fuzz::fail("an upstream answer refused without a reason");
  if (a.ok && a.is_error && !a.result.is_object()) fuzz::fail("an upstream error that is not an object");
  if (a.message.size() > 1024 && a.is_error) fuzz::fail("an upstream error message past the bound");

  if (auto n = mcp::splitName(body)) {
    if (!config::validMcpServerName(n->server) || n->name.empty() || hasControl(n->name))
      fuzz::fail("a name split into an invalid part", body);
    if (mcp::joinName(n->server, n->name) != body) fuzz::fail("a name that does not join back", body);
  }
  if (auto u = mcp::unwrapUri(body)) {
    if (!config::validMcpServerName(u->server) || u->name.empty() || hasControl(u->name))
      fuzz::fail("a URI unwrapped into an invalid part", body);
    if (mcp::wrapUri(u->server, u->name) != body) fuzz::fail("a URI that does not wrap back", body);
  }

  if (const auto bar = body.find('|'); bar != std::string_view::npos) {
    const std::string_view origin = body.substr(0, bar);
    const std::string_view host = body.substr(bar + 1);
    if (mcp::originAllowed(origin, host)) {
      // Only an http(s) origin without a path, user or control byte may pass.
      if (!origin.starts_with("http://") && !origin.starts_with("https://")) fuzz::fail("an origin of another scheme", body);
      if (hasControl(origin) || hasControl(host)) fuzz::fail("an origin with control bytes allowed", body);
      const std::string_view rest = origin.substr(origin.find("://") + 3);
      if (rest.find('@') != std::string_view::npos) fuzz::fail("an origin with userinfo allowed", body);
    }
  }
  return 0;
}
