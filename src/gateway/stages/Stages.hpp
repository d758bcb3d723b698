// The stages of the request path, one file each (gateway/Chain.cpp puts them in order). Each
// factory makes the stage's config, once per snapshot. The relay, the last stage, is
// gateway/Proxy.cpp's.
#pragma once
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "gateway/Stage.hpp"
#include "pipeline/Protect.hpp"

namespace sluice::redact {
struct RestoreStats;
}
namespace sluice::routing {
struct Channel;
}
namespace sluice::cloud {
struct AwsCredentials;
}

namespace sluice::gateway {

struct Snapshot;
struct Exchange;

std::unique_ptr<const StageConfig> makeTraceStage(const Snapshot& snap);
std::unique_ptr<const StageConfig> makeAuthStage(const Snapshot& snap);
std::unique_ptr<const StageConfig> makeResponsesStage(const Snapshot& snap);
std::unique_ptr<const StageConfig> makeRouteStage(const Snapshot& snap);
std::unique_ptr<const StageConfig> makeLimitsStage(const Snapshot& snap);
std::unique_ptr<const StageConfig> makeScanStage(const Snapshot& snap);
std::unique_ptr<const StageConfig> makeScreeningStage(const Snapshot& snap);
std::unique_ptr<const StageConfig> makeRedactionStage(const Snapshot& snap);
std::unique_ptr<const StageConfig> makeGuardrailStage(const Snapshot& snap);
std::unique_ptr<const StageConfig> makeCacheStage(const Snapshot& snap);
std::unique_ptr<const StageConfig> makeSubscriptionStage(const Snapshot& snap);
std::unique_ptr<const StageConfig> makeSigningStage(const Snapshot& snap);
std::unique_ptr<const StageConfig> makeRelayStage(const Snapshot& snap);

// A stage config whose stages keep no state of their own (every request gets a fresh one in
// its arena, so that a stage may grow state without changing the chain).
template <class S>
class SimpleStageConfig final : public StageConfig {
 public:
  explicit SimpleStageConfig(std::string_view name) : name_(name) {}
  std::string_view name() const override { return name_; }
  Stage* start(const Exchange& ex, StageArena& arena) const override {
    return S::applies(ex) ? arena.make<S>() : nullptr;
  }

 private:
  std::string_view name_;
};

// guardrail: the request's text as the webhook sees it (after redaction), for the request
// phase and (with the answer) for the response phase.
std::string reviewPayload(const Exchange& ex, const std::vector<pipeline::OutgoingText>& texts, std::string_view phase,
                          std::string_view answer);

// route: the channels that may serve fallback model `model` for this request, with the route
// stage's checks (the model-name rule, the virtual key's models and channels, a model name the
// channel's URL path can take, the client's format); `routed` gets the name after aliases; `why`
// says why no channel may when the list is empty.
std::vector<const routing::Channel*> fallbackCandidates(const Exchange& ex, const std::string& model,
                                                        std::string& routed, std::string& why);

// signing: the header lines that sign a request of `body` to `target` on bedrock channel `ch`
// with `creds` at `now` (seconds since the epoch): Authorization, X-Amz-Date and, with a session
// token, X-Amz-Security-Token.
std::string signedHeaderLines(const routing::Channel& ch, const cloud::AwsCredentials& creds, std::string_view target,
                              std::string_view body, long long now);

// redaction: counts what restoring an answer put back (and what was tampered with).
void countRestored(const redact::RestoreStats& st);

}  // namespace sluice::gateway
