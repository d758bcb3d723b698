// The request path: its stages in order (buildStages, the one place the order is written) and
// the runner that walks a request through them (runChain).
#pragma once
#include <boost/asio/awaitable.hpp>

#include <memory>
#include <vector>

#include "gateway/Stage.hpp"

namespace sluice::gateway {

struct Snapshot;
struct Exchange;

// The stage configs for a snapshot, in request order. Built last in makeSnapshot, from the rest
// of the snapshot.
std::vector<std::unique_ptr<const StageConfig>> buildStages(const Snapshot& snap);

// Starts each stage in turn and runs its request hook until one answers, then every started
// stage's completion hook in reverse order (also when a hook threw, which is then rethrown).
boost::asio::awaitable<void> runChain(Exchange& ex);

}  // namespace sluice::gateway
