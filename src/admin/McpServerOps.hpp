// McpServerOps: MCP servers as the admin API sees them (/admin/api/mcp-servers): the writable
// fields and their checks (the config loader's rules, plus bounds on what a request may store),
// and the JSON shape, with every header value masked. Pure; thread-safe.
#pragma once
#include <boost/json/object.hpp>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace sluice::mcp {
struct ServerState;
}

namespace sluice::admin {

inline constexpr std::size_t kMaxMcpUrlBytes = 2048;
inline constexpr std::size_t kMaxMcpArgs = 64;
inline constexpr std::size_t kMaxMcpArgBytes = 4096;
inline constexpr std::size_t kMaxMcpHeaders = 32;
inline constexpr std::size_t kMaxMcpHeaderValueBytes = 8192;
inline constexpr std::int64_t kMinMcpTimeoutMs = 100;
inline constexpr std::int64_t kMaxMcpTimeoutMs = 3'600'000;

// One server's settings, as a request writes them and the store keeps them (headers in clear
// here; the caller seals them).
struct McpServerDraft {
  std::string name;
  std::string url;                   // Streamable HTTP; or
  std::vector<std::string> command;  // stdio: argv, no shell
  std::map<std::string, std::string> headers;
  std::int64_t timeout_ms = 30'000;
};

// Checks the fields present in `body` (name, url, command, headers, timeout_ms) and applies them;
// absent fields stay. When creating, name and one of url or command are required. Giving url
// makes it an HTTP server (its command goes), giving command a stdio one (its url and headers
// go). A header value sent back in the masked form a response showed keeps the stored value.
// Throws FieldError naming the field; unknown fields are refused by name.
void applyMcpServerFields(McpServerDraft& server, const boost::json::object& body, bool creating);

// The object GET returns: id null and source "config" for a server of the config file;
// `headers_known` false (headers null) when the stored headers cannot be decrypted; `live`
// null when the hub does not run it yet (state "starting").
boost::json::object mcpServerJson(const McpServerDraft& server, std::optional<std::int64_t> id, bool from_config,
                                  bool headers_known, const mcp::ServerState* live);

}  // namespace sluice::admin
