// Server: the HTTP/1.1 front door. One worker thread per io_context, each with its own
// SO_REUSEPORT acceptor per listener, one coroutine per connection. Where a connection is served
// is chosen at accept, not left to the kernel's hash (which would split a burst unevenly and
// differently each time, and every worker's upstream pool would grow to the largest share it ever
// saw): the worker with the fewest open connections (the one that accepted it on a tie). With
// ServerLimits::pack_connections (server.pack_connections) set, a light load is packed first: the
// first worker under that many open connections and under kPackBusy of a core takes it, so one
// thread wakes for the events of many streams instead of every thread for a few each (at 50 and
// 200 streams, a quarter less CPU a request). Off by default: a connection stays on its worker,
// so a burst of busy connections packed on one thread would keep the other cores idle.
// A listener speaks plain HTTP or terminates TLS itself. Enforces header/body size limits and the
// header-read (and handshake) deadline; drains in-flight requests on stop().
// Thread-safety: listen() and run() from the owning thread; stop() from any thread.
#pragma once
#include "http/HostPort.hpp"
#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>
#include <array>
#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

namespace boost::beast {
template <class NextLayer>
class ssl_stream;
}

namespace sluice::http {

class ServerTls;

namespace net = boost::asio;
namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
using tcp = net::ip::tcp;

using Request = bhttp::request<bhttp::string_body>;
using Response = bhttp::response<bhttp::string_body>;
using TlsStream = beast::ssl_stream<beast::tcp_stream>;

struct ServerLimits {
  std::size_t max_header_bytes = 64u * 1024;
  std::uint64_t max_body_bytes = 32ull << 20;
  std::chrono::milliseconds header_timeout{10'000};
  std::chrono::milliseconds keepalive_timeout{75'000};
  std::chrono::milliseconds body_timeout{60'000};
  std::chrono::milliseconds write_timeout{60'000};
  int pack_connections = 0;  // server.pack_connections: 0 spreads every connection (the header's rule)
};

// What a listener speaks and how its connections are told apart by the handler.
struct ListenerOptions {
  std::shared_ptr<ServerTls> tls;  // null: plain HTTP; else the context new connections take
  int tag = 0;                     // Responder::listener() of its connections
};

// Where a Responder's answer goes instead of the connection's socket: a handler that speaks
// another protocol on the connection (the Responses API's WebSocket mode) runs an ordinary HTTP
// exchange per message and takes its answer here. Every call reports whether the client is still
// there.
class ResponseSink {
 public:
  virtual ~ResponseSink() = default;
  virtual net::awaitable<bool> whole(const Response& res) = 0;  // Responder::send
  virtual void streamStatus(int status) = 0;                     // beginStream
  virtual net::awaitable<bool> streamData(std::string_view data) = 0;
  virtual net::awaitable<bool> streamEnd() = 0;  // the stream finished (not called when aborted)
};

// A request body the server did not read before the handler (Server::setStreamBody): the
// handler pulls it piece by piece, bounded by max_body_bytes and the body timeout, as Beast
// decodes it (Content-Length or chunked, with the same checks as a body read whole). A
// connection whose body was streamed closes after its answer, read to the end or not.
class RequestBody {
 public:
  virtual ~RequestBody() = default;
  // The next decoded bytes (valid until the next call; may be empty before the end); an empty
  // view with done() at the end.
  virtual net::awaitable<std::pair<beast::error_code, std::string_view>> read() = 0;
  virtual bool done() const = 0;
  // The client's answer for a read that failed: 413 past max_body_bytes, 408, 400 (malformed
  // chunking, trailers); nullopt when the client is simply gone.
  virtual std::optional<Response> failure(const beast::error_code& ec) const = 0;
  std::optional<std::uint64_t> content_length;  // as the client declared it; unset: chunked
};

// How a handler answers: either one complete response, or a chunked stream
// (beginStream, writeChunk..., endStream). Every call reports whether the client is still
// there; after a false the handler should stop writing.
class Responder {
 public:
  Responder(beast::tcp_stream& stream, int worker, std::chrono::milliseconds write_timeout,
            std::string_view remote = {}, int listener = 0)
      : stream_(stream), worker_(worker), listener_(listener), write_timeout_(write_timeout), remote_(remote) {}
  // A connection of a TLS listener: writes go through `tls`, whose TCP layer is `tcp`.
  Responder(TlsStream& tls, beast::tcp_stream& tcp, int worker, std::chrono::milliseconds write_timeout,
            std::string_view remote = {}, int listener = 0)
      : stream_(tcp), tls_(&tls), worker_(worker), listener_(listener), write_timeout_(write_timeout), remote_(remote) {}
  // An exchange whose answer goes to `sink`; `tcp` is the connection it came in on.
  Responder(ResponseSink& sink, beast::tcp_stream& tcp, int worker, std::string_view remote = {}, int listener = 0)
      : stream_(tcp), sink_(&sink), worker_(worker), listener_(listener), write_timeout_(0), remote_(remote) {}

  net::awaitable<bool> send(Response res);
  net::awaitable<bool> beginStream(bhttp::response_header<> header);
  // Same, with the header fields already formatted as "Name: value\r\n" lines.
  net::awaitable<bool> beginStream(int status, std::string_view reason, std::string_view field_lines);
  net::awaitable<bool> writeChunk(std::string_view data);
  // The last chunk and the stream's end in one write.
  net::awaitable<bool> writeLastChunk(std::string_view data);
  net::awaitable<bool> endStream();
  // Without a coroutine: writes the chunk (and the stream's end when `last`) now when the
  // connection is plain HTTP and its socket takes it all (a stream's chunk nearly always fits).
  // True: written; false: the client is gone. Nullopt: not done yet (TLS, a sink, a full send
  // buffer), and the caller co_awaits writeChunkLater with the same arguments, which writes what
  // is left. Saves a stream one coroutine frame and one resumption a chunk.
  std::optional<bool> writeChunkNow(std::string_view data, bool last);
  net::awaitable<bool> writeChunkLater(std::string_view data, bool last);
  // Sends a held-back stream header now, without a chunk.
  net::awaitable<bool> flushHeader();
  // Ends the exchange without the terminating chunk, so the client sees a broken stream.
  void abort();
  // The handler took the connection over (an upgrade to another protocol): the server writes
  // nothing more on it and closes it when the handler returns.
  void detach() {
    started_ = finished_ = true;
    keep_alive_ = false;
  }

  // The request's body when the server left it for the handler to stream (else null).
  RequestBody* body() const { return body_; }
  void setBody(RequestBody* b) { body_ = b; }

  bool started() const { return started_; }  // any byte sent to the client
  bool finished() const { return finished_; }
  bool keepAlive() const { return keep_alive_ && !aborted_; }
  void setKeepAlive(bool k) { keep_alive_ = k; }
  int worker() const { return worker_; }
  int listener() const { return listener_; }  // the ListenerOptions::tag it came in on
  // The TCP layer (timeouts, the socket); for a TLS connection the bytes on it are encrypted.
  beast::tcp_stream& stream() { return stream_; }
  TlsStream* tls() { return tls_; }  // the TLS layer of a TLS listener's connection; else null
  std::uint64_t bytesSent() const { return bytes_sent_; }
  std::string_view remote() const { return remote_; }  // the client's address

 private:
  net::awaitable<bool> writeRaw(std::string_view data, bool last);
  // The buffers of a chunk (and of the end when `last`), after what is unsent and a held-back
  // header; returns how many.
  struct ChunkBuffers {
    char size_line[24];
    std::array<net::const_buffer, 6> bufs;
  };
  std::size_t chunkBuffers(std::string_view data, bool last, ChunkBuffers& c);

  beast::tcp_stream& stream_;
  TlsStream* tls_ = nullptr;  // writes branch on this rather than through a virtual stream
  ResponseSink* sink_ = nullptr;
  RequestBody* body_ = nullptr;
  int worker_;
  int listener_ = 0;
  std::chrono::milliseconds write_timeout_;
  std::string_view remote_;
  bool started_ = false;
  bool finished_ = false;
  bool aborted_ = false;
  bool keep_alive_ = true;
  bool header_pending_ = false;
  std::string pending_header_;
  std::string unsent_;  // what writeChunkNow could not write: writeChunkLater's to write
  bool unsent_last_ = false;
  std::uint64_t bytes_sent_ = 0;
};

using Handler = std::function<net::awaitable<void>(Request&, Responder&)>;

class Server {
 public:
  Server(int workers, ServerLimits limits, Handler handler);
  // Replaces the handler; before run() only (a handler that needs the server it runs in).
  void setHandler(Handler handler) { handler_ = std::move(handler); }
  // Which requests' bodies the handler streams (Responder::body) instead of the server reading
  // them whole first; asked once the head is read, for a request with a body. Before run() only.
  using StreamBodyTest = std::function<bool(const bhttp::request_header<>&)>;
  void setStreamBody(StreamBodyTest test) { stream_body_ = std::move(test); }
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Binds an acceptor on every worker to host:port (port 0: the first picks, the rest reuse it).
  // May be called once per listener before run(). Throws std::system_error on failure.
  // Returns the bound endpoint.
  tcp::endpoint listen(const std::string& host, std::uint16_t port, const ListenerOptions& options = {});
  // Runs the workers until stop() has drained them. Blocks.
  void run();
  // Stops accepting, closes idle connections, lets in-flight requests finish within grace,
  // then closes the rest. Safe from any thread, idempotent.
  void stop(std::chrono::milliseconds grace);

  // Runs on each worker thread right after its event loop ends (e.g. to flush per-thread
  // buffers). Set before run().
  void onWorkerExit(std::function<void(int)> hook) { on_worker_exit_ = std::move(hook); }

  int workerCount() const { return static_cast<int>(workers_.size()); }
  net::io_context& workerContext(int i);
  bool stopping() const { return stopping_.load(std::memory_order_relaxed); }
  // Each worker's open client connections (what placement counts), for /metrics.
  std::vector<int> openConnections();
  // Connections accepted since start, on every listener (the mock reports it: how many
  // connections a proxy in front of it opened).
  std::uint64_t acceptedConnections() const { return accepted_.load(std::memory_order_relaxed); }

 private:
  struct Worker;
  struct Listener;
  net::awaitable<void> acceptLoop(Worker& w, Listener& l);
  // Where a new connection is served (the header's rule), its count taken: the connection's
  // coroutine gives it back when it ends (Leave in Server.cpp).
  Worker& pickWorker(Worker& self);
  void sampleBusy(Worker& w, std::chrono::steady_clock::time_point now);
  static constexpr double kPackBusy = 0.5;
  net::awaitable<void> serveConnection(Worker& w, int tag, tcp::socket socket);
  net::awaitable<void> serveTlsConnection(Worker& w, int tag, std::shared_ptr<ServerTls> tls, tcp::socket socket);
  // The request loop of one connection; Stream is beast::tcp_stream or TlsStream (`tcp` is its
  // TCP layer, the same object for plain HTTP).
  template <class Stream>
  Responder responderFor(Worker& w, int tag, Stream& stream, beast::tcp_stream& tcp, std::string_view remote);
  template <class Stream>
  net::awaitable<void> refuse(Worker& w, int tag, Stream& stream, beast::tcp_stream& tcp, beast::flat_buffer& buffer,
                              Response reply);
  template <class Stream>
  net::awaitable<bool> readRequest(Worker& w, int tag, Stream& stream, beast::tcp_stream& tcp,
                                   beast::flat_buffer& buffer, const std::string& remote, std::optional<Request>& out);
  template <class Stream>
  net::awaitable<void> serveRequests(Worker& w, int tag, Stream& stream, beast::tcp_stream& tcp,
                                     beast::flat_buffer& buffer, bool& idle, const std::string& remote);

  ServerLimits limits_;
  Handler handler_;
  StreamBodyTest stream_body_;
  std::vector<std::unique_ptr<Worker>> workers_;
  std::atomic<bool> stopping_{false};
  std::atomic<std::uint64_t> accepted_{0};
  // Open connections per worker (Worker::open), picked and counted under one lock at accept.
  std::mutex balance_mu_;
  std::function<void(int)> on_worker_exit_;
};

}  // namespace sluice::http
