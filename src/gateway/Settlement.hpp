// Settlement: the limits one request holds (the caller's own, taken by the limits stage; the
// channels' and keys' quotas, taken by the relay per attempt), settled once. A success settles
// right before the answer's last bytes go out, so that a client that sends its next request as
// soon as it has the answer finds its slot, tokens and spend already counted; every other path
// settles when the request ends (the limits stage's completion).
#pragma once
#include <boost/asio/awaitable.hpp>

#include <optional>
#include <string_view>
#include <vector>

#include "cluster/Limiter.hpp"
#include "config/Config.hpp"
#include "routing/Router.hpp"

namespace sluice::pipeline {
class PriceTable;
}

namespace sluice::gateway {

struct RequestRecord;

// What one admitted request holds on the limiter, given back when the request ends.
struct Held {
  cluster::Subject subject;
  cluster::Charge charge;
  // The channel (and key) the charge is for; both null for the caller's own (virtual key).
  const routing::Channel* channel = nullptr;
  const routing::UpstreamKey* key = nullptr;
};

class Settlement {
 public:
  explicit Settlement(cluster::Limiter& limiter) : limiter_(limiter) {}

  cluster::Limiter& limiter() const { return limiter_; }
  void hold(Held h) { held_.push_back(std::move(h)); }
  std::size_t heldCount() const { return held_.size(); }
  // Gives back the hold at `index` unused (a failed attempt used its key's request, no tokens).
  boost::asio::awaitable<void> releaseAt(std::size_t index);
  // The hold charged to upstream key `k` (a key's own quota), or heldCount() when there is none.
  std::size_t keyHold(const routing::UpstreamKey* k) const {
    for (std::size_t i = 0; i < held_.size(); ++i)
      if (held_[i].key == k) return i;
    return held_.size();
  }
  bool settled() const { return settled_; }

  // The price of the routed model, for the cost (the route stage sets it).
  std::optional<config::Price> price;
  // The attempt whose answer the client got (the relay sets it): its channel and key are
  // charged the real usage when the request settles.
  std::optional<routing::Pick> served;

  // Marks the request settled and computes its cost from the real usage, at the price of the
  // model the channel was asked for. True when limits are held: then settleHeld() must follow.
  // Synchronous, so requests that hold no limits (the master key's) make no coroutine frame.
  bool begin(const pipeline::PriceTable& prices, RequestRecord& rec, std::string_view routed_model,
             std::string_view upstream_model);
  // `served`: the attempt that answered (its channel and key are charged the real usage).
  boost::asio::awaitable<void> settleHeld(const routing::Pick* served, const RequestRecord& rec);
  // Nothing went upstream (a cache hit): every hold gets its reservation back.
  boost::asio::awaitable<void> releaseAll();

 private:
  cluster::Limiter& limiter_;
  std::vector<Held> held_;
  bool settled_ = false;
};

}  // namespace sluice::gateway
