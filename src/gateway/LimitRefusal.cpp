#include "gateway/LimitRefusal.hpp"

#include <fmt/format.h>
#include <boost/beast/http/field.hpp>

#include <algorithm>

namespace sluice::gateway {

namespace bhttp = boost::beast::http;

namespace {

std::string formatReset(std::int64_t ms) {
  if (ms <= 0) return "0s";
  if (ms < 1000) return std::to_string(ms) + "ms";
  std::int64_t secs = (ms + 999) / 1000;
  if (secs < 60) return std::to_string(secs) + "s";
  return std::to_string(secs / 60) + "m" + std::to_string(secs % 60) + "s";
}

}  // namespace

LimitRefusal refusalFor(const cluster::Decision& d, std::string_view who, std::int64_t est_tokens) {
  LimitRefusal r;
  r.retry_after_ms = d.retry_after_ms;
  r.type = "rate_limit_error";
  r.code = "rate_limit_exceeded";
  switch (d.hit) {
    case cluster::LimitKind::Requests:
      r.message = fmt::format("{} is over its limit of {} requests per minute; retry in {}", who, d.limit_requests,
                              formatReset(d.retry_after_ms));
      break;
    case cluster::LimitKind::Tokens:
      if (est_tokens > d.limit_tokens) {
        // Waiting will not help: the request alone does not fit in a minute's tokens.
        r.retryable = false;
        r.message = fmt::format(
            "this request is estimated at {} tokens (prompt bytes / 4 + max_tokens), more than "
            "{}'s limit of {} tokens per minute: lower max_tokens or shorten the prompt",
            est_tokens, who, d.limit_tokens);
      } else {
        r.message = fmt::format("{} is over its limit of {} tokens per minute; retry in {}", who, d.limit_tokens,
                                formatReset(d.retry_after_ms));
      }
      break;
    case cluster::LimitKind::Concurrency:
      r.code = "concurrency_limit_exceeded";
      r.message = fmt::format("{} has as many requests in flight as it may; retry when one finishes", who);
      break;
    case cluster::LimitKind::BudgetDaily:
    case cluster::LimitKind::BudgetMonthly:
    case cluster::LimitKind::BudgetTotal: {
      r.type = "insufficient_quota";
      r.code = "budget_exceeded";
      r.retryable = false;
      const char* span = d.hit == cluster::LimitKind::BudgetDaily     ? "daily"
                         : d.hit == cluster::LimitKind::BudgetMonthly ? "monthly"
                                                                      : "total";
      r.message = d.hit == cluster::LimitKind::BudgetTotal ? fmt::format("{} has used its {} budget", who, span)
                                                           : fmt::format("{} has used its {} budget; it resets in {}",
                                                                         who, span, formatReset(d.retry_after_ms));
      break;
    }
    case cluster::LimitKind::None:
      r.message = fmt::format("{} is over a limit", who);
      break;
  }
  return r;
}

http::Response refusalResponse(Wire wire, const RequestContext& ctx, RequestRecord& rec, const LimitRefusal& why,
                               const std::vector<std::pair<std::string, std::string>>& headers) {
  auto res = failure(wire, ctx, rec, why.status, why.type, why.code, why.message);
  if (why.retry_after_ms > 0) res.set(bhttp::field::retry_after, std::to_string((why.retry_after_ms + 999) / 1000));
  // The SDKs retry 429s on their own; a spent budget will not come back within their retries.
  if (!why.retryable) res.set("x-should-retry", "false");
  for (const auto& [k, v] : headers) res.set(k, v);
  return res;
}

std::vector<std::pair<std::string, std::string>> rateLimitHeaders(const cluster::Decision& d) {
  std::vector<std::pair<std::string, std::string>> h;
  if (d.limit_requests >= 0) {
    h.emplace_back("x-ratelimit-limit-requests", std::to_string(d.limit_requests));
    h.emplace_back("x-ratelimit-remaining-requests", std::to_string(std::max<std::int64_t>(d.remaining_requests, 0)));
    h.emplace_back("x-ratelimit-reset-requests", formatReset(d.reset_requests_ms));
  }
  if (d.limit_tokens >= 0) {
    h.emplace_back("x-ratelimit-limit-tokens", std::to_string(d.limit_tokens));
    h.emplace_back("x-ratelimit-remaining-tokens", std::to_string(std::max<std::int64_t>(d.remaining_tokens, 0)));
    h.emplace_back("x-ratelimit-reset-tokens", formatReset(d.reset_tokens_ms));
  }
  return h;
}

}  // namespace sluice::gateway
