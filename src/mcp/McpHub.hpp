// McpHub: the connections to the configured MCP servers (config mcp.servers), on a thread and
// io_context of its own, as the log writer owns its thread. Each server is initialized at start
// and kept up: a stdio server is a child process restarted with backoff when it dies, a
// Streamable HTTP server is initialized again when its session is lost or it could not be
// reached. A server that is down answers nothing: its calls fail at once with a clear error and
// it drops out of the lists, while the others keep working.
//
// Thread-safety: call() and listAll() may be awaited from any worker's coroutine; they run on
// the hub's thread and complete on the caller's executor, each bounded by the server's timeout.
#pragma once
#include <boost/asio/awaitable.hpp>
#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include <atomic>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "config/Config.hpp"

namespace boost::asio {
class io_context;
}

namespace sluice::upstream {
class ClientTls;
}

namespace sluice::mcp {

struct CallResult {
  enum class Status { Ok, RpcError, Unavailable, Timeout, Busy };
  Status status = Status::Unavailable;
  boost::json::value result;  // the result (Ok) or the server's error object (RpcError)
  int code = 0;               // RpcError: the server's code
  std::string message;        // what went wrong, safe to show a client (no header values)
  bool broken = false;        // the connection or process failed: the server is taken down
  bool ok() const { return status == Status::Ok; }
};

// One server's whole list (pages followed), for listAll().
struct ServerItems {
  std::size_t server = 0;
  boost::json::array items;
};

class McpHub {
 public:
  // Upstream answers past this are refused (an answer is read whole before it is passed on).
  static constexpr std::size_t kMaxAnswerBytes = 16u << 20;
  static constexpr std::size_t kMaxPages = 16;         // of one list, per server
  static constexpr std::size_t kMaxListItems = 10000;  // of one list, per server
  static constexpr std::size_t kMaxPending = 256;      // requests in flight per server

  McpHub(std::vector<config::McpServerConfig> servers, upstream::ClientTls& tls);
  ~McpHub();
  McpHub(const McpHub&) = delete;
  McpHub& operator=(const McpHub&) = delete;

  void start();  // the thread; servers are initialized from there
  void stop();   // children killed, thread joined; idempotent

  std::size_t size() const;
  const std::string& name(std::size_t server) const;
  std::optional<std::size_t> find(std::string_view server) const;
  bool up(std::size_t server) const;

  boost::asio::awaitable<CallResult> call(std::size_t server, std::string method, boost::json::object params);
  // `method` on every server that is up (one of tools/list, prompts/list, resources/list,
  // resources/templates/list), the array under `key` of each answer; a server that fails is
  // left out (and logged).
  boost::asio::awaitable<std::vector<ServerItems>> listAll(std::string method, std::string key);

  // sluice_mcp_server_up{server} and sluice_mcp_server_restarts_total{server}.
  void renderMetrics(std::string& out) const;

 private:
  struct Server;
  boost::asio::awaitable<CallResult> callOnHub(std::size_t server, std::string method, boost::json::object params);
  boost::asio::awaitable<std::vector<ServerItems>> listOnHub(std::string method, std::string key);
  boost::asio::awaitable<void> keep(std::size_t server);
  void markDown(Server& s, const std::string& why);

  std::unique_ptr<boost::asio::io_context> ioc_;  // first: outlives every I/O object below
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::vector<std::unique_ptr<Server>> servers_;
  std::thread thread_;
  std::atomic<bool> stopping_{false};
  bool started_ = false;
};

}  // namespace sluice::mcp
