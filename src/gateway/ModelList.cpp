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

}  // namespace sluice::gateway
