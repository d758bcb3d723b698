#include "gateway/Settlement.hpp"

#include <algorithm>

#include "gateway/Exchange.hpp"
#include "pipeline/Pricing.hpp"

namespace sluice::gateway {

boost::asio::awaitable<void> Settlement::releaseAt(std::size_t index) {
  Held h = std::move(held_[index]);
  held_.erase(held_.begin() + static_cast<std::ptrdiff_t>(index));
  co_await limiter_.settle(h.subject, h.charge, 0, 0);
}

bool Settlement::begin(const pipeline::PriceTable& prices, RequestRecord& rec, std::string_view routed_model,
                       std::string_view upstream_model) {
  if (settled_) return false;
  settled_ = true;
  const std::int64_t in = std::max<std::int64_t>(rec.input_tokens, 0);
  const std::int64_t out = std::max<std::int64_t>(rec.output_tokens, 0);
  if (in + out > 0) {
    auto p = upstream_model.empty() || upstream_model == routed_model ? price : prices.find(upstream_model);
    if (!p) p = price;
    if (p)
      rec.cost_usd = pipeline::PriceTable::cost(*p, {.input = in,
                                                     .output = out,
                                                     .cached = rec.cached_tokens,
                                                     .cache_write = rec.cache_write_tokens,
                                                     .reasoning = rec.reasoning_tokens});
  }
  return !held_.empty();
}

boost::asio::awaitable<void> Settlement::settleHeld(const routing::Pick* served, const RequestRecord& rec) {
  const std::int64_t tokens =
      std::max<std::int64_t>(rec.input_tokens, 0) + std::max<std::int64_t>(rec.output_tokens, 0);
  for (auto& h : held_) {
    const bool real = !h.channel || (served && h.channel == served->channel && (!h.key || h.key == served->key));
    const double cost = h.channel ? 0.0 : rec.cost_usd;
    co_await limiter_.settle(h.subject, h.charge, real ? tokens : 0, real ? cost : 0.0);
  }
  held_.clear();
}

boost::asio::awaitable<void> Settlement::releaseAll() {
  settled_ = true;
  for (auto& h : held_) co_await limiter_.settle(h.subject, h.charge, 0, 0.0);
  held_.clear();
}

}  // namespace sluice::gateway
