#include "providers/UpstreamPath.hpp"

#include <boost/url/encode.hpp>
#include <boost/url/pct_string_view.hpp>
#include <boost/url/rfc/unreserved_chars.hpp>
#include <fmt/format.h>

#include "routing/ModelName.hpp"

namespace sluice::providers {

namespace urls = boost::urls;

namespace {

bool pathCarriesModel(config::ChannelType type) {
  return type == config::ChannelType::Gemini || type == config::ChannelType::Azure ||
         type == config::ChannelType::Vertex;
}

// A Vertex model id as one segment: encoded as appendEncoded does, but '@' (Claude's version
// separator, "claude-sonnet-4@20250514", a pchar of RFC 3986) is left as Google's own clients send it.
void appendVertexModel(std::string& out, std::string_view model) {
  std::size_t from = 0;
  while (from <= model.size()) {
    const auto at = model.find('@', from);
    const std::string_view part = model.substr(from, at == std::string_view::npos ? std::string_view::npos : at - from);
    if (!part.empty()) urls::encode(part, urls::unreserved_chars, {}, urls::string_token::append_to(out));
    if (at == std::string_view::npos) break;
    out.push_back('@');
    from = at + 1;
  }
}

}  // namespace

void appendEncoded(std::string& out, std::string_view v) {
  // A segment of only dots would be read as "here" or "up one" after the server decodes it.
  if (v == "." || v == "..") {
    for (std::size_t i = 0; i < v.size(); ++i) out.append("%2E");
    return;
  }
  urls::encode(v, urls::unreserved_chars, {}, urls::string_token::append_to(out));
}

std::optional<std::string> percentDecode(std::string_view v, bool plus_is_space) {
  auto pct = urls::make_pct_string_view(v);
  if (!pct) return std::nullopt;
  urls::encoding_opts opt;
  opt.space_as_plus = plus_is_space;
  return pct->decode(opt);
}

std::string_view pathModel(config::ChannelType type, std::string_view model) {
  static constexpr std::string_view kGeminiPrefix = "models/";
  if (type == config::ChannelType::Gemini && model.starts_with(kGeminiPrefix))
    model.remove_prefix(kGeminiPrefix.size());
  return model;
}

std::optional<std::string> pathModelProblem(config::ChannelType type, std::string_view model) {
  if (!pathCarriesModel(type)) return std::nullopt;
  if (auto p = routing::modelNameProblem(model)) return p;
  const std::string_view seg = pathModel(type, model);
  if (seg.find('/') != std::string_view::npos)
    return fmt::format("holds a '/', and a {} channel puts the model in the URL path as one segment",
                       type == config::ChannelType::Gemini  ? "gemini (\"models/NAME\" aside)"
                       : type == config::ChannelType::Azure ? "azure"
                                                            : "vertex");
  if (type == config::ChannelType::Vertex) {
    if (seg.find(':') != std::string_view::npos)
      return std::string("holds a ':', which a vertex channel's URL reads as the method (\"MODEL:generateContent\")");
    if (seg == "." || seg == ".." || seg.find_first_not_of('@') == std::string_view::npos)
      return std::string("is not a model id a vertex URL can carry");
  }
  return std::nullopt;
}

bool vertexAnthropic(std::string_view model) { return model.starts_with("claude"); }

ForwardedQuery forwardQuery(std::string_view raw) {
  ForwardedQuery fq;
  auto decodePart = [&](std::string_view part, const char* what) -> std::optional<std::string> {
    auto d = percentDecode(part, /*plus_is_space=*/true);
    if (!d) {
      fq.problem = fmt::format("the query {} \"{}\" holds a '%' that is not followed by two hex digits", what,
                               routing::printableModelName(part));
      return std::nullopt;
    }
    for (char c : *d) {
      const auto u = static_cast<unsigned char>(c);
      if (u < 0x20 || u == 0x7F) {
        fq.problem = fmt::format("the query {} \"{}\" holds a control character 0x{:02X}", what,
                                 routing::printableModelName(part), u);
        return std::nullopt;
      }
    }
    return d;
  };
  std::size_t pos = 0;
  while (pos < raw.size()) {
    const auto amp = raw.find('&', pos);
    const std::string_view part = raw.substr(pos, amp == std::string_view::npos ? std::string_view::npos : amp - pos);
    pos = amp == std::string_view::npos ? raw.size() : amp + 1;
    if (part.empty()) continue;
    const auto eq = part.find('=');
    auto name = decodePart(part.substr(0, eq), "parameter");
    if (!name) return ForwardedQuery{{}, std::move(fq.problem)};
    std::optional<std::string> value;
    if (eq != std::string_view::npos) {
      value = decodePart(part.substr(eq + 1), "value");
      if (!value) return ForwardedQuery{{}, std::move(fq.problem)};
    }
    // The gateway's own key (Gemini style ?key=) is for the gateway, never for a provider.
    if (name->empty() || *name == "key") continue;
    if (!fq.query.empty()) fq.query.push_back('&');
    appendEncoded(fq.query, *name);
    if (value) {
      fq.query.push_back('=');
      appendEncoded(fq.query, *value);
    }
  }
  return fq;
}

std::string upstreamTarget(const TargetParts& t) {
  std::string out;
  out.reserve(t.base_path.size() + t.model.size() + 64);
  out.append(t.base_path);
  const bool azure = t.type == config::ChannelType::Azure;
  const std::string_view model = pathModel(t.type, t.model);
  // Azure: deployment URLs; the deployment is the (mapped) model name.
  if (azure) {
    out.append("/openai/deployments/");
    appendEncoded(out, model);
  }
  std::string_view query = t.translated ? std::string_view() : t.query;
  switch (t.type) {
    case config::ChannelType::Anthropic:
      out.append(t.translated ? std::string_view("/v1/messages") : t.op);
      break;
    case config::ChannelType::Gemini:
      out.append("/v1beta/models/");
      appendEncoded(out, model);
      out.push_back(':');
      if (t.translated) {
        out.append(t.stream ? "streamGenerateContent" : "generateContent");
        if (t.stream) query = "alt=sse";
      } else {
        out.append(t.op);
      }
      break;
    case config::ChannelType::Bedrock:
      // Always translated. The model id is one segment ("anthropic.claude-3-5-sonnet-20241022-v2:0"
      // goes as "...v2%3A0", an inference-profile ARN's '/' as %2F), as AWS's SDKs send it; SigV4
      // encodes the path once more to sign it (cloud/SigV4.hpp).
      out.append("/model/");
      appendEncoded(out, model);
      out.append(t.stream ? "/converse-stream" : "/converse");
      query = {};
      break;
    case config::ChannelType::Vertex: {
      out.append("/v1/projects/");
      appendEncoded(out, t.project);
      out.append("/locations/");
      appendEncoded(out, t.location);
      const bool anthropic = vertexAnthropic(model);
      out.append(anthropic ? "/publishers/anthropic/models/" : "/publishers/google/models/");
      appendVertexModel(out, model);
      out.push_back(':');
      if (anthropic) {
        // Anthropic Messages on Vertex: always these two methods, the stream chosen by the body.
        out.append(t.stream ? "streamRawPredict" : "rawPredict");
        query = {};
      } else if (t.translated) {
        out.append(t.stream ? "streamGenerateContent" : "generateContent");
        query = t.stream ? "alt=sse" : "";
      } else {
        out.append(t.op);
      }
      break;
    }
    default:
      out.append(!t.translated ? std::string_view(t.op)
                 : t.responses ? std::string_view("/responses")
                               : std::string_view("/chat/completions"));
      break;
  }
  if (azure) {
    out.append("?api-version=");
    appendEncoded(out, t.api_version.empty() ? std::string_view(config::kAzureApiVersion) : t.api_version);
  } else if (!query.empty()) {
    out.push_back('?');
    out.append(query);
  }
  return out;
}

}  // namespace sluice::providers
