// AdminApi: the JSON API under /admin/api/: request logs and usage, virtual keys, channels and
// their upstream keys, MCP servers, scoped admin tokens, the audit log, and the OpenAPI document
// describing all of it. Who may call what is decided before (admin/Roles, gateway/AdminGate); the
// caller comes along for what depends on it (log bodies, who created a token). Its
// handlers run database work on their own thread, never on a gateway worker, and answer on the
// worker that received the request.
// Thread-safety: handle() may be called from any worker concurrently; call setConfigSource()
// and onChange() before the first handle().
#pragma once
#include <boost/asio/awaitable.hpp>
#include <boost/asio/thread_pool.hpp>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "admin/Roles.hpp"
#include "http/Server.hpp"
#include "store/Store.hpp"

namespace sluice::config {
struct Config;
}
namespace sluice::mcp {
struct ServerState;
}

namespace sluice::admin {

class AdminApi {
 public:
  explicit AdminApi(std::string store_url);
  ~AdminApi();

  // `path` is under /admin/api (e.g. "/logs"), `query` without the '?'. Returns the response.
  boost::asio::awaitable<http::Response> handle(const http::Request& req, std::string path, std::string query,
                                                Caller caller);

  // An admin token presented as a bearer key: the caller it stands for, or why it is refused
  // (unknown, revoked, expired; the store unreachable).
  struct TokenCheck {
    std::optional<Caller> caller;
    std::string why;
  };
  boost::asio::awaitable<TokenCheck> authenticateToken(std::string secret, std::string address);

  // Appends one row to the audit log; false (and logged) when the store refused it.
  boost::asio::awaitable<bool> appendAudit(store::AuditEntry entry);

  // The running config snapshot, asked for on the admin thread at each request that needs it:
  // its channels declared in the file are shown read-only and their names are reserved, and
  // store.secret_key seals upstream keys (empty: adding them is refused with 503).
  void setConfigSource(std::function<std::shared_ptr<const config::Config>()> source);
  // Called on the admin thread after every successful write (virtual key, channel or upstream
  // key), so the gateway can rebuild its snapshot at once rather than at its next poll.
  void onChange(std::function<void()> callback);
  // The MCP hub's live view of its servers (state, tools), asked for on the admin thread.
  void setMcpSource(std::function<std::vector<mcp::ServerState>()> source);

  // Every endpoint served here as {"METHOD", "/path/{param}"}, for the OpenAPI document's test.
  static std::vector<std::pair<std::string, std::string>> routes();

 private:
  struct State;
  std::unique_ptr<State> state_;  // the store connection: touched only on pool_'s thread
  boost::asio::thread_pool pool_{1};
};

}  // namespace sluice::admin
