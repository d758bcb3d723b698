// The upstream request target (providers/UpstreamPath) and the model-name rule
// (routing/ModelName) on arbitrary client values. Input: [type | translated<<3 | stream<<4 |
// base<<5] [op] then the model, a '\n', and the raw query. Invariants: the target has no byte
// outside 0x21..0x7E and no '#'; its one '?' is where the builder puts it; the path has exactly
// the segments the builder writes, the model is one of them and decodes back to itself; no
// segment is "." or ".."; the query is '&'-joined name[=value] pairs that decode to what the
// client sent (less its key). A name that passes the rule has none of the bytes it excludes.
#include <string>
#include <string_view>
#include <vector>

#include "FuzzUtil.hpp"
#include "providers/UpstreamPath.hpp"
#include "routing/ModelName.hpp"

namespace {

using sluice::config::ChannelType;
using sluice::fuzz::fail;
namespace providers = sluice::providers;
namespace routing = sluice::routing;

std::vector<std::string_view> split(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  std::size_t pos = 0;
  for (;;) {
    const auto at = s.find(sep, pos);
    out.push_back(s.substr(pos, at == std::string_view::npos ? std::string_view::npos : at - pos));
    if (at == std::string_view::npos) return out;
    pos = at + 1;
  }
}

void checkRule(std::string_view name) {
  if (routing::modelNameProblem(name)) return;
  if (name.empty() || name.size() > routing::kMaxModelNameBytes) fail("a name of a bad length passed", name);
  for (char ch : name) {
    const auto c = static_cast<unsigned char>(ch);
    if (c < 0x21 || c > 0x7E || ch == '?' || ch == '#' || ch == '%' || ch == '\\')
      fail("a forbidden byte passed", name);
  }
  for (auto seg : split(name, '/'))
    if (seg.empty() || seg == "." || seg == "..") fail("an empty or dot segment passed", name);
}

// The query the builder wrote decodes, pair by pair, to the client's (spaces for '+', key gone).
void checkQuery(std::string_view raw, std::string_view built) {
  std::vector<std::string> want;
  for (auto part : split(raw, '&')) {
    if (part.empty()) continue;
    const auto eq = part.find('=');
    auto name = providers::percentDecode(part.substr(0, eq), /*plus_is_space=*/true);
    if (!name) fail("forwardQuery accepted a bad escape", raw);
    if (name->empty() || *name == "key") continue;
    std::string pair = *name;
    if (eq != std::string::npos) {
      auto value = providers::percentDecode(part.substr(eq + 1), /*plus_is_space=*/true);
      if (!value) fail("forwardQuery accepted a bad escape", raw);
      pair += '=' + *value;
    }
    want.push_back(std::move(pair));
  }
  std::vector<std::string> got;
  if (!built.empty()) {
    for (auto part : split(built, '&')) {
      const auto eq = part.find('=');
      if (eq != std::string_view::npos && part.find('=', eq + 1) != std::string_view::npos)
        fail("a '=' in a query value", built);
      auto name = providers::percentDecode(part.substr(0, eq));
      if (!name || name->empty()) fail("a built query name does not decode", built);
      std::string pair = *name;
      if (eq != std::string_view::npos)
        pair += '=' + providers::percentDecode(part.substr(eq + 1))
                          .value_or(
                              "\x01"
                              "BAD");
      got.push_back(std::move(pair));
    }
  }
  if (got != want)
    fail("the forwarded query says something else than the client's", std::string(raw) + "\n" + std::string(built));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 2) return 0;
  static constexpr ChannelType kTypes[] = {ChannelType::OpenAI, ChannelType::Anthropic,        ChannelType::Gemini,
                                           ChannelType::Azure,  ChannelType::OpenAICompatible, ChannelType::Mock,
                                           ChannelType::Vertex};
  static constexpr std::string_view kBases[] = {"", "/v1", "/openai/v1", "/api/x"};
  const ChannelType type = kTypes[(data[0] & 7u) % 7];
  const bool translated = (data[0] >> 3) & 1u;
  const bool stream = (data[0] >> 4) & 1u;
  const std::string_view base = kBases[(data[0] >> 5) & 3u];
  const std::string_view rest(reinterpret_cast<const char*>(data) + 2, size - 2);
  const auto nl = rest.find('\n');
  const std::string_view model = rest.substr(0, nl);
  const std::string_view rawQuery = nl == std::string_view::npos ? std::string_view() : rest.substr(nl + 1);

  checkRule(model);
  {
    std::string enc;
    providers::appendEncoded(enc, model);
    if (providers::percentDecode(enc) != std::string(model)) fail("appendEncoded does not round-trip", model);
  }

  // The ops the gateway's route table hands over, per channel wire.
  std::string_view op;
  if (type == ChannelType::Gemini || (type == ChannelType::Vertex && !providers::vertexAnthropic(model))) {
    static constexpr std::string_view kOps[] = {"generateContent", "streamGenerateContent", "countTokens",
                                                "embedContent"};
    op = kOps[data[1] % 4];
  } else if (type == ChannelType::Anthropic || type == ChannelType::Vertex) {
    op = (data[1] & 1u) ? "/v1/messages/count_tokens" : "/v1/messages";
  } else {
    static constexpr std::string_view kOps[] = {"/chat/completions", "/embeddings", "/responses", "/completions"};
    op = kOps[data[1] % 4];
  }

  const providers::ForwardedQuery fq = providers::forwardQuery(rawQuery);
  if (!fq.problem.empty() && !fq.query.empty()) fail("a refused query still has text", fq.query);
  if (fq.problem.empty()) checkQuery(rawQuery, fq.query);
  const providers::TargetParts parts{base, type, "2024-10-21", translated, stream, op, model, fq.query, "my-project",
                                     "us-central1"};
  const std::string target = providers::upstreamTarget(parts);

  for (char ch : target) {
    const auto c = static_cast<unsigned char>(ch);
    if (c < 0x21 || c > 0x7E || ch == '#') fail("a byte in the target that no request line may hold", target);
  }
  const auto q = target.find('?');
  const std::string_view path = std::string_view(target).substr(0, q);
  const std::string_view query = q == std::string::npos ? std::string_view() : std::string_view(target).substr(q + 1);
  if (query.find('?') != std::string_view::npos) fail("a second '?'", target);
  for (auto seg : split(path, '/'))
    if (seg == "." || seg == "..") fail("a dot segment in the path", target);
  if (!path.starts_with(base)) fail("the base path was not kept", target);
  std::string_view tail = path.substr(base.size());

  const std::string_view pathModel = providers::pathModel(type, model);
  auto takeModelSegment = [&](std::string_view prefix, char end) {
    if (!tail.starts_with(prefix)) fail("the path does not start as the builder writes it", target);
    tail.remove_prefix(prefix.size());
    const auto stop = tail.find(end);
    if (stop == std::string_view::npos) fail("the model segment has no end", target);
    const std::string_view seg = tail.substr(0, stop);
    if (seg.find('/') != std::string_view::npos || seg.find(':') != std::string_view::npos)
      fail("the model is more than one segment", target);
    if (providers::percentDecode(seg) != std::string(pathModel))
      fail("the model segment decodes to another name", target);
    tail.remove_prefix(stop);
  };

  std::string_view wantQuery = translated ? std::string_view() : std::string_view(fq.query);
  switch (type) {
    case ChannelType::Gemini: {
      takeModelSegment("/v1beta/models/", ':');
      const std::string wantOp =
          ":" + std::string(translated ? (stream ? "streamGenerateContent" : "generateContent") : op);
      if (tail != wantOp) fail("the Gemini method is not the one asked for", target);
      if (translated && stream) wantQuery = "alt=sse";
      break;
    }
    case ChannelType::Vertex: {
      // The publisher and the method follow from the model; the model is one segment ('@' kept).
      const bool claude = providers::vertexAnthropic(model);
      takeModelSegment(claude ? "/v1/projects/my-project/locations/us-central1/publishers/anthropic/models/"
                              : "/v1/projects/my-project/locations/us-central1/publishers/google/models/",
                       ':');
      if (claude) {
        if (tail != (stream ? ":streamRawPredict" : ":rawPredict")) fail("the Vertex Anthropic method is wrong", target);
        wantQuery = {};
      } else {
        const std::string wantOp =
            ":" + std::string(translated ? (stream ? "streamGenerateContent" : "generateContent") : op);
        if (tail != wantOp) fail("the Vertex Gemini method is not the one asked for", target);
        if (translated && stream) wantQuery = "alt=sse";
      }
      break;
    }
    case ChannelType::Azure:
      takeModelSegment("/openai/deployments/", '/');
      if (tail != (translated ? "/chat/completions" : op)) fail("the Azure endpoint is not the one asked for", target);
      wantQuery = "api-version=2024-10-21";
      break;
    case ChannelType::Anthropic:
      if (tail != (translated ? "/v1/messages" : op)) fail("the Anthropic endpoint is not the one asked for", target);
      break;
    default:
      if (tail != (translated ? "/chat/completions" : op)) fail("the OpenAI endpoint is not the one asked for", target);
      break;
  }
  if (query != wantQuery) fail("the query is not the one the builder should put", target);
  if (wantQuery.empty() && q != std::string::npos) fail("a '?' with nothing after it", target);
  return 0;
}
