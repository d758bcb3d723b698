// The request path: its stages in order (buildStages, the one place the order is written) and
// the runner that walks a request through them (runChain).
#pragma once
#include <boost/asio/awaitable.hpp>

#include <memory>
#include <vector>

#include "gateway/Exchange.hpp"
#include "gateway/Stage.hpp"

namespace sluice::gateway {

struct Snapshot;

// The stage configs for a snapshot, in request order. Built last in makeSnapshot, from the rest
// of the snapshot.
std::vector<std::unique_ptr<const StageConfig>> buildStages(const Snapshot& snap);

// Starts each stage in turn and runs its request hook until one answers, then every started
// stage's completion hook in reverse order (also when a hook threw, which is then rethrown).
boost::asio::awaitable<void> runChain(Exchange& ex);

// The answer's way back, for the relay: the hooks of the stages started before it. onAttempt runs
// in chain order (the request is still on its way out) and stops at the first stage that passes
// the pick over; the response hooks run in reverse chain order, as Envoy's encoder filters do.
// Call each only when some started stage takes that hook (`takes`): the coroutines cost a frame.
namespace wayback {
inline bool takes(const Exchange& ex, unsigned hooks);
boost::asio::awaitable<void> attempt(Exchange& ex, UpstreamAttempt& a);
boost::asio::awaitable<void> attemptFailed(Exchange& ex, const routing::Pick& p);
void headers(Exchange& ex, ResponseHead& h);
DataStep data(Exchange& ex, ResponseData& d);                          // stops at the first Abort
boost::asio::awaitable<Step> end(Exchange& ex, const ResponseEnd& e);  // stops at the first Answered
boost::asio::awaitable<void> commit(Exchange& ex, const ResponseEnd& e);
}  // namespace wayback

inline bool wayback::takes(const Exchange& ex, unsigned hooks) {
  return (ex.started.hooks & hooks) != 0;
}

}  // namespace sluice::gateway
