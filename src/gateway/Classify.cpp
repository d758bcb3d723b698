#include "gateway/Classify.hpp"
#include "core/Ascii.hpp"

#include <boost/beast/core/string.hpp>

#include <algorithm>
#include <charconv>
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

// The rest of the OpenAI API, relayed as it is: the path under /v1, the methods it takes and
// how its body names the model. False: not one of these paths.
bool classifyPassthrough(std::string_view p, ClientCall& call) {
  struct Fixed {
    std::string_view path, methods;
    bool json, multipart;
  };
  static constexpr Fixed kFixed[] = {
      {"/moderations", "POST", true, false},        {"/images/generations", "POST", true, false},
      {"/images/edits", "POST", false, true},       {"/images/variations", "POST", false, true},
      {"/audio/speech", "POST", true, false},       {"/audio/transcriptions", "POST", false, true},
      {"/audio/translations", "POST", false, true}, {"/files", "GET POST", false, true},
      {"/batches", "GET POST", true, false},
  };
  if (!p.starts_with("/v1/")) return false;
  p.remove_prefix(3);
  for (const auto& f : kFixed) {
    if (p != f.path) continue;
    call.passthrough = true;
    call.op = std::string(p);
    call.methods = f.methods;
    call.json_body = f.json;
    call.multipart = f.multipart;
    return true;
  }
  // /files/{id}, /files/{id}/content, /batches/{id}, /batches/{id}/cancel
  for (std::string_view family : {"/files/", "/batches/"}) {
    if (!p.starts_with(family)) continue;
    std::string_view rest = p.substr(family.size());
    const auto slash = rest.find('/');
    const std::string_view id = rest.substr(0, slash);
    const std::string_view tail = slash == std::string_view::npos ? std::string_view() : rest.substr(slash);
    const bool files = family == "/files/";
    std::string_view methods;
    if (tail.empty())
      methods = files ? "GET DELETE" : "GET";
    else if (files && tail == "/content")
      methods = "GET";
    else if (!files && tail == "/cancel")
      methods = "POST";
    else
      return false;
    call.passthrough = true;
    call.methods = methods;
    call.json_body = !files;
    // An id that may not go upstream keeps its place in op for the 400 the route stage gives.
    call.object_id = std::string(id);
    call.op = std::string(p);
    return true;
  }
  return false;
}

}  // namespace

// A file or batch id as it may go into an upstream path: OpenAI's ids are "file-..." and
// "batch_..."; anything else is refused before it reaches a URL.
bool validObjectId(std::string_view id) {
  if (id.empty() || id.size() > 128) return false;
  return std::all_of(id.begin(), id.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
  });
}

bool streamsBody(const boost::beast::http::request_header<>& head) {
  namespace bhttp = boost::beast::http;
  if (head.method() != bhttp::verb::post) return false;
  std::string_view target = head.target();
  target = target.substr(0, target.find('?'));
  static constexpr std::string_view kUploads[] = {"/v1/images/edits", "/v1/images/variations", "/v1/audio/transcriptions",
                                                  "/v1/audio/translations", "/v1/files"};
  if (std::find(std::begin(kUploads), std::end(kUploads), target) == std::end(kUploads)) return false;
  const std::string_view type = head[bhttp::field::content_type];
  if (type.size() < 19 || !sluice::iequals(type.substr(0, 19), "multipart/form-data")) return false;
  const std::string_view cl = head[bhttp::field::content_length];
  if (cl.empty()) return !head[bhttp::field::transfer_encoding].empty();
  std::uint64_t n = 0;
  const auto [end, ec] = std::from_chars(cl.data(), cl.data() + cl.size(), n);
  return ec == std::errc() && end == cl.data() + cl.size() && n >= kStreamedBodyFrom;
}

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
  return call.wire == Wire::OpenAI && classifyPassthrough(p, call);
}

}  // namespace sluice::gateway
