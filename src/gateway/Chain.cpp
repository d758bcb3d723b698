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
  // The request's span (when telemetry is on): first, so that refusals are traced too, and its
  // completion, which runs last, sees the record whole.
  s.push_back(makeTraceStage(snap));
  // Who is calling, before anything reveals what is configured.
  s.push_back(makeAuthStage(snap));
  // Stored responses: GET/DELETE of one answered here, for the caller's key only; a request
  // continuing one made whole before anything reads its body, so the route's facts, the limits'
  // estimate, the protect stages and the cache all see the conversation the channel gets; and
  // the answer kept on its way back as the client read it (its hooks run after the others').
  s.push_back(makeResponsesStage(snap));
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
  // A subscription channel's OAuth access token, per attempt (refreshed first when it nears
  // expiry): after the stages that rewrite the body, before signing (they never meet: a
  // subscription channel is anthropic or openai, never bedrock).
  s.push_back(makeSubscriptionStage(snap));
  // AWS SigV4 for bedrock channels, per attempt. Last before the relay, because a signature
  // covers the body as sent: every stage that may rewrite the body (redaction above, a stage's
  // onAttempt, which runs in this order) has done so, and the relay sends what was signed. Per
  // attempt, so a retry is signed with its own key and a failover to another type not at all.
  s.push_back(makeSigningStage(snap));
  // Routing and failover across channels and keys, translation, and the answer's way back:
  // the last stage, as Envoy's router.
  s.push_back(makeRelayStage(snap));
  if (s.size() > StageArena::kMaxStages) throw std::logic_error("more stages than StageArena::kMaxStages");
  return s;
}

boost::asio::awaitable<void> runChain(Exchange& ex) {
  StageArena arena;
  auto& started = ex.started;
  std::exception_ptr thrown;
  try {
    for (const auto& cfg : ex.snap.stages) {
      Stage* stage = cfg->start(ex, arena);
      if (stage == nullptr) continue;
      started.at[started.count++] = stage;
      const Step step = co_await stage->onRequest(ex);
      started.hooks |= stage->hooks();  // after onRequest, which may decide them
      if (step == Step::Answered) break;
    }
  } catch (...) {
    thrown = std::current_exception();
  }
  for (std::size_t i = started.count; i-- > 0;)
    if ((started.at[i]->hooks() & Stage::kComplete) != 0) co_await started.at[i]->onComplete(ex);
  if (thrown) std::rethrow_exception(thrown);
}

namespace wayback {

boost::asio::awaitable<void> attempt(Exchange& ex, UpstreamAttempt& a) {
  const auto& started = ex.started;
  for (std::size_t i = 0; i < started.count && a.skip == UpstreamAttempt::Skip::None; ++i)
    if ((started.at[i]->hooks() & Stage::kAttempt) != 0) co_await started.at[i]->onAttempt(ex, a);
}

boost::asio::awaitable<void> attemptFailed(Exchange& ex, const routing::Pick& p) {
  const auto& started = ex.started;
  for (std::size_t i = started.count; i-- > 0;)
    if ((started.at[i]->hooks() & Stage::kAttempt) != 0) co_await started.at[i]->onAttemptFailed(ex, p);
}

void headers(Exchange& ex, ResponseHead& h) {
  const auto& started = ex.started;
  for (std::size_t i = started.count; i-- > 0;)
    if ((started.at[i]->hooks() & Stage::kResponseHeaders) != 0) started.at[i]->onResponseHeaders(ex, h);
}

DataStep data(Exchange& ex, ResponseData& d) {
  const auto& started = ex.started;
  for (std::size_t i = started.count; i-- > 0;)
    if ((started.at[i]->hooks() & Stage::kResponseData) != 0 && started.at[i]->onResponseData(ex, d) == DataStep::Abort)
      return DataStep::Abort;
  return DataStep::Continue;
}

boost::asio::awaitable<Step> end(Exchange& ex, const ResponseEnd& e) {
  const auto& started = ex.started;
  for (std::size_t i = started.count; i-- > 0;) {
    if ((started.at[i]->hooks() & Stage::kResponseEnd) == 0) continue;
    const Step step = co_await started.at[i]->onResponseEnd(ex, e);  // not inside && (GCC 12)
    if (step == Step::Answered) co_return Step::Answered;
  }
  co_return Step::Continue;
}

boost::asio::awaitable<void> commit(Exchange& ex, const ResponseEnd& e) {
  const auto& started = ex.started;
  for (std::size_t i = started.count; i-- > 0;)
    if ((started.at[i]->hooks() & Stage::kResponseCommit) != 0) co_await started.at[i]->onResponseCommit(ex, e);
}

}  // namespace wayback

}  // namespace sluice::gateway
