#include "gateway/Probe.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <ctime>
#include <optional>
#include <vector>

#include <fmt/format.h>
#include <boost/json/parse.hpp>
#include <boost/json/value.hpp>

#include "cloud/SigV4.hpp"
#include "gateway/CloudTokens.hpp"
#include "core/JsonText.hpp"
#include "gateway/ModelList.hpp"
#include "gateway/stages/Stages.hpp"
#include "providers/UpstreamPath.hpp"

namespace sluice::gateway {

namespace json = boost::json;
using Clock = std::chrono::steady_clock;

namespace {

// The pages of a provider's model list read in one discovery: 20 of 1000 models each.
constexpr int kMaxListPages = 20;

// The provider's model list: `whole` asks for as many entries as a page holds (discovery), else
// one (a probe).
// `page`: where the page starts (the provider's token from the page before), encoded here.
// Bedrock has no cheap authenticated GET on bedrock-runtime: a signed Converse of an empty
// conversation is refused before any model runs, with 400 ValidationException when the key is
// accepted and 403 when it is not (nothing is billed).
constexpr std::string_view kBedrockProbeBody = R"({"messages":[]})";

std::string bedrockProbe(const routing::Channel& ch, const routing::UpstreamKey& key) {
  std::string model = "amazon.nova-micro-v1:0";
  for (const auto& m : ch.cfg.models)
    if (m.find_first_of("*?") == std::string::npos) model = m;
  std::string target = ch.endpoint.base_path + "/model/";
  providers::appendEncoded(target, model);
  target += "/converse";
  std::string h = "POST " + target + " HTTP/1.1\r\nHost: " + ch.endpoint.host_header + "\r\n";
  if (auto creds = cloud::parseAwsKey(key.secret))
    h += signedHeaderLines(ch, *creds, target, kBedrockProbeBody, std::time(nullptr));
  h += "Content-Type: application/json\r\nAccept: application/json\r\nContent-Length: " +
       std::to_string(kBedrockProbeBody.size()) + "\r\n\r\n";
  h += kBedrockProbeBody;
  return h;
}

std::string probeHead(const routing::Channel& ch, const routing::UpstreamKey& key, bool whole = false,
                      std::string_view page = {}) {
  using config::ChannelType;
  if (ch.cfg.type == ChannelType::Bedrock) return bedrockProbe(ch, key);  // never a Bearer secret
  std::string path = ch.endpoint.base_path;
  std::string auth;
  switch (ch.cfg.type) {
    case ChannelType::Anthropic:
      path += whole ? "/v1/models?limit=1000" : "/v1/models?limit=1";
      if (!page.empty()) {
        path += "&after_id=";
        providers::appendEncoded(path, page);
      }
      auth = "x-api-key: " + key.secret + "\r\nanthropic-version: 2023-06-01\r\n";
      break;
    case ChannelType::Gemini:
      path += whole ? "/v1beta/models?pageSize=1000" : "/v1beta/models?pageSize=1";
      if (!page.empty()) {
        path += "&pageToken=";
        providers::appendEncoded(path, page);
      }
      auth = "x-goog-api-key: " + key.secret + "\r\n";
      break;
    case ChannelType::Azure:
      path += "/openai/models?api-version=" +
              (ch.cfg.api_version.empty() ? std::string(config::kAzureApiVersion) : ch.cfg.api_version);
      auth = "api-key: " + key.secret + "\r\n";
      break;
    default:
      path += "/models";
      if (!key.secret.empty()) auth = "Authorization: Bearer " + key.secret + "\r\n";
      break;
  }
  if (!ch.cfg.subscription.empty()) auth.clear();  // its key is a credential file, never a header
  std::string h = "GET " + path + " HTTP/1.1\r\nHost: " + ch.endpoint.host_header + "\r\n" + auth;
  for (const auto& [k, v] : ch.cfg.headers) h.append(k).append(": ").append(v).append("\r\n");
  h.append("Accept: application/json\r\n\r\n");
  return h;
}

std::string messageOf(std::string_view body) {
  boost::system::error_code ec;
  auto v = sluice::parseJson(body, ec);
  if (!ec && v.is_object()) {
    if (const auto* e = v.as_object().if_contains("error")) {
      if (e->is_object())
        if (const auto* m = e->as_object().if_contains("message"); m && m->is_string())
          return std::string(m->as_string());
      if (e->is_string()) return std::string(e->as_string());
    }
  }
  return std::string(body.substr(0, 200));
}

// One GET of the gateway's own on a fresh connection: its status (0: none) and body (bounded,
// secrets masked), or why it failed.
struct Fetched {
  int status = 0;
  std::string body;
  std::string failure;
};

boost::asio::awaitable<Fetched> fetch(upstream::Pool& pool, const routing::Channel& ch, const std::string& head,
                                      std::chrono::milliseconds timeout, std::size_t limit,
                                      const pipeline::SecretScrubber& scrubber) {
  Fetched out;
  auto [cec, conn] = co_await pool.acquire(ch.endpoint, timeout, false);
  if (cec) {
    out.failure = "connect failed: " + cec.message();
    co_return out;
  }
  auto ec = co_await conn->writeRaw(head, {}, timeout);
  upstream::ResponseParser parser;
  parser.body_limit(limit);
  if (!ec) ec = co_await conn->readHeader(parser, timeout);
  if (ec) {
    conn->close();
    out.failure = "no answer: " + ec.message();
    co_return out;
  }
  out.status = static_cast<int>(parser.get().result_int());
  while (!parser.is_done() && out.body.size() < limit) {
    auto [rec, got] = co_await conn->readBody(parser, timeout);
    out.body.append(got);
    if (rec) {
      if (out.status >= 200 && out.status < 300) out.failure = "the answer broke: " + rec.message();
      break;
    }
  }
  conn->close();
  scrubber.scrub(out.body);
  co_return out;
}

}  // namespace

boost::asio::awaitable<ProbeResult> probeKey(upstream::Pool& pool, const routing::Channel& ch,
                                             const routing::UpstreamKey& key, std::chrono::milliseconds timeout,
                                             const pipeline::SecretScrubber& scrubber) {
  ProbeResult out;
  const auto start = Clock::now();
  // A vertex or Entra key is as good as its token: the probe is the token exchange (a fresh
  // token when the one kept is near its end; the kept one otherwise).
  if (takesCloudToken(ch.cfg, key.secret)) {
    CloudToken tok;
    if (ch.cfg.type == config::ChannelType::Vertex)
      tok = co_await CloudTokens::instance().vertex(pool, key.secret, timeout);
    else
      tok = co_await CloudTokens::instance().entra(pool, ch.cfg, timeout);
    out.latency_ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
    out.ok = tok.ok();
    out.status = tok.ok() ? 200 : tok.refused ? 401 : 0;
    out.message = tok.ok() ? "the key works (an access token was issued)" : tok.error;
    scrubber.scrub(out.message);
    co_return out;
  }
  Fetched f = co_await fetch(pool, ch, probeHead(ch, key), timeout, 64 * 1024, scrubber);
  out.status = f.status;
  if (f.status == 0) {
    out.message = std::move(f.failure);
    co_return out;
  }
  out.latency_ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
  out.ok = out.status >= 200 && out.status < 300;
  // Bedrock's probe is an empty conversation: a ValidationException means the signature was accepted.
  if (ch.cfg.type == config::ChannelType::Bedrock && out.status == 400) out.ok = true;
  out.message = out.ok ? "the key works" : fmt::format("upstream answered {}: {}", out.status, messageOf(f.body));
  co_return out;
}

boost::asio::awaitable<ModelListing> listModels(upstream::Pool& pool, const routing::Channel& ch,
                                                const routing::UpstreamKey& key, std::chrono::milliseconds timeout,
                                                const pipeline::SecretScrubber& scrubber) {
  ModelListing out;
  const bool gemini = ch.cfg.type == config::ChannelType::Gemini;
  std::vector<std::string> all;
  std::string page;
  std::vector<std::string> seen;  // the tokens followed: a provider that repeats one is not followed round
  // Pages until the provider says there is no next one, bounded (kMaxListPages pages, the model bound).
  for (int n = 0; n < kMaxListPages; ++n) {
    Fetched f = co_await fetch(pool, ch, probeHead(ch, key, true, page), timeout, 4u << 20, scrubber);
    if (f.status == 0 || !f.failure.empty()) {
      out.message = f.failure;
      co_return out;
    }
    if (f.status < 200 || f.status >= 300) {
      out.message = fmt::format("upstream answered {}: {}", f.status, messageOf(f.body));
      co_return out;
    }
    auto models = parseModelList(gemini, f.body, [&ch](std::string_view name) { return ch.servesModel(name); },
                                 out.message);
    if (!models) co_return out;
    all.insert(all.end(), models->begin(), models->end());
    // Only Gemini's and Anthropic's lists page; an OpenAI-style list is one answer.
    std::optional<std::string> next;
    if (gemini || ch.cfg.type == config::ChannelType::Anthropic) next = nextPageToken(gemini, f.body);
    if (!next || all.size() >= kMaxListedModels || std::find(seen.begin(), seen.end(), *next) != seen.end()) break;
    seen.push_back(*next);
    page = std::move(*next);
  }
  std::sort(all.begin(), all.end());
  all.erase(std::unique(all.begin(), all.end()), all.end());
  if (all.size() > kMaxListedModels) all.resize(kMaxListedModels);
  out.models = std::move(all);
  out.message.clear();
  out.ok = true;
  co_return out;
}

void applyProbe(const routing::Channel& ch, const routing::UpstreamKey& k, const ProbeResult& pr) {
  auto& h = *k.health;
  if (h.manual.load()) return;
  if (pr.ok) {
    if (h.disabled.load() || h.cooldown_until_ms.load() > routing::nowMs()) {
      spdlog::info("upstream key {} of channel {}: probe succeeded; back in rotation", k.id, ch.cfg.name);
      h.enable();
    }
  } else if (pr.key_rejected() && !h.disabled.load()) {
    h.disable("probe: " + pr.message);
  }
}

}  // namespace sluice::gateway
