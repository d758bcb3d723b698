#include "gateway/McpEndpoint.hpp"

#include <fmt/format.h>
#include <openssl/rand.h>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/http/field.hpp>
#include <boost/json/serialize.hpp>

#include <atomic>

#include "cluster/Limiter.hpp"
#include "gateway/Auth.hpp"
#include "gateway/Snapshot.hpp"
#include "mcp/JsonRpc.hpp"
#include "mcp/McpHub.hpp"
#include "pipeline/KeyTable.hpp"
#include "pipeline/Safety.hpp"
#include "redact/Redactor.hpp"

namespace sluice::gateway {

namespace net = boost::asio;
namespace json = boost::json;
namespace bhttp = boost::beast::http;

namespace {

constexpr int kSessionNotFound = -32001;

// The notifications a stream passes on, one bit each.
constexpr std::string_view kStreamed[] = {"notifications/tools/list_changed", "notifications/prompts/list_changed",
                                          "notifications/resources/list_changed"};

// The log's copy of a tool call's arguments or result, after the redaction rules: every string
// in it is scanned as `field` (decoded, as the rules read text) and replaced by what they keep.
// Encrypt rules mask here: a token would be of no use to whoever reads the log.
void redactStrings(json::value& v, const redact::Redactor& r, redact::FieldMask field, int depth = 0) {
  if (depth > 64) return;
  if (auto* s = v.if_string()) {
    std::string out;
    const redact::Redaction res = r.redact(*s, field, out);
    if (res.blocked) {
      out.clear();
      redact::appendMask(out, res.blocked->name);
      *s = out;
    } else if (res.changed) {
      *s = out;
    }
  } else if (auto* a = v.if_array()) {
    for (auto& e : *a) redactStrings(e, r, field, depth + 1);
  } else if (auto* o = v.if_object()) {
    for (auto& kv : *o) redactStrings(kv.value(), r, field, depth + 1);
  }
}

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

struct McpEndpoint::Listener {
  explicit Listener(const net::any_io_executor& ex) : ex(ex), timer(ex) {}
  net::any_io_executor ex;
  net::steady_timer timer;           // on ex only: woken by a post of cancel()
  std::atomic<unsigned> pending{0};  // bits of kStreamed waiting to be written
  std::atomic<bool> closed{false};

  void wake(const std::shared_ptr<Listener>& self) {
    net::post(ex, [self] { self->timer.cancel(); });
  }
};

bool McpEndpoint::endSession(const std::string& id, const std::string& principal) {
  std::lock_guard lk(mu_);
  auto it = sessions_.find(id);
  if (it == sessions_.end() || it->second.principal != principal) return false;
  sessions_.erase(it);
  if (auto l = listeners_.find(id); l != listeners_.end()) {
    l->second->closed = true;
    l->second->wake(l->second);
  }
  return true;
}

void McpEndpoint::broadcast(const std::string& method) {
  unsigned bit = 0;
  for (std::size_t i = 0; i < std::size(kStreamed); ++i)
    if (kStreamed[i] == method) bit = 1u << i;
  if (bit == 0) return;
  std::lock_guard lk(mu_);
  for (auto& [id, l] : listeners_) {
    l->pending.fetch_or(bit);
    l->wake(l);
  }
}

void McpEndpoint::shutdown() {
  std::lock_guard lk(mu_);
  shut_ = true;
  for (auto& [id, l] : listeners_) {
    l->closed = true;
    l->wake(l);
  }
}

std::size_t McpEndpoint::openStreams() const {
  std::lock_guard lk(mu_);
  return listeners_.size();
}

// GET: the session's stream of server-initiated messages, until the session ends, the client
// goes, or the gateway stops.
net::awaitable<void> McpEndpoint::stream(http::Responder& r, const RequestContext& ctx, const std::string& session,
                                         const std::string& principal) {
  auto l = std::make_shared<Listener>(co_await net::this_coro::executor);
  int refused = 0;
  std::string why;
  {
    std::lock_guard lk(mu_);
    if (shut_) {
      refused = 503;
      why = "the gateway is shutting down";
    } else if (listeners_.contains(session)) {
      refused = 409;
      why = "this session already has an open stream";
    } else if (listeners_.size() >= kMaxStreams) {
      refused = 503;
      why = "too many open MCP streams; retry later";
    } else {
      listeners_.emplace(session, l);
    }
  }
  if (refused != 0) {
    http::Response res{static_cast<bhttp::status>(refused), 11};
    res.set("x-request-id", ctx.id);
    res.set(bhttp::field::content_type, "application/json");
    if (refused == 503) res.set(bhttp::field::retry_after, "5");
    res.body() = mcp::errorText(json::value(), mcp::kInvalidRequest, why);
    co_await r.send(std::move(res));
    co_return;
  }
  std::string fields = "Content-Type: text/event-stream\r\nCache-Control: no-cache\r\nx-request-id: ";
  fields.append(ctx.id).append("\r\n");
  // A comment first: the header leaves at once, so the client knows the stream is open.
  bool ok = co_await r.beginStream(200, "OK", fields);
  if (ok) ok = co_await r.writeChunk(": sluice mcp stream\n\n");
  auto beat = std::chrono::steady_clock::now();
  while (ok && !l->closed) {
    if (const unsigned bits = l->pending.exchange(0)) {
      std::string out;
      for (std::size_t i = 0; i < std::size(kStreamed); ++i) {
        if (!(bits & (1u << i))) continue;
        out += "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"";
        out += kStreamed[i];
        out += "\"}\n\n";
      }
      ok = co_await r.writeChunk(out);
      continue;
    }
    if (std::chrono::steady_clock::now() - beat >= kHeartbeat) {
      // The heartbeat finds a client that left (the write fails) and keeps the session alive.
      if (!touchSession(session, principal)) break;
      ok = co_await r.writeChunk(": keep-alive\n\n");
      beat = std::chrono::steady_clock::now();
      continue;
    }
    l->timer.expires_at(beat + kHeartbeat);
    co_await l->timer.async_wait(net::as_tuple(net::use_awaitable));
  }
  {
    std::lock_guard lk(mu_);
    if (auto it = listeners_.find(session); it != listeners_.end() && it->second == l) listeners_.erase(it);
  }
  if (ok) co_await r.endStream();
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
    if (status == 405) res.set(bhttp::field::allow, "GET, POST, DELETE");
    return res;
  };
  const json::value noId;

  // A browser page of another site reaching a gateway on this machine or network (DNS
  // rebinding): refused before the key is even read.
  if (const std::string_view origin = req[bhttp::field::origin];
      !origin.empty() && !mcp::originAllowed(origin, req[bhttp::field::host])) {
    rec.status = 403;
    rec.error = "Origin not allowed";
    {
      auto res = respond(403, mcp::errorText(noId, mcp::kInvalidRequest,
                                             "the request's Origin is not this gateway's host: refused (MCP "
                                             "requires it, against DNS rebinding)"));
      co_await r.send(std::move(res));
    }
    co_return;
  }

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
  if (req.method() == bhttp::verb::get) {
    const std::string_view accept = req[bhttp::field::accept];
    int status = 0;
    std::string why;
    if (!headerHasToken(accept, "text/event-stream")) {
      status = 406;
      why = "GET /mcp opens the stream of server messages: send Accept: text/event-stream";
    } else if (session.empty()) {
      status = 400;
      why = "no Mcp-Session-Id header: call initialize first";
    } else if (!touchSession(session, principal)) {
      status = 404;
      why = "session not found: initialize again";
    }
    if (status != 0) {
      auto res = respond(status, mcp::errorText(noId, status == 404 ? kSessionNotFound : mcp::kInvalidRequest, why));
      co_await r.send(std::move(res));
      co_return;
    }
    co_await stream(r, ctx, session, principal);  // not a request-log row, as other non-tool methods
    co_return;
  }
  if (req.method() != bhttp::verb::post) {
    {
      auto res = respond(405, mcp::errorText(noId, mcp::kInvalidRequest,
                                             "/mcp takes POST (one JSON-RPC message), GET (the stream of server "
                                             "messages) and DELETE (end a session)"));
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
    // listChanged: a GET stream on the session carries the notifications.
    json::object caps{{"tools", json::object{{"listChanged", true}}},
                      {"prompts", json::object{{"listChanged", true}}},
                      {"resources", json::object{{"listChanged", true}}}};
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
  if (method == "ping" || method == "logging/setLevel") {
    reply.result = json::object{};  // setLevel accepted: the servers' own log levels are theirs
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
      const std::string& server = l.server;
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
    const bool server = ref && hub_.has(ref->server);
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
      // The key's RPM and concurrency count tool calls, as they count model requests; so do its
      // team's (a team refusal gives the key's charge back).
      const bool limited = tool && vk && vk->subject.spec.any();
      const bool teamLimited = tool && vk && vk->team && vk->team->spec.any();
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
      if (admitted && teamLimited) {
        cluster::Decision d = co_await limiter_.acquire(*vk->team, charge);
        admitted = d.allowed;
        if (!admitted) {
          if (limited) co_await limiter_.settle(vk->subject, charge, 0, 0);
          reply = McpReply::error(mcp::kLimited, fmt::format("team {}'s {} limit is reached; retry in {} ms",
                                                             vk->team_name, cluster::limitKindName(d.hit),
                                                             d.retry_after_ms));
          rec.status = 429;
        }
      }
      if (admitted) {
        params["name"] = ref->name;
        json::value args = tool && params.contains("arguments") ? params.at("arguments") : json::value();
        std::string m = method;
        std::string target(ref->server);
        mcp::CallResult cr = co_await hub_.call(std::move(target), std::move(m), std::move(params));
        if (tool) {
          rec.status = recordStatus(cr);
          if (!cr.ok()) {
            rec.error = cr.message;
          } else if (const auto* o = cr.result.if_object(); o && o->contains("isError") && o->at("isError") == true) {
            rec.error = "the tool reported an error";
          }
        }
        // Arguments and results are kept with store.log_bodies, after the redaction rules (as
        // the proxy keeps a body as it went upstream): the arguments read as tool-call
        // arguments, the result as a tool result. What reaches the server is not changed.
        const auto& st = snap.cfg->store;
        if (tool && st.log_bodies) {
          json::value result = cr.result;
          if (snap.redactionOn()) {
            const redact::Redactor redactor(snap.safety->rules(), nullptr);
            redactStrings(args, redactor, redact::kToolArguments);
            redactStrings(result, redactor, redact::kTool);
          }
          json::object logged{{"name", name}, {"arguments", std::move(args)}};
          rec.request_body = json::serialize(logged).substr(0, st.log_body_max_bytes);
          rec.response_body = json::serialize(result).substr(0, st.log_body_max_bytes);
        }
        reply = replyOfCall(std::move(cr));
        if (limited) co_await limiter_.settle(vk->subject, charge, 0, 0);
        if (teamLimited) co_await limiter_.settle(*vk->team, charge, 0, 0);
      }
    }
    if (!reply.ok && tool && rec.error.empty()) rec.error = reply.message;
  } else if (method == "resources/read") {
    // A copy: `ref` views into it, and params["uri"] is rewritten below.
    const std::string uri(nameParam("uri"));
    auto ref = mcp::unwrapUri(uri);
    if (!ref || !hub_.has(ref->server)) {
      reply = McpReply::error(mcp::kInvalidParams,
                              "unknown resource: URIs are sluice-mcp://SERVER/URI (see resources/list)");
    } else {
      params["uri"] = ref->name;
      std::string m = method;
      std::string target(ref->server);
      mcp::CallResult cr = co_await hub_.call(std::move(target), std::move(m), std::move(params));
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
