#include "upstream/Client.hpp"

#include "core/SendNow.hpp"
#include "core/SocketDrained.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/connect.hpp>
#include <boost/asio/write.hpp>
#include <boost/asio/ssl/host_name_verification.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/write.hpp>
#include <boost/url/parse.hpp>
#include <sys/socket.h>

#include <algorithm>
#include <array>
#include <span>
#include <tuple>

#include <openssl/ssl.h>

#include "core/ThreadScratch.hpp"

namespace sluice::upstream {

namespace {
constexpr auto kTuple = net::as_tuple(net::use_awaitable);
}

std::string parseBaseUrl(const std::string& url, Endpoint& out) {
  auto r = boost::urls::parse_absolute_uri(url);
  if (!r) return "not an absolute URL: " + r.error().message();
  auto scheme = r->scheme();
  if (scheme == "https") {
    out.tls = true;
  } else if (scheme == "http") {
    out.tls = false;
  } else {
    return "scheme must be http or https, got \"" + std::string(scheme) + "\"";
  }
  out.host = std::string(r->host_address());
  if (out.host.empty()) return "missing host";
  if (r->has_port()) {
    auto p = r->port_number();
    if (p == 0) return "invalid port";
    out.port = p;
  } else {
    out.port = out.tls ? 443 : 80;
  }
  std::string path = std::string(r->encoded_path());
  while (!path.empty() && path.back() == '/') path.pop_back();
  out.base_path = path;
  bool v6 = r->host_type() == boost::urls::host_type::ipv6;
  std::string h = v6 ? "[" + out.host + "]" : out.host;
  bool defaultPort = (out.tls && out.port == 443) || (!out.tls && out.port == 80);
  out.host_header = defaultPort ? h : h + ":" + std::to_string(out.port);
  out.pool_key = std::string(scheme) + "://" + h + ":" + std::to_string(out.port);
  return {};
}

ssl::context makeClientTlsContext() {
  ssl::context ctx(ssl::context::tls_client);
  ctx.set_default_verify_paths();
  ctx.set_verify_mode(ssl::verify_peer);
  ctx.set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 | ssl::context::no_sslv3 |
                  ssl::context::no_tlsv1 | ssl::context::no_tlsv1_1);
  // Its read and write buffers freed whenever empty (as in ServerTls): idle pooled connections
  // and streams between chunks hold none.
  ::SSL_CTX_set_mode(ctx.native_handle(), SSL_MODE_RELEASE_BUFFERS);
  return ctx;
}

// ---------------------------------------------------------------- Connection

Connection::Connection(net::io_context& ioc, ssl::context* tls_ctx, std::string pool_key)
    : stream_(tls_ctx ? decltype(stream_){std::in_place_index<1>, ioc, *tls_ctx}
                      : decltype(stream_){std::in_place_index<0>, ioc}),
      pool_key_(std::move(pool_key)),
      watchdog_(ioc),
      self_(std::make_shared<Connection*>(this)) {
  unpark();
}

void Connection::armDeadline(Millis timeout) {
  timed_out_ = false;
  due_ = Clock::now() + timeout;
  // A waiting watchdog that wakes no later than this deadline re-arms itself then: no timer work.
  if (watching_ && watchdog_.expiry() <= due_) return;
  watch();
}

void Connection::watch() {
  watching_ = true;
  watchdog_.expires_at(due_);  // cancels a wait armed for later (its handler is stale)
  watchdog_.async_wait([self = self_, gen = ++watch_gen_](const beast::error_code&) {
    Connection* c = *self;
    if (c == nullptr || gen != c->watch_gen_) return;
    c->watching_ = false;
    if (c->due_ == Clock::time_point::max()) return;  // no read waits: sleep until one does
    if (Clock::now() < c->due_) {
      c->watch();
      return;
    }
    c->timed_out_ = true;
    beast::error_code ignored;
    c->tcpStream().socket().cancel(ignored);
  });
}

// Beast reads into whatever capacity the buffer has (512 bytes when empty): one read per SSE
// event instead of one per 512 bytes needs room up front.
void Connection::unpark() { buffer_.reserve(kReadBuffer); }

void Connection::park() {
  if (buffer_.size() == 0) buffer_.shrink_to_fit();
}

Connection::~Connection() { *self_ = nullptr; }

beast::tcp_stream& Connection::tcpStream() {
  if (auto* s = std::get_if<0>(&stream_)) return *s;
  return std::get<1>(stream_).next_layer();
}

net::awaitable<beast::error_code> Connection::connect(const std::vector<tcp::endpoint>& eps, const Endpoint& ep,
                                                      Millis timeout) {
  auto& tcps = tcpStream();
  tcps.expires_after(timeout);
  auto [ec, chosen] = co_await tcps.async_connect(eps, kTuple);
  if (ec) co_return ec;
  beast::error_code ignored;
  tcps.socket().set_option(tcp::no_delay(true), ignored);
  // writeRaw writes at once and waits only for what did not fit: a write that cannot go on
  // returns would_block instead of blocking the worker.
  tcps.socket().non_blocking(true, ignored);
  if (auto* s = std::get_if<1>(&stream_)) {
    if (!SSL_set_tlsext_host_name(s->native_handle(), ep.host.c_str())) {
      co_return beast::error_code(static_cast<int>(::ERR_get_error()), net::error::get_ssl_category());
    }
    s->set_verify_callback(ssl::host_name_verification(ep.host));
    auto [hec] = co_await s->async_handshake(ssl::stream_base::client, kTuple);
    if (hec) co_return hec;
  }
  tcps.expires_never();
  co_return beast::error_code{};
}

net::awaitable<beast::error_code> Connection::write(bhttp::request<bhttp::string_body>& req, Millis timeout) {
  tcpStream().expires_after(timeout);
  beast::error_code ec;
  if (auto* s = std::get_if<0>(&stream_)) {
    auto [e, n] = co_await bhttp::async_write(*s, req, kTuple);
    ec = e;
  } else {
    auto [e, n] = co_await bhttp::async_write(std::get<1>(stream_), req, kTuple);
    ec = e;
  }
  co_return ec;
}

net::awaitable<beast::error_code> Connection::writeRaw(std::string_view head, std::string_view body,
                                                       Millis timeout) {
  std::array<net::const_buffer, 2> bufs{net::buffer(head), net::buffer(body)};
  if (auto* s = std::get_if<0>(&stream_)) {
    beast::error_code ec;
    // Written here (core/SendNow.hpp), without arming the stream's write timer or a trip through
    // the scheduler. What does not fit waits, under the timeout.
    std::span<net::const_buffer> rest(bufs);
    sendNow(s->socket(), rest, ec);
    if (ec || rest.empty()) co_return ec;
    s->expires_after(timeout);
    auto [e, m] = co_await net::async_write(*s, rest, kTuple);
    s->expires_never();
    co_return e;
  }
  tcpStream().expires_after(timeout);
  auto [e, n] = co_await net::async_write(std::get<1>(stream_), bufs, kTuple);
  co_return e;
}

net::awaitable<beast::error_code> Connection::readHeader(ResponseParser& p, Millis timeout) {
  if (auto* s = std::get_if<0>(&stream_)) {
    // As async_read_header, without its composed operation and the stream's per-read timer:
    // raw reads under readBody's deadline, and the parser run on what they brought.
    const DeadlineScope scope{this};
    armDeadline(timeout);
    for (;;) {
      if (buffer_.size() != 0) {
        beast::error_code ec;
        const std::size_t used = p.put(buffer_.data(), ec);
        buffer_.consume(used);
        if (ec != bhttp::error::need_more) co_return ec;  // the head, or what is wrong with it
      }
      // The parser's header_limit ends a head that does not stop: this is only its backstop.
      if (buffer_.size() >= 64u * 1024) co_return beast::error_code(bhttp::error::buffer_overflow);
      const std::size_t room = std::max<std::size_t>(512, buffer_.capacity() - buffer_.size());
      auto [ec, n] = co_await s->socket().async_read_some(buffer_.prepare(room), kTuple);
      if (!ec) socket_drained::afterRead(s->socket(), room, n);
      buffer_.commit(n);
      if (ec == net::error::operation_aborted && timed_out_) co_return beast::error_code(beast::error::timeout);
      if (ec == net::error::eof) {
        // Beast's own rule: the end after some of a head cuts it short; before any, the
        // connection ended between messages (a pooled connection the provider closed).
        if (!p.got_some()) co_return beast::error_code(bhttp::error::end_of_stream);
        beast::error_code eec;
        p.put_eof(eec);
        co_return eec ? eec : beast::error_code(bhttp::error::partial_message);
      }
      if (ec) co_return ec;
    }
  }
  tcpStream().expires_after(timeout);
  auto [ec, n] = co_await bhttp::async_read_header(std::get<1>(stream_), buffer_, p, kTuple);
  tcpStream().expires_never();  // the body's reads are under readBody's own deadline
  co_return ec;
}

namespace {
// Where readBody decodes into: one per worker thread, filled and handed to the caller without a
// suspension in between (a coroutine resumes its caller directly when it returns). What does not
// fit in one pass stays in the connection's buffer for the next call, which decodes it without I/O.
constexpr std::size_t kBodyScratch = 2 * Connection::kReadBuffer;
struct BodyScratchTag;
}  // namespace

net::awaitable<std::pair<beast::error_code, std::string_view>> Connection::readBody(ResponseParser& p,
                                                                                  Millis timeout) {
  std::optional<BodyPiece> piece = bufferedBody(p);
  if (piece) co_return *piece;
  const DeadlineScope scope = deadline(timeout);  // one for the whole call, as many reads as it takes
  while (!piece) {
    auto [ec, n] = co_await readSome();
    piece = afterRead(p, ec, n);
  }
  co_return *piece;
}

std::optional<Connection::BodyPiece> Connection::bufferedBody(ResponseParser& p) {
  // Decode what is buffered: no I/O, so nothing else runs on this thread meanwhile.
  if (buffer_.size() != 0 && !p.is_done()) {
    char* const scratch = reinterpret_cast<char*>(threadScratch<BodyScratchTag, kBodyScratch>());
    auto& body = p.get().body();
    body.data = scratch;
    body.size = kBodyScratch;
    beast::error_code ec;
    while (!p.is_done() && buffer_.size() != 0 && body.size != 0) {
      const std::size_t used = p.put(buffer_.data(), ec);
      buffer_.consume(used);
      if (ec && ec == bhttp::error::need_buffer) ec = {};
      if (ec || used == 0) break;
    }
    const std::size_t got = kBodyScratch - body.size;
    body.data = nullptr;  // nothing points at the scratch once this returns
    body.size = 0;
    if (ec && ec == bhttp::error::need_more) ec = {};
    if (ec) return BodyPiece{ec, std::string_view(scratch, got)};
    if (got != 0 || p.is_done()) return BodyPiece{beast::error_code{}, std::string_view(scratch, got)};
  }
  if (p.is_done()) return BodyPiece{beast::error_code{}, std::string_view{}};
  // Then more raw bytes are needed. What the parser could not use yet (a chunk-size line split
  // across reads) stays; the buffer grows past it, but never beyond 64 KiB of undecodable bytes.
  if (buffer_.size() >= 64u * 1024) return BodyPiece{beast::error_code(bhttp::error::buffer_overflow), {}};
  return std::nullopt;
}

net::awaitable<std::tuple<beast::error_code, std::size_t>> Connection::readSome() {
  room_ = std::max<std::size_t>(512, buffer_.capacity() - buffer_.size());
  // The socket itself: the stream's per-read timer is what the deadline replaces.
  if (auto* s = std::get_if<0>(&stream_)) return s->socket().async_read_some(buffer_.prepare(room_), kTuple);
  return std::get<1>(stream_).async_read_some(buffer_.prepare(room_), kTuple);
}

std::optional<Connection::BodyPiece> Connection::afterRead(ResponseParser& p, beast::error_code ec, std::size_t n) {
  // A short read emptied the socket: the next waits for the kernel's event instead of a recv
  // that can only answer EAGAIN, unless the provider's end may be pending (core/SocketDrained.hpp).
  if (!ec)
    if (auto* s = std::get_if<0>(&stream_)) socket_drained::afterRead(s->socket(), room_, n);
  buffer_.commit(n);
  // (Each test of ec against a code constructs one: the usual empty ec skips them.)
  if (ec && ec == net::error::operation_aborted && timed_out_) ec = beast::error::timeout;
  if (ec && ec == net::error::eof) {
    // As Beast's own read: a body delimited by the end of the connection ends here (no error);
    // any other is cut short (partial_message).
    p.put_eof(ec);
    return BodyPiece{ec, std::string_view{}};
  }
  if (ec) return BodyPiece{ec, std::string_view{}};
  return bufferedBody(p);
}

void Connection::close() {
  disarmDeadline();
  ++watch_gen_;
  watching_ = false;
  watchdog_.cancel();
  beast::error_code ec;
  tcpStream().socket().shutdown(tcp::socket::shutdown_both, ec);
  tcpStream().close();
}

bool Connection::looksAlive() {
  // No syscall here. A provider that closed the connection while it was idle is known from the
  // event the reactor already handled (EPOLLRDHUP, core/SocketDrained.hpp); one whose end has not
  // come yet fails on first use, and the proxy retries that once on a fresh connection.
  return buffer_.size() == 0 && tcpStream().socket().is_open() &&
         !socket_drained::readState(tcpStream().socket()).peer_end_reported;
}

// ---------------------------------------------------------------- Pool

ssl::context& ClientTls::get() {
  std::call_once(once_, [this] {
    ctx_.emplace(makeClientTlsContext());
    loaded_.store(true, std::memory_order_release);
  });
  return *ctx_;
}

bool ClientTls::loaded() const { return loaded_.load(std::memory_order_acquire); }

Pool::Pool(net::io_context& ioc, ClientTls& tls) : ioc_(ioc), tls_(tls), resolver_(ioc) {}

std::size_t Pool::idleCount() const {
  std::size_t n = 0;
  for (const auto& [k, v] : idle_) n += v.size();
  return n;
}

net::awaitable<std::pair<beast::error_code, std::vector<tcp::endpoint>>> Pool::resolve(const Endpoint& ep) {
  beast::error_code ec;
  auto addr = net::ip::make_address(ep.host, ec);
  if (!ec) co_return std::pair{beast::error_code{}, std::vector<tcp::endpoint>{{addr, ep.port}}};
  auto now = std::chrono::steady_clock::now();
  auto key = ep.host + ":" + std::to_string(ep.port);
  if (auto it = dns_.find(key); it != dns_.end() && it->second.expires > now) co_return std::pair{beast::error_code{}, it->second.eps};
  // Asio resolves on its own background thread, so the worker never blocks on DNS.
  auto [rec, results] = co_await resolver_.async_resolve(ep.host, std::to_string(ep.port), kTuple);
  if (rec) co_return std::pair{rec, std::vector<tcp::endpoint>{}};
  std::vector<tcp::endpoint> eps;
  for (const auto& r : results) eps.push_back(r.endpoint());
  dns_[key] = DnsEntry{eps, now + std::chrono::seconds(30)};
  co_return std::pair{beast::error_code{}, std::move(eps)};
}

net::awaitable<std::pair<beast::error_code, std::unique_ptr<Connection>>> Pool::acquire(const Endpoint& ep,
                                                                                       Millis connect_timeout,
                                                                                       bool allow_reuse) {
  if (allow_reuse) {
    auto it = idle_.find(ep.pool_key);
    if (it != idle_.end()) {
      auto& list = it->second;
      auto now = std::chrono::steady_clock::now();
      while (!list.empty()) {
        auto c = std::move(list.back());
        list.pop_back();
        if (now - c->idle_since < kIdleTtl && c->looksAlive()) {
          c->reused = true;
          c->unpark();
          co_return std::pair{beast::error_code{}, std::move(c)};
        }
        c->close();
      }
    }
  }
  auto [rec, eps] = co_await resolve(ep);
  if (rec) co_return std::pair{rec, std::unique_ptr<Connection>{}};
  auto c = std::make_unique<Connection>(ioc_, ep.tls ? &tls_.get() : nullptr, ep.pool_key);
  auto ec = co_await c->connect(eps, ep, connect_timeout);
  if (ec) co_return std::pair{ec, std::unique_ptr<Connection>{}};
  co_return std::pair{beast::error_code{}, std::move(c)};
}

void Pool::release(std::unique_ptr<Connection> c) {
  auto& list = idle_[c->poolKey()];
  const auto now = std::chrono::steady_clock::now();
  while (!list.empty() && now - list.front()->idle_since >= kIdleTtl) {
    list.front()->close();
    list.pop_front();
  }
  if (list.size() >= kMaxIdlePerHost) {
    c->close();
    return;
  }
  c->idle_since = now;
  c->park();
  list.push_back(std::move(c));
}

}  // namespace sluice::upstream
