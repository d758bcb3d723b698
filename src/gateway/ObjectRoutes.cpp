#include "gateway/ObjectRoutes.hpp"

#include <boost/json/value.hpp>

#include "core/JsonText.hpp"
#include "gateway/Classify.hpp"

namespace sluice::gateway {

namespace json = boost::json;

void ObjectRoutes::remember(std::string_view id, std::string_view channel) {
  if (!validObjectId(id)) return;  // only what may go into a path is ever looked up
  std::lock_guard lock(mu_);
  auto [it, fresh] = by_id_.try_emplace(std::string(id), channel);
  if (!fresh) {
    it->second = channel;
    return;
  }
  order_.emplace_back(id);
  while (order_.size() > capacity_) {
    by_id_.erase(order_.front());
    order_.pop_front();
  }
}

std::optional<std::string> ObjectRoutes::channelOf(std::string_view id) const {
  std::lock_guard lock(mu_);
  auto it = by_id_.find(std::string(id));
  if (it == by_id_.end()) return std::nullopt;
  return it->second;
}

void ObjectRoutes::forget(std::string_view id) {
  std::lock_guard lock(mu_);
  by_id_.erase(std::string(id));  // its place in order_ goes when the bound reaches it
}

std::size_t ObjectRoutes::size() const {
  std::lock_guard lock(mu_);
  return by_id_.size();
}

void ObjectRoutes::learnFrom(std::string_view body, std::string_view channel) {
  boost::system::error_code ec;
  json::value v = sluice::parseJson(body, ec);
  if (ec || !v.is_object()) return;
  auto one = [&](const json::object& o) {
    for (std::string_view k : {"id", "input_file_id", "output_file_id", "error_file_id"})
      if (const auto* id = o.if_contains(k); id && id->is_string()) remember(id->as_string(), channel);
  };
  const auto& o = v.as_object();
  if (const auto* data = o.if_contains("data"); data && data->is_array()) {
    for (const auto& item : data->as_array())
      if (item.is_object()) one(item.as_object());
    return;  // a list's own fields (first_id, last_id) name its items
  }
  one(o);
}

}  // namespace sluice::gateway
