#include "gateway/Classify.hpp"

#include <algorithm>
#include <iterator>
#include <string_view>

#include "providers/UpstreamPath.hpp"

namespace sluice::gateway {

namespace {

// OpenAI-format endpoints relayed to a channel as they are.
constexpr std::string_view kProxied[] = {"/v1/chat/completions", "/v1/completions", "/v1/embeddings", "/v1/responses"};
bool isProxied(std::string_view path) {
  return std::find(std::begin(kProxied), std::end(kProxied), path) != std::end(kProxied);
}

}  // namespace

bool classify(const std::string& path, const http::Request& req, ClientCall& call) {
  std::string_view p = path;
  if (p.starts_with("/anthropic/")) {
    call.wire = Wire::Anthropic;
    p.remove_prefix(10);
  } else if (p.starts_with("/gemini/")) {
    call.wire = Wire::Gemini;
    p.remove_prefix(7);
  }
  if (p.starts_with("/v1beta/")) call.wire = Wire::Gemini;
  if (p == "/v1/messages" || p == "/v1/messages/count_tokens") {
    call.wire = Wire::Anthropic;
    call.op = std::string(p);
    return true;
  }
  if (p == "/v1/models") {
    // Anthropic's SDK lists models at the same path; its version header tells them apart.
    if (!req["anthropic-version"].empty()) call.wire = Wire::Anthropic;
    call.models_list = call.wire != Wire::Gemini;
    return call.models_list;
  }
  if (call.wire == Wire::Gemini) {
    if (p == "/v1beta/models") {
      call.models_list = true;
      return true;
    }
    static constexpr std::string_view kModels = "/v1beta/models/";
    if (!p.starts_with(kModels)) return false;
    auto rest = p.substr(kModels.size());
    auto colon = rest.rfind(':');
    if (colon == std::string_view::npos || colon == 0) return false;
    // The model segment arrives percent-encoded (an SDK encodes it; ':' and '/' may be too).
    // A bad escape keeps its '%', which the model-name rule then refuses with a 400.
    const std::string_view rawModel = rest.substr(0, colon);
    call.model = providers::percentDecode(rawModel).value_or(std::string(rawModel));
    call.op = std::string(rest.substr(colon + 1));
    static constexpr std::string_view kOps[] = {"generateContent", "streamGenerateContent", "countTokens",
                                                "embedContent", "batchEmbedContents"};
    return std::find(std::begin(kOps), std::end(kOps), call.op) != std::end(kOps);
  }
  // A stored response: /v1/responses/{id} and /v1/responses/{id}/input_items (the id is checked
  // by the responses stage; a path with more segments is no endpoint).
  if (call.wire == Wire::OpenAI && p.starts_with("/v1/responses/")) {
    std::string_view rest = p.substr(14);
    static constexpr std::string_view kItems = "/input_items";
    if (rest.ends_with(kItems)) {
      rest.remove_suffix(kItems.size());
      call.stored_items = true;
    }
    if (rest.empty() || rest.find('/') != std::string_view::npos) return false;
    call.op = "/responses/{id}";
    call.stored_id = std::string(rest);
    return true;
  }
  if (call.wire == Wire::OpenAI && isProxied(p)) {
    call.op = std::string(p.substr(3));
    return true;
  }
  return false;
}

}  // namespace sluice::gateway
