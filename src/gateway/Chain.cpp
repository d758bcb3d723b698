#include "gateway/Chain.hpp"

#include <array>
#include <exception>
#include <stdexcept>

#include "gateway/Exchange.hpp"
#include "gateway/Snapshot.hpp"
#include "gateway/stages/Stages.hpp"

namespace sluice::gateway {

std::vector<std::unique_ptr<const StageConfig>> buildStages(const Snapshot& snap) {
  std::vector<std::unique_ptr<const StageConfig>> s;
  // Who is calling, before anything reveals what is configured.
  s.push_back(makeAuthStage(snap));
  // What is asked for: the query, the method, the body's facts, the model and the channels that
  // may serve it for this caller; before anything is charged.
  s.push_back(makeRouteStage(snap));
  // The caller's limits and budgets on the estimate, before any work is spent; settles last.
  s.push_back(makeLimitsStage(snap));
  // One walk of the body for the three protect stages below.
  s.push_back(makeScanStage(snap));
  // Prompt injection, on the text as the client sent it.
  s.push_back(makeScreeningStage(snap));
  // Secrets and personal data out of the body (and back into the answer), before any text leaves.
  s.push_back(makeRedactionStage(snap));
  // The external guardrail sees the request as it will go upstream (redacted).
  s.push_back(makeGuardrailStage(snap));
  // The cache, keyed on the redacted body: a hit answers here, a miss records the answer.
  s.push_back(makeCacheStage(snap));
  // Routing and failover across channels and keys, translation, and the answer's way back:
  // the last stage, as Envoy's router.
  s.push_back(makeRelayStage(snap));
  if (s.size() > StageArena::kMaxStages) throw std::logic_error("more stages than StageArena::kMaxStages");
  return s;
}

boost::asio::awaitable<void> runChain(Exchange& ex) {
  StageArena arena;
  std::array<Stage*, StageArena::kMaxStages> started{};
  std::size_t n = 0;
  std::exception_ptr thrown;
  try {
    for (const auto& cfg : ex.snap.stages) {
      Stage* stage = cfg->start(ex, arena);
      if (stage == nullptr) continue;
      started[n++] = stage;
      if (co_await stage->onRequest(ex) == Step::Answered) break;
    }
  } catch (...) {
    thrown = std::current_exception();
  }
  for (std::size_t i = n; i-- > 0;) co_await started[i]->onComplete(ex);
  if (thrown) std::rethrow_exception(thrown);
}

}  // namespace sluice::gateway
