// Proxy: the relay, the request path's last stage (makeRelayStage in gateway/stages/Stages.hpp):
// one request relayed to the channels serving its model, failing over across keys and channels
// before the first byte reaches the client, with an explicit error event after it; and the
// masking of what a finished request leaves for the log.
#pragma once
#include "gateway/Exchange.hpp"
#include "gateway/Snapshot.hpp"

namespace sluice::gateway {

// Masks the snapshot's upstream secrets in the bodies a finished request leaves for the request
// log (the error and attempts come from upstream text masked as it arrived). Before the record
// is queued; off the response path.
void scrubRecord(const Snapshot& snap, RequestRecord& rec);

}  // namespace sluice::gateway
