#include "mcp/JsonRpc.hpp"

#include <boost/json/serialize.hpp>

#include <array>
#include <cctype>

#include "config/Scalars.hpp"
#include "core/JsonText.hpp"
#include "providers/CodecUtil.hpp"

namespace sluice::mcp {
namespace json = boost::json;

namespace {

constexpr std::array<std::string_view, 5> kVersions = {"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05",
                                                       "2024-10-07"};
constexpr std::size_t kMaxName = 256;
constexpr std::size_t kMaxUri = 4096;
constexpr std::size_t kMaxErrorMessage = 1024;

bool cleanMcpText(std::string_view s, std::size_t max) {
  if (s.empty() || s.size() > max) return false;
  for (const char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7f) return false;
  }
  return true;
}

bool validRpcId(const json::value& id) {
  if (id.is_string()) return id.get_string().size() <= 256;
  return id.is_int64() || id.is_uint64();
}

std::optional<std::int64_t> rpcIdNumber(const json::value& id) {
  if (id.is_int64()) return id.get_int64();
  if (id.is_uint64() && id.get_uint64() <= static_cast<std::uint64_t>(INT64_MAX))
    return static_cast<std::int64_t>(id.get_uint64());
  return std::nullopt;
}

// Reads the response to `id` from one parsed message, if it is that.
bool takeAnswer(const json::value& v, std::int64_t id, UpstreamAnswer& out) {
  if (!v.is_object()) return false;
  const auto& o = v.get_object();
  const auto* mid = o.if_contains("id");
  if (!mid || rpcIdNumber(*mid) != id) return false;
  if (const auto* r = o.if_contains("result")) {
    out.ok = true;
    out.result = *r;
    return true;
  }
  if (const auto* e = o.if_contains("error"); e && e->is_object()) {
    out.ok = true;
    out.is_error = true;
    out.result = *e;
    const auto& eo = e->get_object();
    if (const auto* c = eo.if_contains("code"); c && c->is_int64()) out.code = static_cast<int>(c->get_int64());
    if (const auto* m = eo.if_contains("message"); m && m->is_string())
      out.message =
          std::string(m->get_string().subview(0, std::min<std::size_t>(m->get_string().size(), kMaxErrorMessage)));
    return true;
  }
  return false;
}

bool takeFromJson(std::string_view text, std::int64_t id, UpstreamAnswer& out) {
  boost::system::error_code ec;
  const json::value v = parseJson(text, ec);
  if (ec) return false;
  if (v.is_array()) {
    for (const auto& item : v.get_array())
      if (takeAnswer(item, id, out)) return true;
    return false;
  }
  return takeAnswer(v, id, out);
}

}  // namespace

std::span<const std::string_view> protocolVersions() {
  return kVersions;
}

bool supportedVersion(std::string_view v) {
  for (const auto k : kVersions)
    if (k == v) return true;
  return false;
}

std::string_view negotiateVersion(std::string_view asked) {
  return supportedVersion(asked) ? asked : kVersions.front();
}

std::optional<NameRef> splitName(std::string_view namespaced) {
  const auto at = namespaced.find(kSeparator);
  if (at == std::string_view::npos) return std::nullopt;
  NameRef r{namespaced.substr(0, at), namespaced.substr(at + kSeparator.size())};
  if (!config::validMcpServerName(r.server) || !cleanMcpText(r.name, kMaxName)) return std::nullopt;
  return r;
}

std::string joinName(std::string_view server, std::string_view name) {
  std::string out;
  out.reserve(server.size() + kSeparator.size() + name.size());
  out.append(server).append(kSeparator).append(name);
  return out;
}

std::string wrapUri(std::string_view server, std::string_view uri) {
  std::string out;
  out.reserve(kResourceScheme.size() + server.size() + 1 + uri.size());
  out.append(kResourceScheme).append(server).append("/").append(uri);
  return out;
}

std::optional<NameRef> unwrapUri(std::string_view wrapped) {
  if (!wrapped.starts_with(kResourceScheme)) return std::nullopt;
  const std::string_view rest = wrapped.substr(kResourceScheme.size());
  const auto slash = rest.find('/');
  if (slash == std::string_view::npos) return std::nullopt;
  NameRef r{rest.substr(0, slash), rest.substr(slash + 1)};
  if (!config::validMcpServerName(r.server) || !cleanMcpText(r.name, kMaxUri)) return std::nullopt;
  return r;
}

RpcParse parseMessage(std::string_view body) {
  RpcParse p;
  boost::system::error_code ec;
  json::value v = parseJson(body, ec);
  if (ec) {
    p.code = kParseError;
    p.message = isTooDeep(ec) ? tooDeepMessage("the message") : "the body is not valid JSON: " + ec.message();
    return p;
  }
  p.code = kInvalidRequest;
  if (v.is_array()) {
    p.message = "JSON-RPC batches are not accepted: send one message per request";
    return p;
  }
  if (!v.is_object()) {
    p.message = "a JSON-RPC message must be an object";
    return p;
  }
  auto& o = v.get_object();
  const auto* version = o.if_contains("jsonrpc");
  const auto* id = o.if_contains("id");
  if (id && validRpcId(*id)) p.id = *id;
  if (!version || !version->is_string() || version->get_string() != "2.0") {
    p.message = "\"jsonrpc\" must be \"2.0\"";
    return p;
  }
  const auto* method = o.if_contains("method");
  if (!method) {
    if (id && (o.contains("result") || o.contains("error"))) {
      p.ok = true;
      p.msg.kind = RpcMessage::Kind::Response;
      return p;
    }
    p.message = "a JSON-RPC request needs a \"method\"";
    return p;
  }
  if (!method->is_string() || !cleanMcpText(method->get_string(), 128)) {
    p.message = "\"method\" must be a method name";
    return p;
  }
  if (id && !validRpcId(*id)) {
    p.message = "\"id\" must be a string (at most 256 bytes) or an integer";
    return p;
  }
  p.msg.method = std::string(method->get_string());
  if (const auto* params = o.if_contains("params")) {
    if (!params->is_object()) {
      if (!params->is_null()) {
        p.message = "\"params\" must be an object";
        return p;
      }
    } else {
      p.msg.params = params->get_object();
    }
  }
  p.msg.kind = id ? RpcMessage::Kind::Request : RpcMessage::Kind::Notification;
  if (id) p.msg.id = *id;
  p.ok = true;
  return p;
}

std::string resultText(const json::value& id, const json::value& result) {
  std::string out = R"({"jsonrpc":"2.0","id":)";
  out += json::serialize(id);
  out += R"(,"result":)";
  out += json::serialize(result);
  out += '}';
  return out;
}

std::string errorText(const json::value& id, int code, std::string_view message) {
  std::string out = R"({"jsonrpc":"2.0","id":)";
  out += json::serialize(id);
  out += R"(,"error":{"code":)";
  out += std::to_string(code);
  out += R"(,"message":)";
  appendJsonString(out, message.substr(0, kMaxErrorMessage));
  out += "}}";
  return out;
}

UpstreamAnswer readUpstreamAnswer(std::string_view content_type, std::string_view body, std::int64_t id) {
  UpstreamAnswer out;
  const auto semi = content_type.find(';');
  std::string_view type = content_type.substr(0, semi);
  while (!type.empty() && type.back() == ' ') type.remove_suffix(1);
  if (type != "text/event-stream") {
    if (!takeFromJson(body, id, out)) out.message = "the server's answer is not a JSON-RPC response to the request";
    return out;
  }
  // SSE, split as the provider streams are; the first event whose data answers the request wins.
  // A last event without its closing blank line still counts (the body is whole).
  providers::detail::SseSplitter events;
  bool found = false;
  auto take = [&](std::string_view, std::string_view data) {
    if (!found && !data.empty()) found = takeFromJson(data, id, out);
  };
  events.feed(body, take);
  if (!found && events.pending() > 0) events.feed("\n\n", take);
  if (found) return out;
  out.message = "the server's event stream ended without a response to the request";
  return out;
}

std::optional<std::int64_t> responseId(const json::value& message) {
  if (!message.is_object()) return std::nullopt;
  const auto& o = message.get_object();
  if (o.contains("method")) return std::nullopt;
  const auto* id = o.if_contains("id");
  return id ? rpcIdNumber(*id) : std::nullopt;
}

namespace {

// The host of "host", "host:port", "[v6]" or "[v6]:port", lower-cased; "" when malformed.
std::string hostOf(std::string_view authority) {
  if (authority.empty() || authority.size() > 512) return {};
  std::string_view host;
  if (authority.front() == '[') {
    const auto close = authority.find(']');
    if (close == std::string_view::npos) return {};
    host = authority.substr(0, close + 1);
    authority.remove_prefix(close + 1);
    if (!authority.empty() && authority.front() != ':') return {};
  } else {
    const auto colon = authority.find(':');
    host = authority.substr(0, colon);
    authority.remove_prefix(colon == std::string_view::npos ? authority.size() : colon);
  }
  if (!authority.empty()) {  // ":port"
    authority.remove_prefix(1);
    if (authority.empty() || authority.size() > 5) return {};
    for (char c : authority)
      if (c < '0' || c > '9') return {};
  }
  if (host.empty()) return {};
  std::string out;
  for (char c : host) {
    const auto u = static_cast<unsigned char>(c);
    if (u <= 0x20 || u >= 0x7f || c == '/' || c == '@' || c == '\\' || c == '?' || c == '#') return {};
    out += static_cast<char>(std::tolower(u));
  }
  return out;
}

bool loopbackName(std::string_view h) {
  return h == "localhost" || h == "127.0.0.1" || h == "[::1]";
}

}  // namespace

bool originAllowed(std::string_view origin, std::string_view host) {
  const auto scheme = origin.find("://");
  if (scheme == std::string_view::npos) return false;
  const std::string_view s = origin.substr(0, scheme);
  if (s != "http" && s != "https") return false;
  std::string_view authority = origin.substr(scheme + 3);
  if (!authority.empty() && authority.back() == '/') authority.remove_suffix(1);  // some clients add one
  const std::string from = hostOf(authority);
  const std::string to = hostOf(host);
  if (from.empty() || to.empty()) return false;
  return from == to || (loopbackName(from) && loopbackName(to));
}

}  // namespace sluice::mcp
