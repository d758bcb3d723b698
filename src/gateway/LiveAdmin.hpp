// LiveAdmin: the admin endpoints that act on this process's live state rather than the store:
// the running config (/config), a reload (/reload), the prices in force (/pricing), the
// protect-and-save switches (/settings), and the upstream keys' health (/upstream-keys, with
// enable, disable and probe). The AdminApi serves the rest from the store.
#pragma once
#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/json/value.hpp>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "http/Server.hpp"
#include "upstream/Client.hpp"

namespace sluice::cache {
class ResponseCache;
}
namespace sluice::store {
class Store;
}

namespace sluice::gateway {

class ControlPlane;
struct Snapshot;

class LiveAdmin {
 public:
  // What the endpoints act on, all owned by the gateway.
  struct Host {
    ControlPlane& control;
    boost::asio::io_context& control_ioc;  // reloads run on the control thread
    std::function<std::pair<bool, std::string>(const char*)> reload;
    std::string config_path;                // empty: the embedded default
    cache::ResponseCache* cache = nullptr;  // null: no response cache
  };

  explicit LiveAdmin(Host host);
  ~LiveAdmin();

  // The answer for `path` (under /admin/api), or nullopt when it is not one of these endpoints.
  // `pool`: the calling worker's, for a key's probe.
  boost::asio::awaitable<std::optional<http::Response>> handle(const Snapshot& snap, upstream::Pool& pool,
                                                               const http::Request& req, const std::string& path);
  // An upstream key as GET /upstream-keys lists it (masked), or null when `ref` names none.
  static boost::json::value upstreamKeyStatus(const Snapshot& snap, std::string_view ref);

 private:
  // Runs blocking store work on the admin's own store thread (never a worker's).
  template <class F>
  boost::asio::awaitable<std::optional<std::string>> onStoreThread(F f);

  Host host_;
  boost::asio::thread_pool ops_pool_{1};
  std::unique_ptr<store::Store> ops_store_;  // ops_pool_ only
};

}  // namespace sluice::gateway
