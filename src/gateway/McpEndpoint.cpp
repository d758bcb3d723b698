#include "gateway/McpEndpoint.hpp"

#include <fmt/format.h>
#include <openssl/rand.h>
#include <boost/beast/http/field.hpp>
#include <boost/json/serialize.hpp>

#include "cluster/Limiter.hpp"
#include "gateway/Auth.hpp"
#include "gateway/Snapshot.hpp"
#include "mcp/JsonRpc.hpp"
#include "mcp/McpHub.hpp"
#include "pipeline/KeyTable.hpp"

namespace sluice::gateway {

namespace net = boost::asio;
namespace json = boost::json;
namespace bhttp = boost::beast::http;

namespace {

constexpr int kSessionNotFound = -32001;

std::string randomSessionId() {
  unsigned char bytes[16];
  if (RAND_bytes(bytes, sizeof bytes) != 1) return {};
  std::string out = "mcp-";
  for (unsigned char b : bytes) out += fmt::format("{:02x}", b);
  return out;
}

bool headerHasToken(std::string_view header, std::string_view token) {
  std::size_t pos = 0;
  while (pos <= header.size()) {
    auto comma = header.find(',', pos);
    std::string_view part = header.substr(pos, comma == std::string_view::npos ? std::string_view::npos : comma - pos);
    part = part.substr(0, part.find(';'));
    while (!part.empty() && part.front() == ' ') part.remove_prefix(1);
    while (!part.empty() && part.back() == ' ') part.remove_suffix(1);
    if (part.size() == token.size() && std::equal(part.begin(), part.end(), token.begin(), [](char a, char b) {
          return std::tolower(static_cast<unsigned char>(a)) == std::tolower(static_cast<unsigned char>(b));
        }))
      return true;
    if (comma == std::string_view::npos) break;
    pos = comma + 1;
  }
  return false;
}

// How one tools/call ended, for the record: the status a log row and /metrics show.
int recordStatus(const mcp::CallResult& r) {
  switch (r.status) {
    case mcp::CallResult::Status::Ok:
      return 200;
    case mcp::CallResult::Status::RpcError:
      return r.code == mcp::kInvalidParams || r.code == mcp::kMethodNotFound ? 400 : 502;
    case mcp::CallResult::Status::Timeout:
      return 504;
    case mcp::CallResult::Status::Busy:
      return 503;
    case mcp::CallResult::Status::Unavailable:
      return 502;
  }
  return 502;
}

// What the gateway answers one request with: a result, or an error.
struct McpReply {
  bool ok = true;
  json::value result;
  int code = 0;
  std::string message;
  static McpReply error(int code, std::string message) {
    McpReply r;
    r.ok = false;
    r.code = code;
    r.message = std::move(message);
    return r;
  }
};

McpReply replyOfCall(mcp::CallResult&& r) {
  if (r.ok()) {
    McpReply out;
    out.result = std::move(r.result);
    return out;
  }
  if (r.status == mcp::CallResult::Status::RpcError) return McpReply::error(r.code, std::move(r.message));
  return McpReply::error(mcp::kServerUnavailable, std::move(r.message));
}

}  // namespace

std::string McpEndpoint::openSession(const std::string& principal, std::string version) {
  std::string id = randomSessionId();
  const auto now = std::chrono::steady_clock::now();
  std::lock_guard lk(mu_);
  if (sessions_.size() >= kMaxSessions) {
    std::erase_if(sessions_, [&](const auto& kv) { return now - kv.second.used > kSessionIdle; });
    if (sessions_.size() >= kMaxSessions) {
      auto oldest = std::min_element(sessions_.begin(), sessions_.end(),
                                     [](const auto& a, const auto& b) { return a.second.used < b.second.used; });
      sessions_.erase(oldest);
    }
  }
  sessions_[id] = Session{principal, std::move(version), now};
  return id;
}

std::optional<std::string> McpEndpoint::touchSession(const std::string& id, const std::string& principal) {
  const auto now = std::chrono::steady_clock::now();
  std::lock_guard lk(mu_);
  auto it = sessions_.find(id);
  if (it == sessions_.end() || it->second.principal != principal) return std::nullopt;
  if (now - it->second.used > kSessionIdle) {
    sessions_.erase(it);
    return std::nullopt;
  }
  it->second.used = now;
  return it->second.version;
}

bool McpEndpoint::endSession(const std::string& id, const std::string& principal) {
  std::lock_guard lk(mu_);
  auto it = sessions_.find(id);
  if (it == sessions_.end() || it->second.principal != principal) return false;
  sessions_.erase(it);
  return true;
}

net::awaitable<void> McpEndpoint::handle(const Snapshot& snap, http::Request& req, http::Responder& r,
                                         const RequestContext& ctx, RequestRecord& rec) {
  bool sse = false;
  std::string sessionHeader;
  auto respond = [&](int status, std::string body) {
    http::Response res{static_cast<bhttp::status>(status), 11};
    res.set("x-request-id", ctx.id);
    if (!sessionHeader.empty()) res.set("mcp-session-id", sessionHeader);
    if (!body.empty()) {
      if (sse) {
        res.set(bhttp::field::content_type, "text/event-stream");
        res.set(bhttp::field::cache_control, "no-cache");
        res.body() = "event: message\ndata: " + body + "\n\n";
      } else {
        res.set(bhttp::field::content_type, "application/json");
        res.body() = std::move(body);
      }
    }
    if (status == 401) res.set(bhttp::field::www_authenticate, "Bearer");
    if (status == 405) res.set(bhttp::field::allow, "POST, DELETE");
    return res;
  };
  const json::value noId;

  // Who is calling, before anything reaches a server.
  KeyCheck check = checkKey(snap, presentedKey(req, ctx.query));
  if (!check.ok()) {
    rec.status = 401;
    rec.error = check.message;
    {
      auto res = respond(401, mcp::errorText(noId, mcp::kInvalidRequest, check.message));
      co_await r.send(std::move(res));
    }
    co_return;
  }
  const pipeline::VirtualKeyEntry* vk = check.vk;
  if (vk) rec.virtual_key_id = vk->id;
  const std::string principal = vk ? "vk:" + std::to_string(vk->id) : "master";
  const std::string session(req["mcp-session-id"]);

  if (req.method() == bhttp::verb::delete_) {
    const bool ended = !session.empty() && endSession(session, principal);
    {
      auto res =
          respond(ended ? 200 : 404, ended ? std::string() : mcp::errorText(noId, kSessionNotFound, "no such session"));
      co_await r.send(std::move(res));
    }
    co_return;
  }
  if (req.method() != bhttp::verb::post) {
    // No stream of server-initiated messages: the spec lets a server answer GET with 405.
    {
      auto res = respond(405, mcp::errorText(noId, mcp::kInvalidRequest,
                                             "/mcp takes POST (one JSON-RPC message) and DELETE (end a session)"));
      co_await r.send(std::move(res));
    }
    co_return;
  }
  const std::string_view contentType = req[bhttp::field::content_type];
  if (!headerHasToken(contentType, "application/json")) {
    {
      auto res = respond(415, mcp::errorText(noId, mcp::kInvalidRequest,
                                             "send the JSON-RPC message with Content-Type: application/json"));
      co_await r.send(std::move(res));
    }
    co_return;
  }
  const std::string_view accept = req[bhttp::field::accept];
  if (!accept.empty() && !headerHasToken(accept, "application/json") && !headerHasToken(accept, "*/*") &&
      !headerHasToken(accept, "application/*")) {
    if (!headerHasToken(accept, "text/event-stream")) {
      {
        auto res =
            respond(406, mcp::errorText(noId, mcp::kInvalidRequest, "accept application/json or text/event-stream"));
        co_await r.send(std::move(res));
      }
      co_return;
    }
    sse = true;
  }

  mcp::RpcParse p = mcp::parseMessage(req.body());
  if (!p.ok) {
    {
      auto res = respond(400, mcp::errorText(p.id, p.code, p.message));
      co_await r.send(std::move(res));
    }
    co_return;
  }
  if (const std::string_view v = req["mcp-protocol-version"]; !v.empty() && !mcp::supportedVersion(v)) {
    {
      auto res = respond(
          400, mcp::errorText(p.id, mcp::kInvalidRequest, fmt::format("unsupported MCP-Protocol-Version {:.40}", v)));
      co_await r.send(std::move(res));
    }
    co_return;
  }
  if (p.msg.kind != mcp::RpcMessage::Kind::Request) {
    {
      auto res = respond(202, std::string());
      co_await r.send(std::move(res));
    }  // notifications and responses: accepted, nothing to say
    co_return;
  }
  const std::string& method = p.msg.method;
  const json::value& id = p.msg.id;
  json::object& params = p.msg.params;

  if (method == "initialize") {
    std::string_view asked;
    if (const auto* v = params.if_contains("protocolVersion"); v && v->is_string()) asked = v->get_string();
    const std::string version(mcp::negotiateVersion(asked));
    sessionHeader = openSession(principal, version);
    json::object caps{{"tools", json::object{{"listChanged", false}}},
                      {"prompts", json::object{{"listChanged", false}}},
                      {"resources", json::object{{"listChanged", false}}}};
    json::object result{{"protocolVersion", version},
                        {"capabilities", std::move(caps)},
                        {"serverInfo", json::object{{"name", "sluice"}, {"version", SLUICE_VERSION}}},
                        {"instructions",
                         "Tools, prompts and resources of several MCP servers: names are SERVER__NAME, resource "
                         "URIs sluice-mcp://SERVER/URI."}};
    {
      auto res = respond(200, mcp::resultText(id, result));
      co_await r.send(std::move(res));
    }
    co_return;
  }
  if (session.empty()) {
    {
      auto res =
          respond(400, mcp::errorText(id, mcp::kInvalidRequest, "no Mcp-Session-Id header: call initialize first"));
      co_await r.send(std::move(res));
    }
    co_return;
  }
  if (!touchSession(session, principal)) {
    {
      auto res = respond(404, mcp::errorText(id, kSessionNotFound, "session not found: initialize again"));
      co_await r.send(std::move(res));
    }
    co_return;
  }

  McpReply reply;
  auto nameParam = [&](const char* field) -> std::string_view {
    const auto* v = params.if_contains(field);
    return v && v->is_string() ? std::string_view(v->get_string()) : std::string_view();
  };
  if (method == "ping") {
    reply.result = json::object{};
  } else if (method == "tools/list" || method == "prompts/list" || method == "resources/list" ||
             method == "resources/templates/list") {
    const bool tools = method == "tools/list";
    const bool prompts = method == "prompts/list";
    const char* key = tools                        ? "tools"
                      : prompts                    ? "prompts"
                      : method == "resources/list" ? "resources"
                                                   : "resourceTemplates";
    const char* field = tools || prompts ? "name" : method == "resources/list" ? "uri" : "uriTemplate";
    std::string m = method;
    std::string k = key;
    std::vector<mcp::ServerItems> lists = co_await hub_.listAll(std::move(m), std::move(k));
    json::array merged;
    for (auto& l : lists) {
      const std::string& server = hub_.name(l.server);
      for (auto& item : l.items) {
        auto* o = item.if_object();
        const auto* v = o ? o->if_contains(field) : nullptr;
        if (!v || !v->is_string()) continue;
        std::string named =
            tools || prompts ? mcp::joinName(server, v->get_string()) : mcp::wrapUri(server, v->get_string());
        if (tools && vk && !vk->allowsTool(named)) continue;
        (*o)[field] = named;
        merged.push_back(std::move(item));
      }
    }
    reply.result = json::object{{key, std::move(merged)}};
  } else if (method == "tools/call" || method == "prompts/get") {
    const bool tool = method == "tools/call";
    const std::string name(nameParam("name"));
    const char* what = tool ? "tool" : "prompt";
    auto ref = mcp::splitName(name);
    std::optional<std::size_t> server = ref ? hub_.find(ref->server) : std::nullopt;
    const std::string shown = name.substr(0, 128);
    if (tool && ref && server) {
      rec.channel = std::string(ref->server);
      rec.model = std::string(ref->name);
    }
    if (name.empty()) {
      reply = McpReply::error(mcp::kInvalidParams, fmt::format("params.name must name the {}", what));
      if (tool) rec.status = 400;
    } else if (!server) {
      reply = McpReply::error(mcp::kInvalidParams,
                              fmt::format("unknown {} {}: names are SERVER__NAME, SERVER one of this gateway's MCP "
                                          "servers (see {}s/list)",
                                          what, json::serialize(json::value(shown)), what));
      if (tool) rec.status = 404;
    } else if (tool && vk && !vk->allowsTool(name)) {
      reply = McpReply::error(mcp::kInvalidParams, fmt::format("tool {} is not allowed for this API key ({}...)",
                                                               json::serialize(json::value(shown)), vk->prefix));
      rec.status = 403;
    } else {
      // The key's RPM and concurrency count tool calls, as they count model requests.
      const bool limited = tool && vk && vk->subject.spec.any();
      cluster::Charge charge{ctx.id, 0, 0};
      bool admitted = true;
      if (limited) {
        cluster::Decision d = co_await limiter_.acquire(vk->subject, charge);
        admitted = d.allowed;
        if (!admitted) {
          reply = McpReply::error(mcp::kLimited, fmt::format("the API key's {} limit is reached; retry in {} ms",
                                                             cluster::limitKindName(d.hit), d.retry_after_ms));
          rec.status = 429;
        }
      }
      if (admitted) {
        params["name"] = ref->name;
        std::string m = method;
        mcp::CallResult cr = co_await hub_.call(*server, std::move(m), std::move(params));
        if (tool) {
          rec.status = recordStatus(cr);
          if (!cr.ok()) {
            rec.error = cr.message;
          } else if (const auto* o = cr.result.if_object(); o && o->contains("isError") && o->at("isError") == true) {
            rec.error = "the tool reported an error";
          }
        }
        // Arguments and results are kept with store.log_bodies, but only while redaction is off:
        // its rules are written for model requests, and what they would hide must not reach the
        // log through a tool call either (as the route stage does for bodies it cannot scan).
        const auto& st = snap.cfg->store;
        if (tool && st.log_bodies && !snap.redactionOn()) {
          rec.request_body = req.body().substr(0, st.log_body_max_bytes);
          std::string answer = json::serialize(cr.result);
          rec.response_body = answer.substr(0, st.log_body_max_bytes);
        }
        reply = replyOfCall(std::move(cr));
        if (limited) co_await limiter_.settle(vk->subject, charge, 0, 0);
      }
    }
    if (!reply.ok && tool && rec.error.empty()) rec.error = reply.message;
  } else if (method == "resources/read") {
    // A copy: `ref` views into it, and params["uri"] is rewritten below.
    const std::string uri(nameParam("uri"));
    auto ref = mcp::unwrapUri(uri);
    std::optional<std::size_t> server = ref ? hub_.find(ref->server) : std::nullopt;
    if (!server) {
      reply = McpReply::error(mcp::kInvalidParams,
                              "unknown resource: URIs are sluice-mcp://SERVER/URI (see resources/list)");
    } else {
      params["uri"] = ref->name;
      std::string m = method;
      mcp::CallResult cr = co_await hub_.call(*server, std::move(m), std::move(params));
      if (auto* o = cr.ok() ? cr.result.if_object() : nullptr) {
        if (auto* contents = o->if_contains("contents"); contents && contents->is_array()) {
          for (auto& c : contents->get_array()) {
            auto* co = c.if_object();
            auto* uri = co ? co->if_contains("uri") : nullptr;
            if (uri && uri->is_string()) *uri = mcp::wrapUri(ref->server, uri->get_string());
          }
        }
      }
      reply = replyOfCall(std::move(cr));
    }
  } else if (method == "logging/setLevel") {
    reply.result = json::object{};  // accepted; the servers' own log levels are theirs
  } else {
    reply = McpReply::error(mcp::kMethodNotFound, fmt::format("method {} is not offered by this gateway",
                                                              json::serialize(json::value(method.substr(0, 128)))));
  }
  std::string body = reply.ok ? mcp::resultText(id, reply.result) : mcp::errorText(id, reply.code, reply.message);
  {
    auto res = respond(200, std::move(body));
    co_await r.send(std::move(res));
  }
}

}  // namespace sluice::gateway
