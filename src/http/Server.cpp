#include "http/Server.hpp"
#include "core/Ascii.hpp"
#include "core/SendNow.hpp"

#include "http/ServerTls.hpp"
#include "http/HeadReader.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/buffer_body.hpp>
#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/write.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/ssl/ssl_stream.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>
#include <spdlog/spdlog.h>
#include <pthread.h>
#include <unistd.h>

#include <array>
#include <charconv>
#include <ctime>
#include <optional>
#include <list>
#include <span>
#include <tuple>
#include <type_traits>
#include <vector>

namespace sluice::http {

namespace {
constexpr auto kTuple = net::as_tuple(net::use_awaitable);

// A response the server itself produces (limits, malformed requests), in OpenAI's error format.
Response serverError(bhttp::status status, std::string_view type, std::string_view message) {
  Response res{status, 11};
  res.set(bhttp::field::content_type, "application/json");
  boost::json::value v = {{"error", {{"message", message}, {"type", type}, {"param", nullptr}, {"code", nullptr}}}};
  res.body() = boost::json::serialize(v);
  res.keep_alive(false);
  res.prepare_payload();
  return res;
}

// The server's own answer when a request head cannot be taken (then the connection closes);
// nullopt: the client went away or sent nothing, so there is no one to answer.
std::optional<Response> headFailure(const beast::error_code& ec, const std::optional<Error>& refused,
                                    const ServerLimits& limits) {
  if (refused)  // ambiguous framing (http/Framing.hpp): nothing after it on this connection is read
    return serverError(static_cast<bhttp::status>(refused->status), refused->type, refused->message);
  // A declared Content-Length over the limit is Beast's body_limit too (finish_header).
  if (ec == bhttp::error::body_limit)
    return serverError(bhttp::status::payload_too_large, "invalid_request_error",
                       "request body exceeds the limit of " + std::to_string(limits.max_body_bytes) + " bytes");
  if (ec == bhttp::error::header_limit)
    return serverError(bhttp::status::request_header_fields_too_large, "invalid_request_error",
                       "request header exceeds " + std::to_string(limits.max_header_bytes) +
                           " bytes; send smaller headers");
  if (ec == beast::error::timeout)
    return serverError(bhttp::status::request_timeout, "invalid_request_error",
                       "request header not received within the time limit");
  if (ec.category() == bhttp::make_error_code(bhttp::error::bad_target).category() &&
      ec != bhttp::error::end_of_stream && ec != bhttp::error::partial_message)
    return serverError(bhttp::status::bad_request, "invalid_request_error", "malformed HTTP request: " + ec.message());
  return std::nullopt;
}

// The same for a request body; `trailers`: the chunked body ended in trailer fields.
std::optional<Response> bodyFailure(const beast::error_code& ec, bool trailers, const ServerLimits& limits) {
  if (ec == bhttp::error::body_limit)
    return serverError(bhttp::status::payload_too_large, "invalid_request_error",
                       "request body exceeds the limit of " + std::to_string(limits.max_body_bytes) + " bytes");
  if (ec == beast::error::timeout)
    return serverError(bhttp::status::request_timeout, "invalid_request_error",
                       "request body not received within the time limit");
  if (ec.category() == bhttp::make_error_code(bhttp::error::bad_chunk).category() &&
      ec != bhttp::error::partial_message)
    return serverError(bhttp::status::bad_request, "invalid_request_error",
                       trailers ? std::string("trailer fields after a chunked body are not accepted")
                                : "malformed chunked request body: " + ec.message());
  return std::nullopt;
}

void appendHeaderLine(std::string& out, std::string_view name, std::string_view value) {
  out.append(name).append(": ").append(value).append("\r\n");
}

// How long a closing TLS connection waits for the peer's close_notify before it just closes.
constexpr std::chrono::milliseconds kTlsShutdownTimeout{1'000};
// A connection's read buffer while it waits for and reads a request head (and a small body); a
// larger body gets up to kBodyBuffer, so that it takes few reads. Freed once the request is read.
constexpr std::size_t kRequestBuffer = 4u * 1024;
constexpr std::size_t kBodyBuffer = 64u * 1024;
// How long a refused plain-HTTP client gets to stop sending before the socket is closed.
constexpr std::chrono::milliseconds kRefuseDrainTimeout{1'000};
// The first byte of every TLS connection: a handshake record.
constexpr unsigned char kTlsHandshakeRecord = 0x16;

// A plain-HTTP request on a TLS port: one plain answer, then close. The rest of what the client
// sent is read and dropped (bounded), so the close does not reset the connection before the
// client has read the answer.
net::awaitable<void> refusePlainHttp(beast::tcp_stream& tcp, std::chrono::milliseconds write_timeout) {
  Response reply = serverError(bhttp::status::bad_request, "invalid_request_error",
                               "this port speaks HTTPS: send the request to https:// instead of http://");
  tcp.expires_after(write_timeout);
  auto [wec, wn] = co_await bhttp::async_write(tcp, reply, kTuple);
  beast::error_code ec;
  if (!wec) {
    tcp.socket().shutdown(tcp::socket::shutdown_send, ec);
    tcp.expires_after(kRefuseDrainTimeout);
    std::array<char, 4096> sink;
    for (;;) {
      auto [rec, rn] = co_await tcp.async_read_some(net::buffer(sink), kTuple);
      if (rec) break;
    }
  }
  tcp.socket().close(ec);
}

// Takes a connection off its worker's list when its coroutine ends, however it ends.
template <class List>
struct Unregister {
  List& l;
  typename List::iterator it;
  ~Unregister() { l.erase(it); }
};

// Gives back the open-connection count pickWorker() took for this connection.
template <class W>
struct Leave {
  std::mutex& mu;
  W& w;
  ~Leave() {
    const std::lock_guard lock(mu);
    --w.open;
  }
};
}  // namespace

// ---------------------------------------------------------------- Responder

net::awaitable<bool> Responder::send(Response res) {
  if (started_) co_return false;
  started_ = true;
  if (sink_ != nullptr) {
    const bool ok = co_await sink_->whole(res);
    (ok ? finished_ : aborted_) = true;
    co_return ok;
  }
  res.keep_alive(keep_alive_);
  res.prepare_payload();
  stream_.expires_after(write_timeout_);
  beast::error_code ec;
  std::size_t n = 0;
  if (tls_ != nullptr)
    std::tie(ec, n) = co_await bhttp::async_write(*tls_, res, kTuple);
  else
    std::tie(ec, n) = co_await bhttp::async_write(stream_, res, kTuple);
  stream_.expires_never();
  bytes_sent_ += n;
  if (ec) {
    aborted_ = true;
    co_return false;
  }
  finished_ = true;
  co_return true;
}

net::awaitable<bool> Responder::beginStream(bhttp::response_header<> header) {
  if (started_) co_return false;
  started_ = true;
  if (sink_ != nullptr) {
    sink_->streamStatus(header.result_int());
    co_return true;
  }
  // The header is held back and leaves with the first chunk: one write instead of two, and
  // until a chunk exists nothing has reached the client.
  pending_header_.clear();
  pending_header_.append("HTTP/1.1 ");
  pending_header_.append(std::to_string(header.result_int())).append(" ");
  pending_header_.append(header.reason().empty() ? bhttp::obsolete_reason(header.result()) : header.reason());
  pending_header_.append("\r\n");
  for (const auto& f : header) {
    if (f.name() == bhttp::field::content_length || f.name() == bhttp::field::transfer_encoding ||
        f.name() == bhttp::field::connection)
      continue;
    appendHeaderLine(pending_header_, f.name_string(), f.value());
  }
  appendHeaderLine(pending_header_, "Transfer-Encoding", "chunked");
  if (!keep_alive_) appendHeaderLine(pending_header_, "Connection", "close");
  pending_header_.append("\r\n");
  header_pending_ = true;
  co_return true;
}

net::awaitable<bool> Responder::beginStream(int status, std::string_view reason, std::string_view field_lines) {
  if (started_) co_return false;
  started_ = true;
  if (sink_ != nullptr) {
    sink_->streamStatus(status);
    co_return true;
  }
  pending_header_.clear();
  pending_header_.append("HTTP/1.1 ").append(std::to_string(status)).append(" ");
  if (reason.empty()) {
    auto r = bhttp::obsolete_reason(static_cast<bhttp::status>(status));
    pending_header_.append(r.data(), r.size());
  } else {
    pending_header_.append(reason);
  }
  pending_header_.append("\r\n").append(field_lines);
  appendHeaderLine(pending_header_, "Transfer-Encoding", "chunked");
  if (!keep_alive_) appendHeaderLine(pending_header_, "Connection", "close");
  pending_header_.append("\r\n");
  header_pending_ = true;
  co_return true;
}

std::size_t Responder::chunkBuffers(std::string_view data, bool last, ChunkBuffers& c) {
  static constexpr std::string_view kCrlf = "\r\n";
  static constexpr std::string_view kLast = "0\r\n\r\n";
  std::size_t nb = 0;
  // What writeChunkNow could not write goes first; then a held-back header.
  if (!unsent_.empty()) c.bufs[nb++] = net::buffer(unsent_);
  if (header_pending_) c.bufs[nb++] = net::buffer(pending_header_);
  if (!data.empty()) {
    auto [p, ec] = std::to_chars(c.size_line, c.size_line + 16, data.size(), 16);
    auto len = static_cast<std::size_t>(p - c.size_line);
    c.size_line[len++] = '\r';
    c.size_line[len++] = '\n';
    c.bufs[nb++] = net::buffer(c.size_line, len);
    c.bufs[nb++] = net::buffer(data);
    c.bufs[nb++] = net::buffer(kCrlf);
  }
  if (last) c.bufs[nb++] = net::buffer(kLast);
  return nb;
}

net::awaitable<bool> Responder::writeRaw(std::string_view data, bool last) {
  if (aborted_ || finished_) co_return false;
  if (sink_ != nullptr) {
    bool ok = data.empty() || co_await sink_->streamData(data);
    if (ok && last) ok = co_await sink_->streamEnd();
    if (!ok) {
      aborted_ = true;
    } else if (last) {
      finished_ = true;
    }
    bytes_sent_ += data.size();
    co_return ok;
  }
  ChunkBuffers c;
  const std::size_t nb = chunkBuffers(data, last, c);
  auto& bufs = c.bufs;
  if (nb == 0) co_return true;
  beast::error_code ec;
  std::size_t n = 0;
  if (tls_ != nullptr) {
    stream_.expires_after(write_timeout_);
    std::tie(ec, n) = co_await net::async_write(*tls_, std::span(bufs.data(), nb), kTuple);
    stream_.expires_never();
  } else {
    // Written here (core/SendNow.hpp), without arming the write timer or a trip through the
    // scheduler (at a thousand streams this is a tenth of the gateway's CPU). What does not fit
    // waits, under the timeout.
    std::span<net::const_buffer> rest(bufs.data(), nb);
    n = sendNow(stream_.socket(), rest, ec);
    if (!ec && !rest.empty()) {
      stream_.expires_after(write_timeout_);
      auto [e, m] = co_await net::async_write(stream_, rest, kTuple);
      stream_.expires_never();
      ec = e;
      n += m;
    }
  }
  bytes_sent_ += n;
  header_pending_ = false;
  unsent_.clear();
  if (ec) {
    aborted_ = true;
    co_return false;
  }
  if (last) finished_ = true;
  co_return true;
}

namespace {
net::awaitable<bool> ready(bool v) { co_return v; }
}  // namespace

std::optional<bool> Responder::writeChunkNow(std::string_view data, bool last) {
  if (aborted_ || finished_) return false;
  if (data.empty() && !last) return true;
  if (tls_ != nullptr || sink_ != nullptr) return std::nullopt;
  ChunkBuffers c;
  const std::size_t nb = chunkBuffers(data, last, c);
  auto& bufs = c.bufs;
  beast::error_code ec;
  std::span<net::const_buffer> rest(bufs.data(), nb);
  bytes_sent_ += sendNow(stream_.socket(), rest, ec);
  header_pending_ = false;
  if (ec) {
    aborted_ = true;
    return false;
  }
  if (!rest.empty()) {  // the send buffer is full: the rest waits in writeChunkLater
    std::string tail;   // (rest may point into unsent_ itself)
    for (const auto& b : rest) tail.append(static_cast<const char*>(b.data()), b.size());
    unsent_ = std::move(tail);
    unsent_last_ = last;
    return std::nullopt;
  }
  unsent_.clear();
  if (last) finished_ = true;
  return true;
}

net::awaitable<bool> Responder::writeChunkLater(std::string_view data, bool last) {
  if (unsent_.empty()) co_return co_await writeRaw(data, last);  // nothing went: all of it
  // Part went: writeRaw sends the rest first (chunkBuffers), with nothing after it.
  const bool ended = unsent_last_;
  const bool ok = co_await writeRaw({}, false);
  if (ok && ended) finished_ = true;
  co_return ok;
}

// Not coroutines themselves: each hands back writeRaw's, so a chunk costs one coroutine frame
// and one resumption, not two (a stream writes one per upstream chunk).
net::awaitable<bool> Responder::writeChunk(std::string_view data) {
  if (data.empty()) return ready(!aborted_);
  return writeRaw(data, false);
}

net::awaitable<bool> Responder::flushHeader() { return writeRaw({}, false); }

net::awaitable<bool> Responder::endStream() { return writeRaw({}, true); }

net::awaitable<bool> Responder::writeLastChunk(std::string_view data) { return writeRaw(data, true); }

void Responder::abort() {
  aborted_ = true;
  if (sink_ != nullptr) return;  // the sink's owner sees the stream did not end
  beast::error_code ec;
  stream_.socket().shutdown(tcp::socket::shutdown_both, ec);
}

// ---------------------------------------------------------------- Server

struct Server::Listener {
  std::unique_ptr<tcp::acceptor> acceptor;
  ListenerOptions options;
};

struct Server::Worker {
  struct Conn {
    beast::tcp_stream* stream;
    bool idle;
  };
  int index = 0;
  // One thread runs it, and every socket and timer made on it is used on that thread only (a
  // connection handed over from another worker's acceptor is assigned there, then used only
  // here): so the reactor's per-descriptor lock, taken several times a read, is not needed.
  // Posting from other threads (a reload's snapshot, stop()) stays locked.
  net::io_context ioc{BOOST_ASIO_CONCURRENCY_HINT_UNSAFE_IO};
  net::executor_work_guard<net::io_context::executor_type> guard{ioc.get_executor()};
  std::vector<std::unique_ptr<Listener>> listeners;  // stable addresses: accept loops hold them
  std::list<Conn> conns;  // touched only on this worker's thread
  int open = 0;           // connections it serves, under Server::balance_mu_
  std::thread thread;
  // Its thread's CPU clock and what Server::sampleBusy() last read, under Server::balance_mu_.
  std::optional<clockid_t> cpu_clock;
  std::chrono::steady_clock::time_point sampled_at{};
  std::chrono::nanoseconds cpu_at{0};
  double busy = 0;  // the share of a core its thread used between the last two samples
};

Server::Server(int workers, ServerLimits limits, Handler handler)
    : limits_(limits), handler_(std::move(handler)) {
  if (workers <= 0) workers = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  for (int i = 0; i < workers; ++i) {
    auto w = std::make_unique<Worker>();
    w->index = i;
    workers_.push_back(std::move(w));
  }
}

Server::~Server() {
  for (auto& w : workers_) {
    w->ioc.stop();
    if (w->thread.joinable()) w->thread.join();
  }
}

net::io_context& Server::workerContext(int i) { return workers_.at(static_cast<std::size_t>(i))->ioc; }

tcp::endpoint Server::listen(const std::string& host, std::uint16_t port, const ListenerOptions& options) {
  auto addr = net::ip::make_address(host);
  tcp::endpoint ep{addr, port};
  for (auto& w : workers_) {
    auto acc = std::make_unique<tcp::acceptor>(w->ioc);
    acc->open(ep.protocol());
    acc->set_option(tcp::acceptor::reuse_address(true));
    acc->set_option(net::detail::socket_option::boolean<SOL_SOCKET, SO_REUSEPORT>(true));
    acc->bind(ep);
    acc->listen(net::socket_base::max_listen_connections);
    if (ep.port() == 0) ep = acc->local_endpoint();
    auto l = std::make_unique<Listener>();
    l->acceptor = std::move(acc);
    l->options = options;
    w->listeners.push_back(std::move(l));
  }
  return ep;
}

std::vector<int> Server::openConnections() {
  const std::lock_guard lock(balance_mu_);
  std::vector<int> open;
  open.reserve(workers_.size());
  for (const auto& w : workers_) open.push_back(w->open);
  return open;
}

void Server::run() {
  for (auto& w : workers_) {
    for (auto& l : w->listeners) net::co_spawn(w->ioc, acceptLoop(*w, *l), net::detached);
    w->thread = std::thread([this, wp = w.get()] {
      for (;;) {
        try {
          wp->ioc.run();
          break;
        } catch (const std::exception& e) {
          spdlog::error("worker {}: unhandled exception: {}", wp->index, e.what());
        }
      }
      if (on_worker_exit_) on_worker_exit_(wp->index);
    });
    clockid_t clock{};
    if (pthread_getcpuclockid(w->thread.native_handle(), &clock) == 0) {
      const std::lock_guard lock(balance_mu_);
      w->cpu_clock = clock;
    }
  }
  for (auto& w : workers_) w->thread.join();
}

void Server::stop(std::chrono::milliseconds grace) {
  if (stopping_.exchange(true)) return;
  for (auto& w : workers_) {
    net::co_spawn(
        w->ioc,
        [this, wp = w.get(), grace]() -> net::awaitable<void> {
          beast::error_code ec;
          for (auto& l : wp->listeners) l->acceptor->close(ec);
          for (auto& c : wp->conns)
            if (c.idle) c.stream->socket().shutdown(tcp::socket::shutdown_both, ec), c.stream->cancel();
          auto deadline = std::chrono::steady_clock::now() + grace;
          net::steady_timer t(wp->ioc);
          while (!wp->conns.empty() && std::chrono::steady_clock::now() < deadline) {
            for (auto& c : wp->conns)
              if (c.idle) c.stream->cancel();
            t.expires_after(std::chrono::milliseconds(20));
            co_await t.async_wait(kTuple);
          }
          for (auto& c : wp->conns) c.stream->socket().close(ec);
          wp->guard.reset();
          // Give closed connections a moment to unwind, then stop whatever is left.
          t.expires_after(std::chrono::milliseconds(200));
          co_await t.async_wait(kTuple);
          wp->ioc.stop();
        },
        net::detached);
  }
}

net::awaitable<void> Server::acceptLoop(Worker& w, Listener& l) {
  for (;;) {
    auto [ec, socket] = co_await l.acceptor->async_accept(kTuple);
    if (ec) {
      if (ec == net::error::operation_aborted || !l.acceptor->is_open() || stopping()) co_return;
      spdlog::warn("accept: {}", ec.message());
      // EMFILE and friends: back off briefly rather than spin.
      net::steady_timer t(w.ioc, std::chrono::milliseconds(50));
      co_await t.async_wait(kTuple);
      continue;
    }
    accepted_.fetch_add(1, std::memory_order_relaxed);
    // Served where the fewest connections are: the socket moves to that worker's event loop.
    Worker* to = &pickWorker(w);
    if (to != &w) {
      beast::error_code mec;
      const auto protocol = l.acceptor->local_endpoint(mec).protocol();
      tcp::socket moved(to->ioc);
      if (!mec) {
        const auto fd = socket.release(mec);
        if (!mec) {
          moved.assign(protocol, fd, mec);
          if (mec) ::close(fd);
        }
      }
      if (mec) {
        spdlog::warn("accept: handing a connection to worker {}: {}", to->index, mec.message());
        const std::lock_guard lock(balance_mu_);
        --to->open;
        continue;
      }
      socket = std::move(moved);
    }
    auto onExit = [](const std::exception_ptr& e) {
      if (!e) return;
      try {
        std::rethrow_exception(e);
      } catch (const std::exception& ex) {
        spdlog::error("connection: unhandled exception: {}", ex.what());
      }
    };
    if (l.options.tls)
      net::co_spawn(to->ioc, serveTlsConnection(*to, l.options.tag, l.options.tls, std::move(socket)), onExit);
    else
      net::co_spawn(to->ioc, serveConnection(*to, l.options.tag, std::move(socket)), onExit);
  }
}

// The share of a core `w`'s thread used since the last sample (taken at most every 100 ms, when a
// connection is placed): its thread's CPU clock over the time between two samples.
void Server::sampleBusy(Worker& w, std::chrono::steady_clock::time_point now) {
  if (!w.cpu_clock || now - w.sampled_at < std::chrono::milliseconds(100)) return;
  timespec ts{};
  if (clock_gettime(*w.cpu_clock, &ts) != 0) return;
  const std::chrono::nanoseconds cpu = std::chrono::seconds(ts.tv_sec) + std::chrono::nanoseconds(ts.tv_nsec);
  if (w.sampled_at != std::chrono::steady_clock::time_point{})
    w.busy = std::chrono::duration<double>(cpu - w.cpu_at) / (now - w.sampled_at);
  w.cpu_at = cpu;
  w.sampled_at = now;
}

Server::Worker& Server::pickWorker(Worker& self) {
  const std::lock_guard lock(balance_mu_);
  // Packed while light (server.pack_connections): the first worker (in order) under that many
  // connections and under half a core takes the connection, so a light load wakes one thread.
  if (limits_.pack_connections > 0) {
    const auto now = std::chrono::steady_clock::now();
    for (auto& w : workers_) {
      sampleBusy(*w, now);
      if (w->open < limits_.pack_connections && w->busy < kPackBusy) {
        ++w->open;
        return *w;
      }
    }
  }
  // Past that, spread: the fewest open connections (`self` on a tie).
  Worker* best = &self;
  for (auto& w : workers_)
    if (w->open < best->open) best = w.get();
  ++best->open;
  return *best;
}

net::awaitable<void> Server::serveConnection(Worker& w, int tag, tcp::socket socket) {
  beast::error_code sec;
  socket.set_option(tcp::no_delay(true), sec);
  std::string remote;
  if (auto peer = socket.remote_endpoint(sec); !sec) remote = peer.address().to_string();
  // Responder::writeRaw writes a chunk at once and waits only for what did not fit.
  socket.non_blocking(true, sec);
  beast::tcp_stream stream(std::move(socket));
  const Leave<Worker> leave{balance_mu_, w};
  beast::flat_buffer buffer;  // serveRequests gives it room for each request
  // Beast bounds the head but not a chunk-size line or the trailers: this does (400 past it).
  buffer.max_size(limits_.max_header_bytes + 64u * 1024);
  w.conns.push_front({&stream, true});
  Unregister<std::list<Worker::Conn>> unregister{w.conns, w.conns.begin()};
  co_await serveRequests(w, tag, stream, stream, buffer, unregister.it->idle, remote);
  beast::error_code ec;
  stream.socket().shutdown(tcp::socket::shutdown_send, ec);
  stream.close();
}

net::awaitable<void> Server::serveTlsConnection(Worker& w, int tag, std::shared_ptr<ServerTls> tls,
                                                tcp::socket socket) {
  beast::error_code sec;
  socket.set_option(tcp::no_delay(true), sec);
  std::string remote;
  if (auto peer = socket.remote_endpoint(sec); !sec) remote = peer.address().to_string();
  // The context current at accept time: this connection keeps it however often it is replaced.
  const Leave<Worker> leave{balance_mu_, w};
  const std::shared_ptr<ServerTls::Context> ctx = tls->current();
  TlsStream stream(std::move(socket), *ctx);
  beast::tcp_stream& tcp = stream.next_layer();
  beast::flat_buffer buffer;
  buffer.reserve(kRequestBuffer);  // the ClientHello; serveRequests frees it between requests
  buffer.max_size(limits_.max_header_bytes + 64u * 1024);
  w.conns.push_front({&tcp, true});
  Unregister<std::list<Worker::Conn>> unregister{w.conns, w.conns.begin()};

  // The first bytes tell a TLS client from a plain-HTTP one; they are then handed to the
  // handshake, which takes them before reading more. The header deadline covers the handshake.
  tcp.expires_after(limits_.header_timeout);
  auto [pec, pn] = co_await tcp.async_read_some(buffer.prepare(buffer.capacity()), kTuple);
  if (pec || stopping()) {
    tcp.close();
    co_return;
  }
  buffer.commit(pn);
  if (*static_cast<const unsigned char*>(buffer.data().data()) != kTlsHandshakeRecord) {
    co_await refusePlainHttp(tcp, limits_.write_timeout);
    co_return;
  }
  auto [hec, used] = co_await stream.async_handshake(net::ssl::stream_base::server, buffer.data(), kTuple);
  if (hec) {
    spdlog::debug("tls handshake with {}: {}", remote, hec.message());
    tcp.close();
    co_return;
  }
  buffer.consume(used);
  co_await serveRequests(w, tag, stream, tcp, buffer, unregister.it->idle, remote);
  // close_notify, bounded: a peer that never answers it (or is gone) does not hold us.
  if (tcp.socket().is_open()) {
    tcp.expires_after(kTlsShutdownTimeout);
    co_await stream.async_shutdown(kTuple);
  }
  tcp.close();
}

namespace {

// What the client still sends after its answer, read and dropped (nginx's lingering close):
// closing with unread bytes would reset the connection, and a client still uploading would lose
// the answer with it. Bounded: 5 s without a byte, 30 s in all.
template <class Stream>
net::awaitable<void> lingeringClose(Stream& stream, beast::tcp_stream& tcp, beast::flat_buffer& buffer) {
  constexpr std::chrono::seconds kQuiet{5};
  constexpr std::chrono::seconds kTotal{30};
  const auto until = std::chrono::steady_clock::now() + kTotal;
  buffer.consume(buffer.size());
  std::array<char, 16 * 1024> scratch{};
  while (std::chrono::steady_clock::now() < until) {
    tcp.expires_after(kQuiet);
    auto [ec, n] = co_await stream.async_read_some(net::buffer(scratch), kTuple);
    if (ec) break;
  }
  tcp.expires_never();
}

// A body the handler streams: Beast's parser moved to a buffer body once the head is read, each
// read decoding what arrives into a buffer of its own.
template <class Stream>
class StreamedBody final : public RequestBody {
 public:
  StreamedBody(Stream& stream, beast::tcp_stream& tcp, beast::flat_buffer& buffer,
               bhttp::request_parser<bhttp::string_body>&& head, const ServerLimits& limits)
      : stream_(stream), tcp_(tcp), buffer_(buffer), parser_(std::move(head)), limits_(limits) {
    parser_.body_limit(limits.max_body_bytes);
    parser_.on_chunk_header(check_);
    fields_ = std::distance(parser_.get().begin(), parser_.get().end());
    if (auto cl = parser_.content_length()) content_length = *cl;
    buf_.resize(kPiece);
  }
  const bhttp::request_header<>& header() const { return parser_.get().base(); }

  net::awaitable<std::pair<beast::error_code, std::string_view>> read() override {
    if (parser_.is_done()) co_return std::pair{beast::error_code{}, std::string_view()};
    auto& b = parser_.get().body();
    b.data = buf_.data();
    b.size = buf_.size();
    tcp_.expires_after(limits_.body_timeout);
    auto [ec, n] = co_await bhttp::async_read_some(stream_, buffer_, parser_, kTuple);
    tcp_.expires_never();
    if (ec == bhttp::error::need_buffer) ec = {};
    const std::size_t got = buf_.size() - b.size;
    // Beast merges trailer fields into the header, past every check made on it: refused.
    if (!ec && parser_.is_done() && std::distance(parser_.get().begin(), parser_.get().end()) != fields_) {
      trailers_ = true;
      ec = bhttp::error::bad_field;
    }
    co_return std::pair{ec, std::string_view(buf_.data(), ec ? 0 : got)};
  }
  bool done() const override { return parser_.is_done(); }

  std::optional<Response> failure(const beast::error_code& ec) const override {
    return bodyFailure(ec, trailers_, limits_);
  }

 private:
  static constexpr std::size_t kPiece = 64u * 1024;
  Stream& stream_;
  beast::tcp_stream& tcp_;
  beast::flat_buffer& buffer_;
  bhttp::request_parser<bhttp::buffer_body> parser_;
  const ServerLimits& limits_;
  std::function<void(std::uint64_t, std::string_view, beast::error_code&)> check_ =
      [](std::uint64_t, std::string_view ext, beast::error_code& ec) {
        if (checkChunkExtension(ext)) ec = bhttp::error::bad_chunk_extension;
      };
  std::ptrdiff_t fields_ = 0;
  bool trailers_ = false;
  std::vector<char> buf_;
};

}  // namespace

// Makes the Responder of a request on this connection.
template <class Stream>
Responder Server::responderFor(Worker& w, int tag, Stream& stream, beast::tcp_stream& tcp, std::string_view remote) {
  if constexpr (std::is_same_v<Stream, TlsStream>)
    return Responder(stream, tcp, w.index, limits_.write_timeout, remote, tag);
  else
    return Responder(tcp, w.index, limits_.write_timeout, remote, tag);
}

// The server's own refusal: one answer, then the connection closes.
template <class Stream>
net::awaitable<void> Server::refuse(Worker& w, int tag, Stream& stream, beast::tcp_stream& tcp,
                                    beast::flat_buffer& buffer, Response reply) {
  Responder r = responderFor(w, tag, stream, tcp, {});
  r.setKeepAlive(false);
  // A refused body (413 for a declared length past the limit, 400, 408): the client may still be
  // sending it, and should read its answer rather than a reset.
  const bool body = reply.result() == bhttp::status::payload_too_large;
  // The coroutine's copy of `reply` is moved once; clang-tidy reads the frame's copy as a reuse.
  co_await r.send(std::move(reply));  // NOLINT(bugprone-use-after-move)
  if (body && r.finished()) co_await lingeringClose(stream, tcp, buffer);
}

// Reads the next request (its head, and its body unless the handler streams it) into `out`.
// Its own coroutine, so that the parser and the rarer paths' locals (a refusal, a streamed
// upload) are not in the frame serveRequests keeps while the handler answers (a stream holds it
// for minutes, and every open connection one). A streamed body's request is answered here, then
// the connection closes (false); so does one that fails or is refused.
template <class Stream>
net::awaitable<bool> Server::readRequest(Worker& w, int tag, Stream& stream, beast::tcp_stream& tcp,
                                         beast::flat_buffer& buffer, const std::string& remote,
                                         std::optional<Request>& out) {
  bhttp::request_parser<bhttp::string_body> parser;
  parser.header_limit(static_cast<std::uint32_t>(limits_.max_header_bytes));
  parser.body_limit(limits_.max_body_bytes);
  tcp.expires_after(limits_.header_timeout);
  auto [hec, refused] = co_await readRequestHead(stream, buffer, parser, limits_.max_header_bytes);
  if (hec || refused) {
    if (std::optional<Response> reply = headFailure(hec, refused, limits_))
      co_await refuse(w, tag, stream, tcp, buffer, std::move(*reply));
    co_return false;
  }
  auto& hreq = parser.get();
  if (sluice::iequals(hreq[bhttp::field::expect], "100-continue")) {
    static constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
    auto [cec, cn] = co_await net::async_write(stream, net::buffer(kContinue), kTuple);
    if (cec) co_return false;
  }
  if (!parser.is_done() && stream_body_ && stream_body_(hreq)) {
    // The handler streams this body: nothing past the head is read here. The connection
    // closes after the answer (an unread rest must never be taken for the next request).
    StreamedBody<Stream> body(stream, tcp, buffer, std::move(parser), limits_);
    Request req;
    req.base() = body.header();
    Responder r = responderFor(w, tag, stream, tcp, remote);
    r.setKeepAlive(false);
    r.setBody(&body);
    co_await handler_(req, r);
    if (!r.started()) {
      http::Response reply = serverError(bhttp::status::internal_server_error, "server_error", "no response produced");
      co_await r.send(std::move(reply));
    }
    if (!body.done() && r.finished()) co_await lingeringClose(stream, tcp, buffer);
    co_return false;
  }
  if (!parser.is_done()) {
    auto checkChunk = [](std::uint64_t, std::string_view ext, beast::error_code& ec) {
      if (checkChunkExtension(ext)) ec = bhttp::error::bad_chunk_extension;
    };
    parser.on_chunk_header(checkChunk);
    const auto fields = std::distance(hreq.begin(), hreq.end());
    const std::uint64_t expected = parser.content_length().value_or(kBodyBuffer);
    buffer.reserve(static_cast<std::size_t>(std::min<std::uint64_t>(expected, kBodyBuffer)));
    // A body the client sent with its head is already buffered: parsed here, without I/O. The
    // rest, if any, is read under the body timeout.
    beast::error_code bec;
    while (!parser.is_done() && buffer.size() != 0) {
      const std::size_t used = parser.put(buffer.data(), bec);
      buffer.consume(used);
      if (bec || used == 0) break;
    }
    if (bec == bhttp::error::need_more) bec = {};
    if (!bec && !parser.is_done()) {
      tcp.expires_after(limits_.body_timeout);
      auto [rec, rn] = co_await bhttp::async_read(stream, buffer, parser, kTuple);
      bec = rec;
    }
    // Beast merges trailer fields into the header, past every check made on it: refused.
    const bool trailers = !bec && std::distance(hreq.begin(), hreq.end()) != fields;
    if (trailers) bec = bhttp::error::bad_field;
    if (bec) {
      if (std::optional<Response> reply = bodyFailure(bec, trailers, limits_))
        co_await refuse(w, tag, stream, tcp, buffer, std::move(*reply));
      co_return false;
    }
  }
  tcp.expires_never();
  // The request is read: a stream that lasts minutes holds no read buffer meanwhile (unless the
  // client already sent its next request).
  if (buffer.size() == 0) buffer.shrink_to_fit();
  out.emplace(parser.release());
  co_return true;
}

template <class Stream>
net::awaitable<void> Server::serveRequests(Worker& w, int tag, Stream& stream, beast::tcp_stream& tcp,
                                           beast::flat_buffer& buffer, bool& idle, const std::string& remote) {
  for (;;) {
    idle = true;
    if (stopping()) break;
    if (buffer.size() == 0) {
      // Idle keep-alive wait: generous. Once a request starts, the header deadline applies.
      // Beast reads up to the capacity (and grows it for a larger body).
      if (buffer.capacity() < kRequestBuffer) buffer.reserve(kRequestBuffer);
      tcp.expires_after(limits_.keepalive_timeout);
      auto [ec, n] = co_await stream.async_read_some(buffer.prepare(buffer.capacity() - buffer.size()), kTuple);
      if (ec) break;
      buffer.commit(n);
    }
    idle = false;
    std::optional<Request> req;
    if (!co_await readRequest(w, tag, stream, tcp, buffer, remote, req)) break;
    Responder r = responderFor(w, tag, stream, tcp, remote);
    r.setKeepAlive(req->keep_alive() && !stopping());
    co_await handler_(*req, r);
    if (!r.started()) {
      r.setKeepAlive(false);
      co_await r.send(serverError(bhttp::status::internal_server_error, "server_error", "no response produced"));
    }
    if (!r.finished() || !r.keepAlive() || stopping()) break;
  }
}

}  // namespace sluice::http
