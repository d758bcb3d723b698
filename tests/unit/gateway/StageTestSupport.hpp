// What the stage tests share: a snapshot made from a YAML config (as ControlPlane makes one, less
// the store), and an exchange on a real loopback connection, whose client side reads back what
// a stage answered. Each test runs one stage (or the chain) on the exchange's io_context.
#pragma once
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/use_future.hpp>
#include <boost/beast/core/tcp_stream.hpp>

#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cluster/Limiter.hpp"
#include "gateway/Exchange.hpp"
#include "gateway/Snapshot.hpp"
#include "routing/Router.hpp"
#include "store/Store.hpp"
#include "upstream/Client.hpp"

namespace sluice::gateway::testing {

// A snapshot of `yaml` with the given virtual keys; its stages are the real chain.
std::shared_ptr<Snapshot> makeSnapshot(const std::string& yaml, const std::vector<store::VirtualKey>& keys = {});

// A virtual key for makeSnapshot with this secret (hash and prefix filled in).
store::VirtualKey virtualKey(std::int64_t id, const std::string& name, const std::string& secret);

// One request on its way through stages: the request as a client sent it, the server side of a
// loopback connection for the responder, and the client side to read the answer from.
class StageHarness {
 public:
  // `limiter` (optional): shared by several harnesses, so that one request's holds are seen by
  // the next; `cache` (optional): the response cache the exchange uses.
  // `responses` (optional): the stored responses the exchange uses.
  explicit StageHarness(std::shared_ptr<Snapshot> snap, cluster::Limiter* limiter = nullptr,
                        cache::ResponseCache* cache = nullptr, ResponseStoreService* responses = nullptr);
  ~StageHarness();

  // The request: POST path with these headers and body (the call is classified as the gateway
  // does it: set call() fields for anything else).
  void request(std::string path, std::string body, std::vector<std::pair<std::string, std::string>> headers = {});
  ClientCall& call() { return call_; }
  RequestRecord& rec() { return rec_; }
  Exchange& ex() { return *ex_; }
  const Snapshot& snap() const { return *snap_; }
  cluster::Limiter& limiter() { return *limiter_; }
  boost::asio::io_context& ioc() { return ioc_; }

  // Starts the stage named `name` of the snapshot's chain on the exchange; nullptr when it has
  // nothing to do for this request.
  Stage* start(std::string_view name);
  // Runs a hook to its end on the exchange's io_context.
  Step onRequest(Stage& s);
  void onComplete(Stage& s);
  // Runs the whole chain.
  void runChain();
  // Runs the stages named, in order, each that starts, until one answers (what the chain does
  // before the stage under test); returns the last step.
  Step runThrough(std::initializer_list<std::string_view> names);

  // The way-back hooks, run to their end (the relay's calls, one stage at a time).
  void onAttempt(Stage& s, UpstreamAttempt& a);
  void onAttemptFailed(Stage& s, const routing::Pick& p);
  Step onResponseEnd(Stage& s, const ResponseEnd& e);
  void onResponseCommit(Stage& s, const ResponseEnd& e);
  // The first key of the route's first candidate channel, as the relay would pick it.
  routing::Pick firstPick() const;

  // What the client side received so far: status (0: nothing), headers, body.
  struct Answer {
    int status = 0;
    std::string head;
    std::string body;
    std::string header(std::string_view name) const;
  };
  Answer answer();

  // Runs any awaitable to its end on the exchange's io_context.
  template <class T>
  T run(boost::asio::awaitable<T> a) {
    auto f = boost::asio::co_spawn(ioc_, std::move(a), boost::asio::use_future);
    ioc_.restart();
    ioc_.run();
    return f.get();
  }

 private:
  std::shared_ptr<Snapshot> snap_;
  boost::asio::io_context ioc_;
  upstream::ClientTls tls_;
  upstream::Pool pool_{ioc_, tls_};
  std::unique_ptr<cluster::Limiter> own_limiter_;
  cluster::Limiter* limiter_;
  cache::ResponseCache* cache_;
  ResponseStoreService* responses_;
  boost::asio::ip::tcp::socket client_{ioc_};
  std::optional<boost::beast::tcp_stream> server_;
  std::optional<http::Responder> responder_;
  http::Request req_;
  RequestContext ctx_;
  ClientCall call_;
  RequestRecord rec_;
  std::unique_ptr<Exchange> ex_;
  StageArena arena_;
  std::string received_;
};

}  // namespace sluice::gateway::testing
