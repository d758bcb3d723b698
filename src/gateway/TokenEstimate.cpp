#include "gateway/TokenEstimate.hpp"

#include <boost/json/value.hpp>

#include <algorithm>

#include "core/JsonText.hpp"

namespace sluice::gateway {

namespace json = boost::json;

namespace {

constexpr std::int64_t kPerTurn = 3;
constexpr std::int64_t kPerInlineData = 1600;

struct Tally {
  std::int64_t text_bytes = 0;
  std::int64_t turns = 0;
  std::int64_t inline_data = 0;
};

// Iterative: the body may nest deeply (the gateway bounds it, this does not rely on that).
void tally(const json::value& root, Tally& t) {
  struct Item {
    const json::value* v;
    std::string_view key;
  };
  std::vector<Item> todo{{&root, {}}};
  while (!todo.empty()) {
    const Item it = todo.back();
    todo.pop_back();
    if (const auto* s = it.v->if_string()) {
      if (it.key == "data") {
        ++t.inline_data;
      } else if (it.key != "model" && it.key != "type" && it.key != "role" && it.key != "mime_type" &&
                 it.key != "mimeType" && it.key != "media_type") {
        t.text_bytes += static_cast<std::int64_t>(s->size());
      }
    } else if (const auto* o = it.v->if_object()) {
      if (o->contains("role")) ++t.turns;
      for (const auto& kv : *o) todo.push_back({&kv.value(), kv.key()});
    } else if (const auto* a = it.v->if_array()) {
      for (const auto& x : *a) todo.push_back({&x, it.key});
    }
  }
}

}  // namespace

std::optional<std::int64_t> estimateCountTokens(std::string_view body) {
  boost::system::error_code ec;
  const json::value v = sluice::parseJson(body, ec);
  if (ec || !v.is_object()) return std::nullopt;
  Tally t;
  tally(v, t);
  const std::int64_t n = (t.text_bytes + 3) / 4 + kPerTurn * t.turns + kPerInlineData * t.inline_data;
  return std::max<std::int64_t>(n, 1);
}

}  // namespace sluice::gateway
