#include "gateway/ResponseChain.hpp"

#include <boost/json/object.hpp>
#include <boost/json/serialize.hpp>

#include <ctime>
#include <random>

#include "core/JsonText.hpp"

namespace sluice::gateway {

namespace json = boost::json;

namespace {

std::string randomHex(std::size_t n) {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  static constexpr char kHex[] = "0123456789abcdef";
  std::string s(n, '0');
  for (auto& c : s) c = kHex[rng() & 15u];
  return s;
}

}  // namespace

std::string ResponseChain::errorMessage(int status, std::string_view type, std::string_view code,
                                        std::string_view message, std::string_view param) {
  json::object err{{"type", type}, {"code", code}, {"message", message}};
  err["param"] = param.empty() ? json::value(nullptr) : json::value(param);
  json::object msg{{"type", "error"}, {"status", status}, {"error", std::move(err)}};
  return json::serialize(msg);
}

const ResponseChain::Kept* ResponseChain::find(std::string_view id) const {
  for (const auto& k : kept_)
    if (k.id == id) return &k;
  return nullptr;
}

ResponseChain::Turn ResponseChain::prepare(std::string_view message) const {
  Turn t;
  boost::system::error_code ec;
  json::value v = sluice::parseJson(message, ec);
  if (ec || !v.is_object()) {
    t.error = errorMessage(400, "invalid_request_error", "invalid_json", "the message is not a JSON object");
    return t;
  }
  json::object& o = v.as_object();
  const auto* type = o.if_contains("type");
  if (!type || !type->is_string()) {
    t.error = errorMessage(400, "invalid_request_error", "missing_required_parameter",
                           "the message has no type; send {\"type\":\"response.create\", ...}", "type");
    return t;
  }
  if (type->as_string() != "response.create") {
    t.error = errorMessage(400, "invalid_request_error", "unsupported_event_type",
                           "'" + std::string(type->as_string()) + "' is not supported; send response.create", "type");
    return t;
  }
  if (const auto* bg = o.if_contains("background"); bg && bg->is_bool() && bg->as_bool()) {
    t.error = errorMessage(400, "invalid_request_error", "unsupported_parameter",
                           "background is not supported over WebSocket", "background");
    return t;
  }
  if (const auto* m = o.if_contains("model"); m && m->is_string()) t.model = std::string(m->as_string());

  // The turn's whole input: what it chains from, then its own items.
  if (const auto* prev = o.if_contains("previous_response_id"); prev && !prev->is_null()) {
    if (!prev->is_string()) {
      t.error = errorMessage(400, "invalid_request_error", "invalid_type", "previous_response_id must be a string",
                             "previous_response_id");
      return t;
    }
    const Kept* k = find(prev->as_string());
    if (k) {
      t.items = k->items;
    } else {
      // Not one of this socket's: the POST path looks it up in the gateway's stored responses
      // (and answers previous_response_not_found when they hold none of this key's).
      t.from_store = true;
    }
  }
  auto append = [&](const json::value& item) {
    if (!t.items.empty()) t.items.push_back(',');
    t.items += json::serialize(item);
  };
  if (const auto* in = o.if_contains("input")) {
    if (in->is_string()) {
      append(json::object{{"type", "message"}, {"role", "user"}, {"content", in->as_string()}});
    } else if (in->is_array()) {
      for (const auto& item : in->as_array()) append(item);
    } else if (!in->is_null()) {
      t.error =
          errorMessage(400, "invalid_request_error", "invalid_type", "input must be a string or an array", "input");
      return t;
    }
  }
  if (const auto* g = o.if_contains("generate"); g && g->is_bool() && !g->as_bool()) {
    t.warmup = true;
    return t;
  }
  o.erase("type");
  o.erase("generate");
  o.erase("stream_options");
  o.erase("input");
  o["stream"] = true;
  // previous_response_id stays for the POST path when it names none of this socket's responses.
  if (!t.from_store) o.erase("previous_response_id");
  // The object always serializes to "{...}" with at least stream in it: input goes before the
  // closing brace, spliced as text.
  t.body = json::serialize(o);
  t.body.pop_back();
  t.body.append(",\"input\":[").append(t.items).append("]}");
  return t;
}

void ResponseChain::keep(std::string id, std::string items, const json::array& output) {
  for (const auto& item : output) {
    if (!items.empty()) items.push_back(',');
    items += json::serialize(item);
  }
  Kept k{std::move(id), std::move(items)};
  if (k.items.size() > o_.kept_bytes) return;  // too large to keep: a later turn sends the whole input
  for (auto it = kept_.begin(); it != kept_.end(); ++it) {
    if (it->id == k.id) {
      bytes_ -= it->items.size();
      kept_.erase(it);
      break;
    }
  }
  bytes_ += k.items.size();
  kept_.push_back(std::move(k));
  while (!kept_.empty() && (kept_.size() > o_.kept_responses || bytes_ > o_.kept_bytes)) {
    bytes_ -= kept_.front().items.size();
    kept_.pop_front();
  }
}

std::vector<std::string> ResponseChain::warmup(Turn& turn) {
  const std::string id = "resp_" + randomHex(32);
  json::object resp{{"id", id},
                    {"object", "response"},
                    {"created_at", static_cast<std::int64_t>(std::time(nullptr))},
                    {"status", "in_progress"},
                    {"model", turn.model},
                    {"output", json::array{}},
                    {"usage", nullptr}};
  std::vector<std::string> events;
  events.push_back(
      json::serialize(json::object{{"type", "response.created"}, {"sequence_number", 0}, {"response", resp}}));
  resp["status"] = "completed";
  resp["usage"] = json::object{{"input_tokens", 0},
                               {"input_tokens_details", json::object{{"cached_tokens", 0}}},
                               {"output_tokens", 0},
                               {"output_tokens_details", json::object{{"reasoning_tokens", 0}}},
                               {"total_tokens", 0}};
  events.push_back(
      json::serialize(json::object{{"type", "response.completed"}, {"sequence_number", 1}, {"response", resp}}));
  keep(id, std::move(turn.items), {});
  return events;
}

}  // namespace sluice::gateway
