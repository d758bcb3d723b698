#include "gateway/ResponseHistory.hpp"

#include <boost/json/serialize.hpp>

#include <charconv>

#include "providers/UpstreamPath.hpp"

namespace sluice::gateway::history {

namespace json = boost::json;

namespace {

// An id for an error message: the client's text, cut and never anything a reader could
// mistake for markup (it is JSON-escaped by the serializer in any case).
std::string shown(std::string_view id) {
  if (validId(id)) return std::string(id);
  std::string out;
  for (char c : id.substr(0, 64)) out.push_back((std::isalnum(static_cast<unsigned char>(c)) != 0) ? c : '?');
  if (id.size() > 64) out += "...";
  return out;
}

std::string errorBody(const std::string& message, std::string_view param, std::string_view code) {
  json::object err{{"message", message}, {"type", "invalid_request_error"}};
  err["param"] = param.empty() ? json::value(nullptr) : json::value(param);
  err["code"] = code.empty() ? json::value(nullptr) : json::value(code);
  return json::serialize(json::object{{"error", std::move(err)}});
}

std::string_view idTail(std::string_view response_id) {
  if (response_id.starts_with("resp_")) response_id.remove_prefix(5);
  return response_id;
}

}  // namespace

bool validId(std::string_view id) {
  if (id.empty() || id.size() > kMaxIdLength) return false;
  for (char c : id) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
    if (!ok) return false;
  }
  return true;
}

std::optional<json::array> inputItems(const json::value* input) {
  json::array items;
  if (input == nullptr || input->is_null()) return items;
  if (input->is_string()) {
    json::array content{json::object{{"type", "input_text"}, {"text", input->as_string()}}};
    items.push_back(json::object{{"type", "message"}, {"role", "user"}, {"content", std::move(content)}});
    return items;
  }
  if (input->is_array()) return input->as_array();
  return std::nullopt;
}

Turn readTurn(const json::object& body, bool storing) {
  Turn t;
  const json::value* store = body.if_contains("store");
  // A store of another type is left for the codec (or OpenAI) to refuse: nothing is kept.
  t.keep = storing && (store == nullptr || store->is_null() || (store->is_bool() && store->as_bool()));
  if (const auto* prev = body.if_contains("previous_response_id"); prev && prev->is_string())
    t.previous = std::string(prev->as_string());
  t.own = inputItems(body.if_contains("input"));
  return t;
}

json::array chainedInput(const json::array& prev_input, const json::object& prev_response, const json::array& own) {
  json::array whole = prev_input;
  if (const auto* out = prev_response.if_contains("output"); out && out->is_array())
    for (const auto& item : out->as_array()) whole.push_back(item);
  for (const auto& item : own) whole.push_back(item);
  return whole;
}

void rewriteBody(json::object& body, const json::array* whole_input, bool keep) {
  if (whole_input != nullptr) {
    body.erase("previous_response_id");
    body["input"] = *whole_input;
  }
  if (keep) body["store"] = true;
}

void markStored(json::object& response, const std::optional<std::string>& previous) {
  response["store"] = true;
  if (previous) response["previous_response_id"] = *previous;
}

std::optional<ListQuery> parseListQuery(std::string_view query, std::string& error, std::string& param) {
  ListQuery q;
  while (!query.empty()) {
    const auto amp = query.find('&');
    std::string_view pair = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view{} : query.substr(amp + 1);
    if (pair.empty()) continue;
    const auto eq = pair.find('=');
    const std::string_view name = pair.substr(0, eq);
    const std::string raw = eq == std::string_view::npos ? std::string() : std::string(pair.substr(eq + 1));
    const std::string value = providers::percentDecode(raw).value_or(raw);
    if (name == "limit") {
      int n = 0;
      auto [p, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
      if (ec != std::errc{} || p != value.data() + value.size() || n < 1 || n > 100) {
        error = "limit must be an integer from 1 to 100";
        param = "limit";
        return std::nullopt;
      }
      q.limit = static_cast<std::size_t>(n);
    } else if (name == "order") {
      if (value != "asc" && value != "desc") {
        error = "order must be 'asc' or 'desc'";
        param = "order";
        return std::nullopt;
      }
      q.ascending = value == "asc";
    } else if (name == "after") {
      if (!value.empty() && !validId(value)) {
        error = "after must be an item id from this list";
        param = "after";
        return std::nullopt;
      }
      q.after = value;
    }
    // include[] and anything else: the stored items are listed whole.
  }
  return q;
}

json::object listPage(const json::array& items, std::string_view response_id, const ListQuery& q) {
  const std::size_t n = items.size();
  auto idAt = [&](std::size_t i) -> std::string {
    const auto& item = items[i];
    if (item.is_object())
      if (const auto* id = item.as_object().if_contains("id"); id && id->is_string() && !id->as_string().empty())
        return std::string(id->as_string());
    return "msg_" + std::string(idTail(response_id)) + "_" + std::to_string(i);
  };
  // Positions in the order asked for.
  auto at = [&](std::size_t k) { return q.ascending ? k : n - 1 - k; };
  std::size_t k = 0;
  if (!q.after.empty()) {
    while (k < n && idAt(at(k)) != q.after) ++k;
    k = k < n ? k + 1 : n;  // an unknown cursor lists nothing after it
  }
  json::array data;
  json::value first = nullptr, last = nullptr;
  for (; k < n && data.size() < q.limit; ++k) {
    const std::size_t i = at(k);
    std::string id = idAt(i);
    json::value item = items[i];
    if (item.is_object() && !item.as_object().contains("id")) item.as_object()["id"] = id;
    if (data.empty()) first = id;
    last = id;
    data.push_back(std::move(item));
  }
  json::object page{{"object", "list"}};
  page["data"] = std::move(data);
  page["first_id"] = std::move(first);
  page["last_id"] = std::move(last);
  page["has_more"] = k < n;
  return page;
}

std::string notFoundBody(std::string_view id) {
  return errorBody("Response with id '" + shown(id) + "' not found.", {}, {});
}

std::string previousNotFoundBody(std::string_view id) {
  return errorBody("Previous response with id '" + shown(id) + "' not found.", "previous_response_id",
                   "previous_response_not_found");
}

std::string deletedBody(std::string_view id) {
  return json::serialize(json::object{{"id", id}, {"object", "response"}, {"deleted", true}});
}

}  // namespace sluice::gateway::history
