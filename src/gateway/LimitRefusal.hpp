// What a request refused by a limit hears (the caller's own limits in the limits stage, the
// channels' and keys' quotas in the relay), and the x-ratelimit-* headers of a decision.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "cluster/Limiter.hpp"
#include "gateway/Exchange.hpp"

namespace sluice::gateway {

struct LimitRefusal {
  int status = 429;
  std::string type, code, message;
  std::int64_t retry_after_ms = 0;
  bool retryable = true;
};

// `est_tokens`: what the request was charged up front (to explain a request larger than a limit).
LimitRefusal refusalFor(const cluster::Decision& d, std::string_view who, std::int64_t est_tokens);

// The refusal in the caller's format, noted in the record, with Retry-After and `headers`.
http::Response refusalResponse(Wire wire, const RequestContext& ctx, RequestRecord& rec, const LimitRefusal& why,
                               const std::vector<std::pair<std::string, std::string>>& headers);

// x-ratelimit-* headers for a decision (none for limits that are not set).
std::vector<std::pair<std::string, std::string>> rateLimitHeaders(const cluster::Decision& d);

// Tokens a request may use, before it runs: about 4 bytes of prompt per token (OpenAI's own
// rule for rate limits) plus the output cap the client set.
inline std::int64_t estimateTokens(std::string_view body, std::int64_t max_tokens) {
  return static_cast<std::int64_t>(body.size() / 4) + max_tokens;
}

}  // namespace sluice::gateway
