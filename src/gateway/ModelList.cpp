#include "gateway/ModelList.hpp"

#include <boost/json/value.hpp>

#include <algorithm>

#include "core/JsonText.hpp"

namespace sluice::gateway {

namespace json = boost::json;

std::optional<std::vector<std::string>> parseModelList(bool gemini, std::string_view body,
                                                       const std::function<bool(std::string_view)>& serves,
                                                       std::string& why) {
  boost::system::error_code ec;
  const json::value v = sluice::parseJson(body, ec);
  const json::array* items = nullptr;
  if (!ec && v.is_object())
    if (const auto* a = v.as_object().if_contains(gemini ? "models" : "data"); a && a->is_array())
      items = &a->as_array();
  if (!items) {
    why = gemini ? "the model list has no \"models\" array" : "the model list has no \"data\" array";
    return std::nullopt;
  }
  std::vector<std::string> out;
  for (const auto& it : *items) {
    if (out.size() >= kMaxListedModels) break;
    const auto* o = it.if_object();
    const auto* id = o ? o->if_contains(gemini ? "name" : "id") : nullptr;
    if (!id || !id->is_string()) continue;
    std::string_view name = id->as_string();
    if (gemini && name.starts_with("models/")) name.remove_prefix(7);
    if (name.find_first_of(" \"") != std::string_view::npos) continue;
    // A provider's name reaches URLs and listings only when it is a model name a glob matches.
    if (!serves(name)) continue;
    out.emplace_back(name);
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::optional<std::string> nextPageToken(bool gemini, std::string_view body) {
  boost::system::error_code ec;
  const json::value v = sluice::parseJson(body, ec);
  if (ec || !v.is_object()) return std::nullopt;
  const auto& o = v.as_object();
  const json::value* token = nullptr;
  if (gemini) {
    token = o.if_contains("nextPageToken");
  } else if (const auto* more = o.if_contains("has_more"); more && more->is_bool() && more->as_bool()) {
    token = o.if_contains("last_id");
  }
  if (!token || !token->is_string() || token->as_string().empty() || token->as_string().size() > 1024)
    return std::nullopt;
  return std::string(token->as_string());
}

}  // namespace sluice::gateway
