#include "providers/anthropic/VertexBody.hpp"

#include <boost/json.hpp>

#include "core/JsonText.hpp"

namespace sluice::providers::anthropic {

std::optional<std::string> vertexMessagesBody(std::string_view body) {
  boost::system::error_code ec;
  boost::json::value v = sluice::parseJson(body, ec);
  if (ec || !v.is_object()) return std::nullopt;
  auto& o = v.get_object();
  o.erase("model");
  if (auto* av = o.if_contains("anthropic_version"); !av || !av->is_string())
    o["anthropic_version"] = kVertexAnthropicVersion;
  return boost::json::serialize(o);
}

}  // namespace sluice::providers::anthropic
