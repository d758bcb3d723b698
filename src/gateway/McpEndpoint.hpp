// /mcp: the MCP gateway's one endpoint, speaking MCP's Streamable HTTP transport to clients and
// putting every server of the McpHub behind it (tools and prompts named SERVER__NAME, resources
// sluice-mcp://SERVER/URI). Authenticated as the proxy API is (master key or virtual key; a
// refused key never reaches a server); a virtual key's allowed_tools applies to every list and
// every call, and its RPM and concurrency limits count tool calls. Each tools/call fills the
// request record (channel: the server, model: the tool), so it is logged and counted as any
// request. Not a model request: it does not run through the chain.
//
// A GET with Accept: text/event-stream on a session opens the stream of server-initiated
// messages: the hub's list_changed notifications (a server's own, or one joining or leaving),
// a heartbeat comment every kHeartbeat, closed when the session ends or at shutdown. One stream
// per session, kMaxStreams in all.
//
// A request whose Origin is not the request's own host is refused with 403 before anything
// else (the spec's DNS-rebinding rule).
//
// Sessions (Mcp-Session-Id) live in this process's memory, bounded; thread-safe.
#pragma once
#include <boost/asio/awaitable.hpp>

#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "gateway/Exchange.hpp"
#include "http/Server.hpp"

namespace sluice::cluster {
class Limiter;
}
namespace sluice::mcp {
class McpHub;
}

namespace sluice::gateway {

struct Snapshot;

class McpEndpoint {
 public:
  static constexpr std::size_t kMaxSessions = 10000;
  static constexpr std::chrono::hours kSessionIdle{1};
  static constexpr std::size_t kMaxStreams = 1000;
  static constexpr std::chrono::seconds kHeartbeat{15};

  McpEndpoint(mcp::McpHub& hub, cluster::Limiter& limiter) : hub_(hub), limiter_(limiter) {}

  boost::asio::awaitable<void> handle(const Snapshot& snap, http::Request& req, http::Responder& r,
                                      const RequestContext& ctx, RequestRecord& rec);

  // `method` (a notifications/.../list_changed) to every open stream. Any thread.
  void broadcast(const std::string& method);
  // Ends every open stream (a clean end of its chunked body) and refuses new ones. Any thread.
  void shutdown();
  std::size_t openStreams() const;

 private:
  struct Listener;
  boost::asio::awaitable<void> stream(http::Responder& r, const RequestContext& ctx, const std::string& session,
                                      const std::string& principal);
  struct Session {
    std::string principal;  // "master" or "vk:ID": a session serves the key that opened it only
    std::string version;
    std::chrono::steady_clock::time_point used;
  };
  std::string openSession(const std::string& principal, std::string version);
  // The session's protocol version, or nullopt when it does not exist for this principal.
  std::optional<std::string> touchSession(const std::string& id, const std::string& principal);
  bool endSession(const std::string& id, const std::string& principal);

  mcp::McpHub& hub_;
  cluster::Limiter& limiter_;
  mutable std::mutex mu_;
  std::unordered_map<std::string, Session> sessions_;
  std::unordered_map<std::string, std::shared_ptr<Listener>> listeners_;  // by session
  bool shut_ = false;
};

}  // namespace sluice::gateway
