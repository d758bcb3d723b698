// McpHub: the connections to the MCP servers (config mcp.servers plus those added through the
// admin API), on a thread and io_context of its own, as the log writer owns its thread. Each
// server is initialized when it joins and kept up: a stdio server is a child process restarted
// with backoff when it dies, a Streamable HTTP server is initialized again when its session is
// lost or it could not be reached. A server that is down answers nothing: its calls fail at once
// with a clear error and it drops out of the lists, while the others keep working.
//
// The set changes while running (setServers): a server whose settings did not change keeps its
// connection or process; a removed stdio server's process ends. Each server's lists (tools,
// prompts, resources) are cached: filled when it comes up, dropped when it says they changed
// (notifications/.../list_changed: a stdio line, or an event of the GET stream an HTTP server
// offers), when it reconnects, and after kListTtl. As the lists no longer ask the servers, an
// HTTP server whose GET stream breaks is pinged (down when that fails), and a call to an HTTP
// server that is down makes one connection attempt at once (a restarted server serves again).
//
// Thread-safety: every public method may be called from any thread; call() and listAll() may be
// awaited from any worker's coroutine: they run on the hub's thread and complete on the caller's
// executor, each bounded by the server's timeout.
#pragma once
#include <boost/asio/awaitable.hpp>
#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include <atomic>
#include <chrono>
#include <functional>
#include <mutex>
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
  std::string server;
  boost::json::array items;
};

// What the admin API shows of one server.
struct ServerState {
  std::string name;
  std::string state;  // "up", "down" or "starting"
  std::string error;  // why it is down (no header values)
  std::uint64_t restarts = 0;
  std::vector<std::pair<std::string, std::string>> tools;  // namespaced name, description
  std::size_t prompts = 0;
  std::size_t resources = 0;
};

class McpHub {
 public:
  // Upstream answers past this are refused (an answer is read whole before it is passed on).
  static constexpr std::size_t kMaxAnswerBytes = 16u << 20;
  static constexpr std::size_t kMaxPages = 16;         // of one list, per server
  static constexpr std::size_t kMaxListItems = 10000;  // of one list, per server
  static constexpr std::size_t kMaxPending = 256;      // requests in flight per server
  static constexpr std::chrono::minutes kListTtl{5};   // a cached list is fetched again after this

  McpHub(std::vector<config::McpServerConfig> servers, upstream::ClientTls& tls);
  ~McpHub();
  McpHub(const McpHub&) = delete;
  McpHub& operator=(const McpHub&) = delete;

  void start();  // the thread; servers are initialized from there
  void stop();   // children killed, thread joined; idempotent

  // The servers from now on: new ones start, removed ones stop (a process ends), changed ones
  // (url, headers, command, timeout) are replaced; the others keep their connections.
  void setServers(std::vector<config::McpServerConfig> servers);
  // Called on the hub's thread with "notifications/tools/list_changed" (or prompts, resources)
  // when a server says so, comes up, or leaves. Set before start().
  void onListChanged(std::function<void(const std::string& method)> callback);

  std::size_t size() const;
  bool has(std::string_view server) const;
  std::vector<ServerState> states() const;

  boost::asio::awaitable<CallResult> call(std::string server, std::string method, boost::json::object params);
  // `method` on every server that is up (one of tools/list, prompts/list, resources/list,
  // resources/templates/list), the array under `key` of each answer, from the cache when it is
  // fresh; a server that fails is left out (and logged).
  boost::asio::awaitable<std::vector<ServerItems>> listAll(std::string method, std::string key);

  // sluice_mcp_server_up{server}, sluice_mcp_server_restarts_total{server} and
  // sluice_mcp_list_fetches_total{server,method} (lists fetched from the server, not the cache).
  void renderMetrics(std::string& out) const;

 private:
  struct Server;
  using ServerPtr = std::shared_ptr<Server>;
  ServerPtr makeServer(config::McpServerConfig c);
  ServerPtr lookup(std::string_view name) const;
  std::vector<ServerPtr> all() const;
  void apply(std::vector<config::McpServerConfig> servers);  // hub thread
  void retire(const ServerPtr& s);                           // hub thread
  void listChanged(const std::string& method);              // hub thread
  void dropCache(Server& s, std::string_view notification);
  boost::asio::awaitable<CallResult> callOnHub(ServerPtr s, std::string method, boost::json::object params);
  boost::asio::awaitable<std::optional<boost::json::array>> fetchList(ServerPtr s, std::string method,
                                                                      std::string key, bool use_cache);
  boost::asio::awaitable<std::vector<ServerItems>> listOnHub(std::string method, std::string key);
  boost::asio::awaitable<void> keep(ServerPtr s);
  boost::asio::awaitable<void> prefetch(ServerPtr s);
  void markDown(Server& s, const std::string& why);

  std::unique_ptr<boost::asio::io_context> ioc_;  // first: outlives every I/O object below
  struct Impl;
  std::unique_ptr<Impl> impl_;
  mutable std::mutex list_mu_;  // servers_: replaced on the hub thread, read anywhere
  std::vector<ServerPtr> servers_;
  std::function<void(const std::string&)> on_list_changed_;
  std::thread thread_;
  std::atomic<bool> stopping_{false};
  std::atomic<bool> started_{false};
};

}  // namespace sluice::mcp
