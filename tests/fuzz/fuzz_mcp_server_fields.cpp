// The admin API's MCP server fields (admin/McpServerOps.hpp) on untrusted bodies: what a
// POST or PATCH /admin/api/mcp-servers may carry. Input: [mode] [JSON body]; mode bit 0 applies
// the body as a PATCH to a stored HTTP server with a header, else as a create.
// Checks: no crash; a refusal is a FieldError naming a field; an accepted server is one the hub
// can run (a valid name, exactly one of url and command, headers only with a url, no control
// byte in any header, bounds kept), and its JSON never shows a header value in the clear.
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

#include <string>

#include "FuzzUtil.hpp"
#include "admin/Fields.hpp"
#include "admin/McpServerOps.hpp"
#include "config/Scalars.hpp"

using namespace sluice;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1) return 0;
  const bool patch = data[0] & 1;
  const std::string_view body(reinterpret_cast<const char*>(data) + 1, size - 1);
  boost::system::error_code ec;
  boost::json::value v = boost::json::parse(body, ec);
  if (ec || !v.is_object()) return 0;

  admin::McpServerDraft d;
  const std::string secret = "Bearer fuzz-secret-value-0123456789";
  if (patch) {
    d.name = "stored";
    d.url = "https://mcp.example/mcp";
    d.headers["Authorization"] = secret;
  }
  try {
    admin::applyMcpServerFields(d, v.as_object(), !patch);
  } catch (const admin::FieldError& e) {
    // An unknown member named "" is refused under its own (empty) name.
    if (e.param().empty() && !v.as_object().contains("")) fuzz::fail("a refusal that names no field", body);
    if (std::string_view(e.what()).empty()) fuzz::fail("a refusal without a reason", body);
    return 0;
  }
  if (!config::validMcpServerName(d.name)) fuzz::fail("an accepted invalid name", d.name);
  if (d.url.empty() == d.command.empty()) fuzz::fail("accepted without exactly one of url and command", body);
  if (!d.command.empty() && !d.headers.empty()) fuzz::fail("headers accepted for a command server", body);
  if (d.url.size() > admin::kMaxMcpUrlBytes || config::hasControlChar(d.url)) fuzz::fail("a url past the checks", d.url);
  if (d.command.size() > admin::kMaxMcpArgs) fuzz::fail("too many arguments accepted", body);
  if (d.headers.size() > admin::kMaxMcpHeaders) fuzz::fail("too many headers accepted", body);
  for (const auto& [k, val] : d.headers) {
    if (!config::validHeaderName(k) || config::hasControlChar(val) || val.size() > admin::kMaxMcpHeaderValueBytes)
      fuzz::fail("a header past the checks", k);
  }
  if (d.timeout_ms < admin::kMinMcpTimeoutMs || d.timeout_ms > admin::kMaxMcpTimeoutMs)
    fuzz::fail("a timeout out of bounds", body);
  // Only the headers are secret: the URL or the name may hold the same text, as the admin wrote it.
  const boost::json::object view = admin::mcpServerJson(d, 1, false, true, nullptr);
  const std::string shown = boost::json::serialize(view.at("headers"));
  if (d.headers.contains("Authorization") && d.headers.at("Authorization") == secret &&
      shown.find("fuzz-secret-value") != std::string::npos)
    fuzz::fail("a header value shown in the clear", boost::json::serialize(view));
  return 0;
}
