#include "gateway/ResponsesSocket.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/buffers_to_string.hpp>
#include <boost/beast/ssl/ssl_stream.hpp>
#include <boost/beast/websocket.hpp>
#include <boost/json/object.hpp>
#include <boost/json/serialize.hpp>

#include <ctime>
#include <random>
#include <vector>

#include "core/JsonText.hpp"
#include "providers/CodecUtil.hpp"

namespace sluice::gateway {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
namespace websocket = boost::beast::websocket;
namespace json = boost::json;

namespace {

constexpr auto kTuple = net::as_tuple(net::use_awaitable);

std::string randomHex(std::size_t n) {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  static constexpr char kHex[] = "0123456789abcdef";
  std::string s(n, '0');
  for (auto& c : s) c = kHex[rng() & 15u];
  return s;
}

bool terminalEvent(std::string_view type) {
  return type == "response.completed" || type == "response.incomplete" || type == "response.failed";
}

// The headers of the upgrade that every turn's POST carries: all but the connection's own.
http::Request turnRequest(const http::Request& upgrade, std::string body) {
  http::Request req{bhttp::verb::post, "/v1/responses", 11};
  auto target = upgrade.target();
  if (auto q = target.find('?'); q != std::string_view::npos)
    req.target(std::string("/v1/responses") + std::string(target.substr(q)));
  for (const auto& f : upgrade) {
    switch (f.name()) {
      case bhttp::field::connection:
      case bhttp::field::upgrade:
      case bhttp::field::content_length:
      case bhttp::field::transfer_encoding:
      case bhttp::field::content_type:
      case bhttp::field::sec_websocket_key:
      case bhttp::field::sec_websocket_version:
      case bhttp::field::sec_websocket_extensions:
      case bhttp::field::sec_websocket_protocol:
        continue;
      default:
        break;
    }
    if (beast::iequals(f.name_string(), "x-request-id")) continue;  // each turn is a request of its own
    req.insert(f.name_string(), f.value());
  }
  req.set(bhttp::field::content_type, "application/json");
  req.body() = std::move(body);
  req.prepare_payload();
  return req;
}

// Takes one turn's answer from the request path: SSE events become text messages; a whole
// answer becomes one message (an error, or a completed response).
template <class Ws>
class SocketSink final : public http::ResponseSink {
 public:
  explicit SocketSink(Ws& ws) : ws_(ws) {}

  net::awaitable<bool> whole(const http::Response& res) override {
    ended_ = true;
    boost::system::error_code ec;
    json::value body = sluice::parseJson(res.body(), ec);
    const int status = res.result_int();
    if (status >= 400) {
      json::object msg{{"type", "error"}, {"status", status}};
      const json::value* err = !ec && body.is_object() ? body.as_object().if_contains("error") : nullptr;
      if (err && err->is_object()) {
        msg["error"] = *err;
      } else {
        msg["error"] = json::object{{"type", "api_error"}, {"message", std::string(res.body())}};
      }
      co_return co_await send(json::serialize(msg));
    }
    if (ec || !body.is_object()) {
      co_return co_await send(ResponseChain::errorMessage(502, "api_error", "bad_response",
                                                          "the upstream's answer was not a JSON response object"));
    }
    // A whole response object (a non-streamed answer): the client reads it as the stream's end.
    noteResponse(body.as_object(), "response.completed");
    json::object msg{{"type", "response.completed"}, {"sequence_number", 0}, {"response", std::move(body)}};
    co_return co_await send(json::serialize(msg));
  }

  void streamStatus(int status) override { status_ = status; }

  net::awaitable<bool> streamData(std::string_view data) override {
    events_.clear();
    const bool fits = split_.feed(data, [&](std::string_view name, std::string_view payload) {
      if (payload.empty() || payload == "[DONE]") return;
      events_.emplace_back(name, payload);
    });
    for (auto& [name, payload] : events_) {
      if (terminalEvent(name) || (name.empty() && payload.find("\"response.") != std::string::npos)) {
        boost::system::error_code ec;
        json::value v = sluice::parseJson(payload, ec);
        if (!ec && v.is_object()) {
          const auto* t = v.as_object().if_contains("type");
          if (t && t->is_string() && terminalEvent(t->as_string())) {
            if (const auto* r = v.as_object().if_contains("response"); r && r->is_object())
              noteResponse(r->as_object(), t->as_string());
          }
        }
      }
      if (!co_await send(payload)) co_return false;
    }
    if (!fits) co_return false;  // one event past the limit: the stream is failed
    co_return true;
  }

  net::awaitable<bool> streamEnd() override {
    ended_ = true;
    co_return true;
  }

  net::awaitable<bool> send(std::string_view text) {
    ws_.text(true);
    auto [ec, n] = co_await ws_.async_write(net::buffer(text.data(), text.size()), kTuple);
    if (ec) {
      lost_ = true;
      co_return false;
    }
    co_return true;
  }

  bool lost() const { return lost_; }
  bool sawEnd() const { return ended_ || !final_type_.empty(); }
  // The last terminal event's response: its id and output, when it completed (or was incomplete).
  const std::string& finalId() const { return final_id_; }
  const json::array& finalOutput() const { return final_output_; }
  bool chainable() const { return final_type_ == "response.completed" || final_type_ == "response.incomplete"; }

 private:
  void noteResponse(const json::object& r, std::string_view type) {
    final_type_ = type;
    if (const auto* id = r.if_contains("id"); id && id->is_string()) final_id_ = std::string(id->as_string());
    if (const auto* out = r.if_contains("output"); out && out->is_array()) final_output_ = out->as_array();
  }

  Ws& ws_;
  providers::detail::SseSplitter split_;
  std::vector<std::pair<std::string, std::string>> events_;
  int status_ = 0;
  bool ended_ = false;
  bool lost_ = false;
  std::string final_type_;
  std::string final_id_;
  json::array final_output_;
};

template <class Ws>
net::awaitable<bool> sendText(Ws& ws, std::string_view text) {
  ws.text(true);
  auto [ec, n] = co_await ws.async_write(net::buffer(text.data(), text.size()), kTuple);
  co_return !ec;
}

template <class Ws>
net::awaitable<void> session(Ws& ws, http::Request& upgrade, http::Responder& r, const ResponsesSocketOptions& o,
                             PostHandler& post) {
  r.stream().expires_never();  // the WebSocket's own timeouts govern from here
  websocket::stream_base::timeout timeouts{};
  timeouts.handshake_timeout = std::chrono::seconds(30);
  timeouts.idle_timeout = o.idle_timeout;
  timeouts.keep_alive_pings = true;  // a quiet client is pinged at half the idle time
  ws.set_option(timeouts);
  ws.read_message_max(o.max_message_bytes);
  ws.auto_fragment(false);
  ws.set_option(websocket::stream_base::decorator(
      [](websocket::response_type& res) { res.set(bhttp::field::server, "sluice"); }));
  auto [aec] = co_await ws.async_accept(upgrade, kTuple);
  if (aec) co_return;

  ResponseChain chain(o);
  beast::flat_buffer buf;
  for (;;) {
    buf.clear();
    auto [ec, n] = co_await ws.async_read(buf, kTuple);
    if (ec) break;  // closed by the client, idle, too large (closed 1009), or the connection broke
    if (!ws.got_text()) {
      if (!co_await sendText(ws, ResponseChain::errorMessage(400, "invalid_request_error", "invalid_message",
                                                             "messages are JSON text, not binary")))
        break;
      continue;
    }
    ResponseChain::Turn turn = chain.prepare(beast::buffers_to_string(buf.data()));
    if (turn.error) {
      if (!co_await sendText(ws, *turn.error)) break;
      continue;
    }
    if (turn.warmup) {
      bool ok = true;
      for (const auto& e : chain.warmup(turn))
        if (ok) ok = co_await sendText(ws, e);
      if (!ok) break;
      continue;
    }
    http::Request req = turnRequest(upgrade, std::move(turn.body));
    SocketSink<Ws> sink(ws);
    http::Responder sub(sink, r.stream(), r.worker(), r.remote(), r.listener());
    co_await post(req, sub);
    if (sink.lost()) co_return;  // the client is gone: nothing to close politely
    if (!sink.sawEnd() && sub.started()) {
      // The request path ended the stream without its closing event: say so rather than leave
      // the client waiting for one.
      if (!co_await sendText(ws, ResponseChain::errorMessage(502, "api_error", "stream_ended",
                                                             "the response stream ended before it completed")))
        break;
    }
    if (sink.chainable() && !sink.finalId().empty())
      chain.keep(sink.finalId(), std::move(turn.items), sink.finalOutput());
  }
  if (ws.is_open()) co_await ws.async_close(websocket::close_code::normal, kTuple);
}

}  // namespace

std::string ResponseChain::errorMessage(int status, std::string_view type, std::string_view code,
                                        std::string_view message, std::string_view param) {
  json::object err{{"type", type}, {"code", code}, {"message", message}};
  err["param"] = param.empty() ? json::value(nullptr) : json::value(param);
  json::object msg{{"type", "error"}, {"status", status}, {"error", std::move(err)}};
  return json::serialize(msg);
}

const ResponseChain::Kept* ResponseChain::find(std::string_view id) const {
  for (const auto& k : kept_)
    if (k.id == id) return &k;
  return nullptr;
}

ResponseChain::Turn ResponseChain::prepare(std::string_view message) const {
  Turn t;
  boost::system::error_code ec;
  json::value v = sluice::parseJson(message, ec);
  if (ec || !v.is_object()) {
    t.error = errorMessage(400, "invalid_request_error", "invalid_json", "the message is not a JSON object");
    return t;
  }
  json::object& o = v.as_object();
  const auto* type = o.if_contains("type");
  if (!type || !type->is_string()) {
    t.error = errorMessage(400, "invalid_request_error", "missing_required_parameter",
                           "the message has no type; send {\"type\":\"response.create\", ...}", "type");
    return t;
  }
  if (type->as_string() != "response.create") {
    t.error = errorMessage(400, "invalid_request_error", "unsupported_event_type",
                           "'" + std::string(type->as_string()) + "' is not supported; send response.create", "type");
    return t;
  }
  if (const auto* bg = o.if_contains("background"); bg && bg->is_bool() && bg->as_bool()) {
    t.error = errorMessage(400, "invalid_request_error", "unsupported_parameter",
                           "background is not supported over WebSocket", "background");
    return t;
  }
  if (const auto* m = o.if_contains("model"); m && m->is_string()) t.model = std::string(m->as_string());

  // The turn's whole input: what it chains from, then its own items.
  if (const auto* prev = o.if_contains("previous_response_id"); prev && !prev->is_null()) {
    if (!prev->is_string()) {
      t.error = errorMessage(400, "invalid_request_error", "invalid_type", "previous_response_id must be a string",
                             "previous_response_id");
      return t;
    }
    const Kept* k = find(prev->as_string());
    if (!k) {
      t.error = errorMessage(400, "invalid_request_error", "previous_response_not_found",
                             "Previous response with id '" + std::string(prev->as_string()) +
                                 "' not found: this connection keeps its own last responses; send the whole "
                                 "conversation in input",
                             "previous_response_id");
      return t;
    }
    t.items = k->items;
  }
  if (const auto* in = o.if_contains("input")) {
    if (in->is_string()) {
      t.items.push_back(json::object{{"type", "message"}, {"role", "user"}, {"content", in->as_string()}});
    } else if (in->is_array()) {
      for (const auto& item : in->as_array()) t.items.push_back(item);
    } else if (!in->is_null()) {
      t.error =
          errorMessage(400, "invalid_request_error", "invalid_type", "input must be a string or an array", "input");
      return t;
    }
  }
  if (const auto* g = o.if_contains("generate"); g && g->is_bool() && !g->as_bool()) {
    t.warmup = true;
    return t;
  }
  o.erase("type");
  o.erase("generate");
  o.erase("previous_response_id");
  o.erase("stream_options");
  o["stream"] = true;
  o["input"] = t.items;
  t.body = json::serialize(o);
  return t;
}

void ResponseChain::keep(std::string id, json::array items, const json::array& output) {
  for (const auto& item : output) items.push_back(item);
  Kept k;
  k.id = std::move(id);
  k.bytes = json::serialize(items).size();
  k.items = std::move(items);
  if (k.bytes > o_.kept_bytes) return;  // too large to keep: a later turn sends the whole input
  for (auto it = kept_.begin(); it != kept_.end(); ++it) {
    if (it->id == k.id) {
      bytes_ -= it->bytes;
      kept_.erase(it);
      break;
    }
  }
  bytes_ += k.bytes;
  kept_.push_back(std::move(k));
  while (!kept_.empty() && (kept_.size() > o_.kept_responses || bytes_ > o_.kept_bytes)) {
    bytes_ -= kept_.front().bytes;
    kept_.pop_front();
  }
}

std::vector<std::string> ResponseChain::warmup(Turn& turn) {
  const std::string id = "resp_" + randomHex(32);
  json::object resp{{"id", id},
                    {"object", "response"},
                    {"created_at", static_cast<std::int64_t>(std::time(nullptr))},
                    {"status", "in_progress"},
                    {"model", turn.model},
                    {"output", json::array{}},
                    {"usage", nullptr}};
  std::vector<std::string> events;
  events.push_back(
      json::serialize(json::object{{"type", "response.created"}, {"sequence_number", 0}, {"response", resp}}));
  resp["status"] = "completed";
  resp["usage"] = json::object{{"input_tokens", 0},
                               {"input_tokens_details", json::object{{"cached_tokens", 0}}},
                               {"output_tokens", 0},
                               {"output_tokens_details", json::object{{"reasoning_tokens", 0}}},
                               {"total_tokens", 0}};
  events.push_back(
      json::serialize(json::object{{"type", "response.completed"}, {"sequence_number", 1}, {"response", resp}}));
  keep(id, std::move(turn.items), json::array{});
  return events;
}

net::awaitable<void> serveResponsesSocket(http::Request& upgrade, http::Responder& r, const ResponsesSocketOptions& o,
                                          PostHandler post) {
  r.detach();  // the connection is the socket's from here, and ends with it
  if (auto* tls = r.tls()) {
    websocket::stream<http::TlsStream&> ws(*tls);
    co_await session(ws, upgrade, r, o, post);
  } else {
    websocket::stream<beast::tcp_stream&> ws(r.stream());
    co_await session(ws, upgrade, r, o, post);
  }
}

}  // namespace sluice::gateway
