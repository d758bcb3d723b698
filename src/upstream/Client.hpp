// Upstream client: parsed endpoints, pooled keep-alive connections (plain or TLS) and
// deadline-bounded exchanges. A Pool belongs to one worker thread and is not thread-safe.
#pragma once
#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/buffer_body.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/ssl/ssl_stream.hpp>
#include <atomic>
#include <chrono>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <variant>
#include <vector>

namespace sluice::upstream {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
namespace ssl = boost::asio::ssl;
using tcp = net::ip::tcp;
using Millis = std::chrono::milliseconds;
using ResponseParser = bhttp::response_parser<bhttp::buffer_body>;

// Where a channel's requests go, parsed once from base_url when the config snapshot is built.
struct Endpoint {
  bool tls = false;
  std::string host;       // as in the URL (brackets stripped for IPv6)
  std::uint16_t port = 0;
  std::string base_path;  // without a trailing slash, e.g. "/v1"
  std::string host_header;
  std::string pool_key;   // scheme://host:port
};
// Returns an empty string on success, else what is wrong with the URL.
std::string parseBaseUrl(const std::string& url, Endpoint& out);

class Connection {
 public:
  Connection(net::io_context& ioc, ssl::context* tls_ctx, std::string pool_key);
  ~Connection();

  net::awaitable<beast::error_code> connect(const std::vector<tcp::endpoint>& eps, const Endpoint& ep,
                                            Millis timeout);
  net::awaitable<beast::error_code> write(bhttp::request<bhttp::string_body>& req, Millis timeout);
  // Writes a request already formatted: `head` ends with the blank line, `body` follows.
  net::awaitable<beast::error_code> writeRaw(std::string_view head, std::string_view body, Millis timeout);
  net::awaitable<beast::error_code> readHeader(ResponseParser& p, Millis timeout);
  // The next decoded body bytes: returns as soon as any arrive or the message is complete (then
  // the view may be empty and p.is_done()). The view points into a buffer of the worker thread's
  // and stays valid only until the caller next suspends: use or copy it first. Only the raw
  // bytes not yet decoded are kept per connection across a wait, so an open stream holds one
  // read buffer (kReadBuffer), not two.
  net::awaitable<std::pair<beast::error_code, std::string_view>> readBody(ResponseParser& p, Millis timeout);

  // readBody in parts, for a stream's loop to run without a coroutine of its own (one frame and
  // one resumption a chunk; bench/instructions.sh), with the same results and deadline:
  //   auto piece = c.bufferedBody(p);
  //   if (!piece) {
  //     const auto scope = c.deadline(timeout);
  //     while (!piece) { auto [ec, n] = co_await c.readSome(); piece = c.afterRead(p, ec, n); }
  //   }
  using BodyPiece = std::pair<beast::error_code, std::string_view>;
  // Disarms the read deadline however the read that armed it returns.
  struct DeadlineScope {
    Connection* c;
    ~DeadlineScope() { c->disarmDeadline(); }
  };
  // What the buffered bytes decode to, or nullopt when a read must come first.
  std::optional<BodyPiece> bufferedBody(ResponseParser& p);
  // Arms the deadline for the reads until the scope ends.
  [[nodiscard]] DeadlineScope deadline(Millis timeout) {
    armDeadline(timeout);
    return DeadlineScope{this};
  }
  // The socket's (or the TLS layer's) read into the buffer: the operation's own awaitable.
  net::awaitable<std::tuple<beast::error_code, std::size_t>> readSome();
  // Takes readSome's answer: the piece it completes, or nullopt when another read must come.
  std::optional<BodyPiece> afterRead(ResponseParser& p, beast::error_code ec, std::size_t n);
  void close();
  // False when the idle connection is known to be unusable.
  bool looksAlive();
  // Into the pool: the read buffer is freed (an idle connection holds none). Out of it: room
  // for a read again.
  void park();
  void unpark();

  const std::string& poolKey() const { return pool_key_; }
  // A page, as nginx's proxy_buffer_size: a few SSE events or a response head in one read, and
  // one of these per open stream (thousands at once).
  static constexpr std::size_t kReadBuffer = 4u * 1024;
  bool reused = false;
  std::chrono::steady_clock::time_point idle_since{};

 private:
  using Clock = std::chrono::steady_clock;
  beast::tcp_stream& tcpStream();
  // readBody's deadline. Beast's stream arms and cancels a timer around every read (a chunk of
  // a stream is one read); here a read only notes when it must end, and one watchdog timer per
  // connection wakes at the earliest such time, re-arms to the latest, and cancels the read
  // (beast::error::timeout) once a deadline has passed with the read still waiting.
  void armDeadline(Millis timeout);
  void disarmDeadline() { due_ = Clock::time_point::max(); }
  void watch();
  std::variant<beast::tcp_stream, beast::ssl_stream<beast::tcp_stream>> stream_;
  beast::flat_buffer buffer_;
  std::string pool_key_;
  net::steady_timer watchdog_;
  // What a pending watchdog wait finds: this connection, or null once it is gone.
  std::shared_ptr<Connection*> self_;
  Clock::time_point due_ = Clock::time_point::max();
  std::uint64_t watch_gen_ = 0;  // a wait from an earlier arming is stale
  bool watching_ = false;
  bool timed_out_ = false;
  std::size_t room_ = 0;  // what the read under way asked for (readSome)
};

// The client TLS context, made on first use: loading the system trust store costs about a
// megabyte and tens of milliseconds, which a gateway whose channels are all plain HTTP (a local
// model server, the mock) never needs. Whoever knows that a TLS upstream is coming (the gateway,
// when a config has an https channel) calls get() ahead, off the request path. Thread-safe.
class ClientTls {
 public:
  ssl::context& get();
  bool loaded() const;

 private:
  mutable std::once_flag once_;
  std::optional<ssl::context> ctx_;
  std::atomic<bool> loaded_{false};
};

class Pool {
 public:
  Pool(net::io_context& ioc, ClientTls& tls);
  // A connected connection: an idle pooled one when available, else a new one.
  net::awaitable<std::pair<beast::error_code, std::unique_ptr<Connection>>> acquire(const Endpoint& ep,
                                                                                   Millis connect_timeout,
                                                                                   bool allow_reuse = true);
  // Returns a connection whose last response was read completely and may be reused.
  void release(std::unique_ptr<Connection> c);
  std::size_t idleCount() const;

  // Idle connections kept per host: as many as a burst of thousands of concurrent streams needs,
  // so a warm pool opens no new connection when they end and begin again (a smaller cap closes
  // the surplus of every burst and reconnects it on the next). Idle ones past kIdleTtl are
  // closed when the host's next connection is released or taken.
  static constexpr std::size_t kMaxIdlePerHost = 8192;
  static constexpr Millis kIdleTtl{60'000};  // nginx's upstream keepalive_timeout

 private:
  net::awaitable<std::pair<beast::error_code, std::vector<tcp::endpoint>>> resolve(const Endpoint& ep);
  struct DnsEntry {
    std::vector<tcp::endpoint> eps;
    std::chrono::steady_clock::time_point expires;
  };
  net::io_context& ioc_;
  ClientTls& tls_;
  tcp::resolver resolver_;
  // Oldest first: taken from the back (the most recently used, least likely closed by the peer),
  // expired from the front.
  std::unordered_map<std::string, std::deque<std::unique_ptr<Connection>>> idle_;
  std::unordered_map<std::string, DnsEntry> dns_;
};

// The process-wide client TLS context: system trust store, peer verification on.
ssl::context makeClientTlsContext();

}  // namespace sluice::upstream
