#include "gateway/ResponsesSocket.hpp"
#include "core/Ascii.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/buffers_to_string.hpp>
#include <boost/beast/ssl/ssl_stream.hpp>
#include <boost/beast/websocket.hpp>
#include <boost/json/object.hpp>
#include <boost/json/serialize.hpp>

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

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
    if (sluice::iequals(f.name_string(), "x-request-id")) continue;  // each turn is a request of its own
    req.insert(f.name_string(), f.value());
  }
  req.set(bhttp::field::content_type, "application/json");
  req.body() = std::move(body);
  req.prepare_payload();
  return req;
}

// TCP_CORK for a scope: the writes inside it go out together when it ends (or when a full
// segment is ready), instead of a segment each.
class Cork {
 public:
  Cork(beast::tcp_stream& tcp, bool on) : fd_(on ? tcp.socket().native_handle() : -1) { set(1); }
  ~Cork() { set(0); }
  Cork(const Cork&) = delete;
  Cork& operator=(const Cork&) = delete;

 private:
  void set(int v) const {
    if (fd_ >= 0) ::setsockopt(fd_, IPPROTO_TCP, TCP_CORK, &v, sizeof v);  // best effort
  }
  int fd_;
};

// Takes one turn's answer from the request path: SSE events become text messages; a whole
// answer becomes one message (an error, or a completed response).
template <class Ws>
class SocketSink final : public http::ResponseSink {
 public:
  // `tcp` is the connection's TCP layer (under TLS too), corked around a burst of messages.
  SocketSink(Ws& ws, beast::tcp_stream& tcp) : ws_(ws), tcp_(tcp) {}

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
    // The events of one upstream read leave as one TCP segment where they fit: a frame per event,
    // each its own write, would wake the client once per event (measured by bench/ws.sh: most of
    // a turn's cost over POST was those wake-ups).
    Cork cork(tcp_, events_.size() > 1);
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
  beast::tcp_stream& tcp_;
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
    SocketSink<Ws> sink(ws, r.stream());
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
    if (sink.chainable() && !sink.finalId().empty() && !turn.from_store)
      chain.keep(sink.finalId(), std::move(turn.items), sink.finalOutput());
  }
  if (ws.is_open()) co_await ws.async_close(websocket::close_code::normal, kTuple);
}

}  // namespace

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
