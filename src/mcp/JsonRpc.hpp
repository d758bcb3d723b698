// The MCP wire as the gateway reads and writes it: one JSON-RPC message from a client, an
// answer from an upstream server (a JSON body or an SSE stream), and the namespacing that puts
// many servers behind one endpoint (tools and prompts as SERVER__NAME, resources as
// sluice-mcp://SERVER/ORIGINAL-URI). Pure functions over untrusted text; thread-safe.
#pragma once
#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace sluice::mcp {

inline constexpr std::string_view kSeparator = "__";
inline constexpr std::string_view kResourceScheme = "sluice-mcp://";

// JSON-RPC and MCP error codes the gateway answers with.
inline constexpr int kParseError = -32700;
inline constexpr int kInvalidRequest = -32600;
inline constexpr int kMethodNotFound = -32601;
inline constexpr int kInvalidParams = -32602;
inline constexpr int kInternalError = -32603;
inline constexpr int kServerUnavailable = -32000;  // the MCP server is down, timed out or answered badly
inline constexpr int kLimited = -32029;            // the key's rate or concurrency limit

// Protocol revisions spoken with clients and servers, newest first.
std::span<const std::string_view> protocolVersions();
bool supportedVersion(std::string_view v);
// The client's revision when this gateway speaks it, else the newest (the client then decides).
std::string_view negotiateVersion(std::string_view asked);

// A namespaced name split at its first "__": the server (a valid server name) and the name
// there (1 to 256 bytes, no control character).
struct NameRef {
  std::string_view server;
  std::string_view name;
};
std::optional<NameRef> splitName(std::string_view namespaced);
std::string joinName(std::string_view server, std::string_view name);
// Resource URIs: sluice-mcp://SERVER/URI, the server's URI kept verbatim after the slash.
std::string wrapUri(std::string_view server, std::string_view uri);
std::optional<NameRef> unwrapUri(std::string_view wrapped);

// One message a client POSTed.
struct RpcMessage {
  enum class Kind { Request, Notification, Response } kind = Kind::Request;
  boost::json::value id;  // string or integer (requests); null otherwise
  std::string method;
  boost::json::object params;
};
struct RpcParse {
  bool ok = false;
  RpcMessage msg;
  int code = 0;  // when !ok: kParseError or kInvalidRequest
  std::string message;
  boost::json::value id;  // the request's id when it could be read (for the error answer)
};
// A batch (array) is refused: MCP since 2025-06-18 sends one message per POST.
RpcParse parseMessage(std::string_view body);

// {"jsonrpc":"2.0","id":ID,"result":RESULT} and the error form (message cut to 1 KiB).
std::string resultText(const boost::json::value& id, const boost::json::value& result);
std::string errorText(const boost::json::value& id, int code, std::string_view message);

// What an upstream server answered one request with.
struct UpstreamAnswer {
  bool ok = false;            // a response carrying `id` was found
  bool is_error = false;      // a JSON-RPC error (code, message) rather than a result
  boost::json::value result;  // result, or the error object
  int code = 0;
  std::string message;
};
// From a JSON body (one response object, or a batch holding it) or an SSE stream of
// `message` events; other messages (notifications, requests of the server) are skipped.
UpstreamAnswer readUpstreamAnswer(std::string_view content_type, std::string_view body, std::int64_t id);

// The spec's DNS-rebinding rule for /mcp: a request carrying `Origin` is served only when the
// origin's host is the request's Host (ports aside), or both are loopback names (localhost,
// 127.0.0.1, [::1]). Anything unparsable, "null" included, is refused; a missing Origin is the
// caller's concern (SDKs and CLIs send none).
bool originAllowed(std::string_view origin, std::string_view host);

// One line of a stdio server: a response to one of ours (id), or something else.
std::optional<std::int64_t> responseId(const boost::json::value& message);

}  // namespace sluice::mcp
