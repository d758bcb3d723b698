#include "admin/McpServerOps.hpp"

#include <fmt/format.h>
#include <boost/json/array.hpp>
#include <boost/url/parse.hpp>

#include <algorithm>
#include <cctype>

#include "admin/Fields.hpp"
#include "config/Config.hpp"
#include "config/Scalars.hpp"
#include "mcp/McpHub.hpp"

namespace sluice::admin {

namespace json = boost::json;

namespace {

std::string lowerName(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string mcpNameField(const json::value& v) {
  if (!v.is_string()) throw FieldError("name", "name must be a string; got " + describeJson(v));
  const std::string_view name = v.get_string();
  if (!config::validMcpServerName(name))
    throw FieldError("name", fmt::format("{} is not a valid MCP server name: use 1 to 64 letters, digits, '_' or '-', "
                                         "without \"__\" or a final '_' (it prefixes the server's tools as NAME__TOOL)",
                                         describeJson(v)));
  return std::string(name);
}

std::string mcpUrlField(const json::value& v) {
  if (!v.is_string()) throw FieldError("url", "url must be an http:// or https:// URL string; got " + describeJson(v));
  std::string url(v.get_string());
  std::string why;
  if (url.size() > kMaxMcpUrlBytes) {
    why = fmt::format("longer than {} bytes", kMaxMcpUrlBytes);
  } else if (config::hasControlChar(url)) {
    why = "it contains a control character";
  } else if (const auto parsed = boost::urls::parse_uri(url); !parsed) {
    why = "not a valid URL";
  } else if (parsed->scheme_id() != boost::urls::scheme::http && parsed->scheme_id() != boost::urls::scheme::https) {
    why = "the scheme must be http or https";
  } else if (!parsed->has_authority() || parsed->encoded_host().empty()) {
    why = "missing host";
  } else if (parsed->has_userinfo()) {
    why = "credentials in the URL are not allowed: send them in headers (stored encrypted)";
  } else if (parsed->has_fragment()) {
    why = "a fragment (#...) is not allowed";
  }
  // The message never repeats a URL that may hold a credential.
  if (!why.empty()) throw FieldError("url", "url must be an http:// or https:// URL of the server's MCP endpoint: " + why);
  return url;
}

std::vector<std::string> mcpCommandField(const json::value& v) {
  if (!v.is_array() || v.get_array().empty())
    throw FieldError("command", "command must be a non-empty array of strings: the program and its arguments, e.g. "
                                "[\"npx\", \"-y\", \"@modelcontextprotocol/server-everything\"]; got " +
                                    describeJson(v));
  const auto& a = v.get_array();
  if (a.size() > kMaxMcpArgs) throw FieldError("command", fmt::format("command takes at most {} elements", kMaxMcpArgs));
  std::vector<std::string> out;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const std::string param = fmt::format("command[{}]", i);
    if (!a[i].is_string()) throw FieldError(param, fmt::format("{} must be a string; got {}", param, describeJson(a[i])));
    const std::string_view arg = a[i].get_string();
    if (arg.size() > kMaxMcpArgBytes)
      throw FieldError(param, fmt::format("{} is longer than {} bytes", param, kMaxMcpArgBytes));
    if (arg.find('\0') != std::string_view::npos) throw FieldError(param, param + " contains a NUL byte");
    if (i == 0 && arg.empty()) throw FieldError(param, "command[0] must name the program");
    out.emplace_back(arg);
  }
  return out;
}

std::map<std::string, std::string> mcpHeadersField(const json::value& v, const std::map<std::string, std::string>& stored) {
  if (v.is_null()) return {};
  if (!v.is_object())
    throw FieldError("headers", "headers must be an object of header names to string values; got " + describeJson(v));
  const auto& o = v.get_object();
  if (o.size() > kMaxMcpHeaders) throw FieldError("headers", fmt::format("at most {} headers", kMaxMcpHeaders));
  std::map<std::string, std::string> out;
  std::vector<std::string> seen;
  for (const auto& [name, value] : o) {
    // The name is cut in messages: it may be anything a client sent.
    const std::string shown = config::hasControlChar(name) ? std::string("(a name with control characters)")
                                                           : std::string(std::string_view(name).substr(0, 64));
    const std::string param = "headers." + shown;
    if (!config::validHeaderName(name) || name.size() > 256)
      throw FieldError(param, fmt::format("\"{}\" is not a valid header name (letters, digits and !#$%&'*+-.^_`|~)",
                                          shown));
    std::string lowered = lowerName(name);
    if (std::find(seen.begin(), seen.end(), lowered) != seen.end())
      throw FieldError(param, fmt::format("duplicate header \"{}\" (header names are case-insensitive)", shown));
    seen.push_back(std::move(lowered));
    // Values are secrets: a refusal never quotes them.
    if (!value.is_string()) throw FieldError(param, param + " must be a string");
    const std::string_view text = value.get_string();
    if (config::hasControlChar(text))
      throw FieldError(param, param + " contains a control character (CR, LF and the like are refused)");
    if (text.size() > kMaxMcpHeaderValueBytes)
      throw FieldError(param, fmt::format("{} is longer than {} bytes", param, kMaxMcpHeaderValueBytes));
    const auto old = stored.find(std::string(name));
    const bool echoed = old != stored.end() && !old->second.empty() && config::maskSecret(old->second) == text;
    out[std::string(name)] = echoed ? old->second : std::string(text);
  }
  return out;
}

std::int64_t mcpTimeoutField(const json::value& v) {
  std::int64_t ms = 0;
  if (v.is_int64()) {
    ms = v.get_int64();
  } else if (v.is_uint64() && v.get_uint64() <= static_cast<std::uint64_t>(kMaxMcpTimeoutMs)) {
    ms = static_cast<std::int64_t>(v.get_uint64());
  } else {
    ms = -1;
  }
  if (ms < kMinMcpTimeoutMs || ms > kMaxMcpTimeoutMs)
    throw FieldError("timeout_ms", fmt::format("timeout_ms must be an integer from {} to {}; got {}", kMinMcpTimeoutMs,
                                               kMaxMcpTimeoutMs, describeJson(v)));
  return ms;
}

}  // namespace

void applyMcpServerFields(McpServerDraft& s, const json::object& body, bool creating) {
  rejectUnknownFields(body, {"name", "url", "command", "headers", "timeout_ms"},
                      {"id", "source", "transport", "state", "error", "restarts", "tools", "prompts", "resources"});
  const auto* url = body.if_contains("url");
  const auto* command = body.if_contains("command");
  if (url && command && !url->is_null() && !command->is_null())
    throw FieldError("url", "give url (a Streamable HTTP server) or command (a stdio server), not both");
  if (const auto* v = body.if_contains("name")) s.name = mcpNameField(*v);
  if (url && !url->is_null()) {
    s.url = mcpUrlField(*url);
    s.command.clear();
  }
  if (command && !command->is_null()) {
    s.command = mcpCommandField(*command);
    s.url.clear();
    if (!body.contains("headers")) s.headers.clear();
  }
  if (const auto* v = body.if_contains("headers")) s.headers = mcpHeadersField(*v, s.headers);
  if (const auto* v = body.if_contains("timeout_ms")) s.timeout_ms = mcpTimeoutField(*v);
  if (creating && s.name.empty()) throw FieldError("name", "name is required: it prefixes the server's tools as NAME__TOOL");
  if (s.url.empty() == s.command.empty())
    throw FieldError("url", "give url (a Streamable HTTP server) or command (a stdio server)");
  if (!s.command.empty() && !s.headers.empty())
    throw FieldError("headers", "headers are sent to a url; a command server takes none");
}

json::object mcpServerJson(const McpServerDraft& s, std::optional<std::int64_t> id, bool from_config,
                           bool headers_known, const mcp::ServerState* live) {
  json::value headers = nullptr;
  if (headers_known) {
    json::object h;
    for (const auto& [k, v] : s.headers) h[k] = config::maskSecret(v);
    headers = std::move(h);
  }
  json::value command = nullptr;
  if (!s.command.empty()) {
    json::array a;
    for (const auto& arg : s.command) a.emplace_back(arg);
    command = std::move(a);
  }
  json::array tools;
  if (live) {
    for (const auto& [name, description] : live->tools)
      tools.push_back(json::object{{"name", name}, {"description", description}});
  }
  return json::object{
      {"id", id ? json::value(*id) : json::value(nullptr)},
      {"name", s.name},
      {"source", from_config ? "config" : "store"},
      {"transport", s.url.empty() ? "stdio" : "http"},
      {"url", s.url.empty() ? json::value(nullptr) : json::value(config::maskedUrl(s.url))},
      {"command", std::move(command)},
      {"headers", std::move(headers)},
      {"timeout_ms", s.timeout_ms},
      {"state", live ? live->state : std::string("starting")},
      {"error", live && !live->error.empty() ? json::value(live->error) : json::value(nullptr)},
      {"restarts", live ? live->restarts : 0},
      {"tools", std::move(tools)},
      {"prompts", live ? live->prompts : 0},
      {"resources", live ? live->resources : 0},
  };
}

}  // namespace sluice::admin
