#include "mock/MockService.hpp"

#include <fstream>
#include <sstream>

#include "providers/UpstreamPath.hpp"

#include "core/JsonText.hpp"
#include "mock/AnthropicMock.hpp"
#include "mock/BedrockMock.hpp"
#include "mock/GeminiMock.hpp"
#include "mock/OpenAIMock.hpp"
#include "mock/ResponsesMock.hpp"
#include "providers/UpstreamPath.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/json.hpp>

#include <ctime>

namespace sluice::mock {

namespace bhttp = http::bhttp;

namespace {

enum Endpoint : int {
  kNone,
  kHealth,
  kStats,
  kStatsReset,
  kOAuthRevoke,  // POST /mock/oauth/revoke[?refuse_new=1]: every issued Vertex/Entra token stops working
  kChat,
  kCompletions,
  kEmbeddings,
  kModels,
  kModel,
  kResponses,
  kAnthropicMessages,
  kAnthropicCountTokens,
  kAnthropicModels,
  kAnthropicModel,
  kGeminiModels,
  kGeminiModel,
  kGeminiGenerate,
  kGeminiStream,
  kGeminiCountTokens,
  kGeminiEmbed,
  kGeminiBatchEmbed,
  kBedrockConverse,
  kBedrockStream,
  kVertexAnthropic,        // :rawPredict
  kVertexAnthropicStream,  // :streamRawPredict
  kGoogleToken,            // POST /token (jwt-bearer)
  kEntraToken,             // POST /{tenant}/oauth2/v2.0/token
};

enum class Family { OpenAI, Anthropic, Gemini, Bedrock };

struct Route {
  Endpoint endpoint = kNone;
  bhttp::verb method = bhttp::verb::get;
  std::string_view model_id;  // kModel, kAnthropicModel, kGemini*; kEntraToken: the tenant
  Family family = Family::OpenAI;
  bool vertex = false;  // under /v1/projects/{p}/locations/{l}/publishers/: needs an issued bearer
};

bool startsWith(std::string_view s, std::string_view prefix) { return s.substr(0, prefix.size()) == prefix; }

// Gemini: [/gemini]/v1beta/models[/{model}[:{method}]] (and /gemini/v1/...).
Route geminiRoute(std::string_view rest) {
  Route none{kNone, bhttp::verb::get, {}, Family::Gemini};
  if (rest == "models") return {kGeminiModels, bhttp::verb::get, {}, Family::Gemini};
  if (!startsWith(rest, "models/") || rest.size() == 7) return none;
  rest.remove_prefix(7);
  const auto colon = rest.find(':');
  if (colon == std::string_view::npos) return {kGeminiModel, bhttp::verb::get, rest, Family::Gemini};
  const std::string_view model = rest.substr(0, colon), method = rest.substr(colon + 1);
  if (model.empty()) return none;
  Endpoint e = kNone;
  if (method == "generateContent") e = kGeminiGenerate;
  else if (method == "streamGenerateContent") e = kGeminiStream;
  else if (method == "countTokens") e = kGeminiCountTokens;
  else if (method == "embedContent") e = kGeminiEmbed;
  else if (method == "batchEmbedContents") e = kGeminiBatchEmbed;
  if (e == kNone) return none;
  return {e, bhttp::verb::post, model, Family::Gemini};
}

// Vertex AI: /v1/projects/{p}/locations/{l}/publishers/{google|anthropic}/models/{model}:{method}.
// Each of project, location and model is one segment; anything else is no route.
Route vertexRoute(std::string_view path) {
  Route none{kNone, bhttp::verb::post, {}, Family::Gemini, true};
  auto segment = [&path]() -> std::optional<std::string_view> {
    const auto slash = path.find('/');
    if (slash == 0 || slash == std::string_view::npos) return std::nullopt;
    std::string_view seg = path.substr(0, slash);
    path.remove_prefix(slash + 1);
    return seg;
  };
  path.remove_prefix(std::string_view("/v1/projects/").size());
  auto project = segment();
  if (!project || segment() != std::optional<std::string_view>("locations")) return none;
  auto location = segment();
  if (!location || segment() != std::optional<std::string_view>("publishers")) return none;
  auto publisher = segment();
  if (!publisher || segment() != std::optional<std::string_view>("models")) return none;
  // path is now "{model}:{method}", one segment
  const auto colon = path.rfind(':');
  if (colon == std::string_view::npos || colon == 0 || path.find('/') != std::string_view::npos) return none;
  const std::string_view model = path.substr(0, colon), method = path.substr(colon + 1);
  if (*publisher == "anthropic") {
    none.family = Family::Anthropic;
    if (method == "rawPredict") return {kVertexAnthropic, bhttp::verb::post, model, Family::Anthropic, true};
    if (method == "streamRawPredict") return {kVertexAnthropicStream, bhttp::verb::post, model, Family::Anthropic, true};
    return none;
  }
  if (*publisher != "google") return none;
  Endpoint e = kNone;
  if (method == "generateContent") e = kGeminiGenerate;
  else if (method == "streamGenerateContent") e = kGeminiStream;
  else if (method == "countTokens") e = kGeminiCountTokens;
  if (e == kNone) return none;
  return {e, bhttp::verb::post, model, Family::Gemini, true};
}

// One table of paths: OpenAI (/v1/...), Anthropic (/v1/messages, /anthropic/v1/...), Gemini
// (/v1beta/..., /gemini/v1beta/...).
Route route(std::string_view path) {
  if (startsWith(path, "/v1/projects/")) return vertexRoute(path);
  if (path == "/token") return {kGoogleToken, bhttp::verb::post, {}};
  if (static constexpr std::string_view kEntra = "/oauth2/v2.0/token"; path.ends_with(kEntra) && path.size() > kEntra.size() + 1) {
    const std::string_view tenant = path.substr(1, path.size() - kEntra.size() - 1);
    if (tenant.find('/') == std::string_view::npos) return {kEntraToken, bhttp::verb::post, tenant};
  }
  // Azure OpenAI: /openai/deployments/{deployment}/chat/completions?api-version=... is the
  // OpenAI API under a deployment prefix.
  if (startsWith(path, "/openai/deployments/")) {
    auto rest = path.substr(20);
    auto slash = rest.find('/');
    if (slash != std::string_view::npos && slash > 0) return route(rest.substr(slash));
    return {};
  }
  if (path == "/v1/chat/completions" || path == "/chat/completions") return {kChat, bhttp::verb::post, {}};
  if (path == "/v1/completions" || path == "/completions") return {kCompletions, bhttp::verb::post, {}};
  if (path == "/v1/embeddings" || path == "/embeddings") return {kEmbeddings, bhttp::verb::post, {}};
  if (path == "/v1/responses" || path == "/responses") return {kResponses, bhttp::verb::post, {}};
  if (path == "/v1/models" || path == "/models") return {kModels, bhttp::verb::get, {}};
  if (path == "/v1/messages") return {kAnthropicMessages, bhttp::verb::post, {}, Family::Anthropic};
  if (path == "/v1/messages/count_tokens") return {kAnthropicCountTokens, bhttp::verb::post, {}, Family::Anthropic};
  for (std::string_view prefix : {"/v1/models/", "/models/"})
    if (path.size() > prefix.size() && path.substr(0, prefix.size()) == prefix)
      return {kModel, bhttp::verb::get, path.substr(prefix.size())};
  if (startsWith(path, "/anthropic/")) {
    const std::string_view p = path.substr(10);
    if (p == "/v1/messages") return {kAnthropicMessages, bhttp::verb::post, {}, Family::Anthropic};
    if (p == "/v1/messages/count_tokens") return {kAnthropicCountTokens, bhttp::verb::post, {}, Family::Anthropic};
    if (p == "/v1/models") return {kAnthropicModels, bhttp::verb::get, {}, Family::Anthropic};
    if (p.size() > 11 && startsWith(p, "/v1/models/"))
      return {kAnthropicModel, bhttp::verb::get, p.substr(11), Family::Anthropic};
    return {kNone, bhttp::verb::get, {}, Family::Anthropic};
  }
  if (startsWith(path, "/v1beta/")) return geminiRoute(path.substr(8));
  if (startsWith(path, "/gemini/")) {
    const std::string_view p = path.substr(7);
    if (startsWith(p, "/v1beta/")) return geminiRoute(p.substr(8));
    if (startsWith(p, "/v1/")) return geminiRoute(p.substr(4));
    return {kNone, bhttp::verb::get, {}, Family::Gemini};
  }
  // Bedrock: /model/{modelId}/converse[-stream], the id one percent-encoded segment.
  if (startsWith(path, "/model/")) {
    const std::string_view p = path.substr(7);
    const auto slash = p.find('/');
    if (slash == std::string_view::npos || slash == 0) return {kNone, bhttp::verb::post, {}, Family::Bedrock};
    const std::string_view op = p.substr(slash);
    if (op == "/converse") return {kBedrockConverse, bhttp::verb::post, p.substr(0, slash), Family::Bedrock};
    if (op == "/converse-stream") return {kBedrockStream, bhttp::verb::post, p.substr(0, slash), Family::Bedrock};
    return {kNone, bhttp::verb::post, {}, Family::Bedrock};
  }
  if (path == "/healthz") return {kHealth, bhttp::verb::get, {}};
  if (path == "/mock/stats") return {kStats, bhttp::verb::get, {}};
  if (path == "/mock/reset") return {kStatsReset, bhttp::verb::post, {}};
  if (path == "/mock/oauth/revoke") return {kOAuthRevoke, bhttp::verb::post, {}};
  return {};
}

// The value of query parameter `name` in a request target, or nullopt.
std::optional<std::string_view> queryParam(std::string_view target, std::string_view name) {
  const auto q = target.find('?');
  if (q == std::string_view::npos) return std::nullopt;
  std::string_view rest = target.substr(q + 1);
  while (!rest.empty()) {
    const auto amp = rest.find('&');
    const std::string_view kv = rest.substr(0, amp);
    const auto eq = kv.find('=');
    if (kv.substr(0, eq) == name) return eq == std::string_view::npos ? std::string_view() : kv.substr(eq + 1);
    if (amp == std::string_view::npos) break;
    rest.remove_prefix(amp + 1);
  }
  return std::nullopt;
}

// A model-list page a client asked for: its size (the query's, capped by the x-mock-page-size
// knob so a test can make a provider paginate) and where it starts (decoded).
struct ListPage {
  std::size_t size = 1000;
  std::string token;
};
ListPage listPage(const http::Request& req, std::string_view size_param, std::string_view token_param) {
  ListPage p;
  if (auto v = queryParam(req.target(), size_param)) p.size = std::strtoul(std::string(*v).c_str(), nullptr, 10);
  if (auto cap = req["x-mock-page-size"]; !cap.empty())
    p.size = std::min<std::size_t>(p.size, std::strtoul(std::string(cap).c_str(), nullptr, 10));
  if (auto t = queryParam(req.target(), token_param)) p.token = providers::percentDecode(*t, true).value_or("");
  return p;
}

bool internal(Endpoint e) {
  return e == kHealth || e == kStats || e == kStatsReset || e == kOAuthRevoke;
}

std::int64_t unixNow() { return static_cast<std::int64_t>(std::time(nullptr)); }

net::awaitable<void> sleepMs(std::int64_t ms) {
  if (ms <= 0) co_return;
  net::steady_timer t(co_await net::this_coro::executor);
  t.expires_after(std::chrono::milliseconds(ms));
  co_await t.async_wait(net::as_tuple(net::use_awaitable));
}

http::Response makeResponse(int status, std::string body, std::string_view content_type,
                            std::string_view request_id) {
  http::Response res{static_cast<bhttp::status>(status), 11};
  if (status == 529) res.reason("Overloaded");  // Anthropic's; unknown to Beast
  res.set(bhttp::field::content_type, content_type);
  if (!request_id.empty()) res.set("x-request-id", request_id);
  res.body() = std::move(body);
  return res;
}

http::Response errorResponse(const ApiError& e, std::string_view request_id) {
  return makeResponse(e.status, openai::errorJson(e), "application/json", request_id);
}

// An error in the caller's wire format; Anthropic's carry the request id in `request-id` too.
http::Response familyError(Family f, const ApiError& e, std::string_view request_id) {
  if (f == Family::Anthropic) {
    auto res = makeResponse(e.status, anthropic::errorJson(e, request_id), "application/json", request_id);
    if (!request_id.empty()) res.set("request-id", request_id);
    return res;
  }
  if (f == Family::Gemini) return makeResponse(e.status, gemini::errorJson(e), "application/json; charset=UTF-8", request_id);
  if (f == Family::Bedrock) return bedrock::errorResponse(e, request_id);
  return errorResponse(e, request_id);
}

ApiError badRequest(Family f, std::string message) {
  if (f == Family::Anthropic) return anthropic::error(400, std::move(message));
  if (f == Family::Gemini) return gemini::error(400, std::move(message));
  if (f == Family::Bedrock) return bedrock::error(400, std::move(message));
  ApiError e;
  e.message = std::move(message);
  return e;
}

constexpr std::string_view kSseType = "text/event-stream; charset=utf-8";

constexpr std::size_t kBatchBytes = 256 * 1024;

// The in-band error events a provider sends after its 200 (the error-event knob): overload for
// fail_status 503 or 529, a rate limit for 429, a server error otherwise.
enum class Inband { Overloaded, RateLimited, ServerError };
Inband inbandKind(int status) {
  if (status == 503 || status == 529) return Inband::Overloaded;
  if (status == 429) return Inband::RateLimited;
  return Inband::ServerError;
}

std::function<std::string(std::size_t)> chatErrorEvent(int status) {
  return [kind = inbandKind(status)](std::size_t) {
    switch (kind) {
      case Inband::Overloaded:
        return std::string(
            R"(data: {"error":{"message":"The server is overloaded, please try again later.","type":"server_error","param":null,"code":"server_overloaded"}})"
            "\n\n");
      case Inband::RateLimited:
        return std::string(
            R"(data: {"error":{"message":"Rate limit reached for requests.","type":"rate_limit_error","param":null,"code":"rate_limit_exceeded"}})"
            "\n\n");
      case Inband::ServerError:
        break;
    }
    return std::string(
        R"(data: {"error":{"message":"The server had an error while processing your request.","type":"server_error","param":null,"code":null}})"
        "\n\n");
  };
}

std::function<std::string(std::size_t)> responsesErrorEvent(int status, std::size_t head_events, std::string id,
                                                             std::string model, std::int64_t created) {
  return [kind = inbandKind(status), head_events, id = std::move(id), model = std::move(model), created](std::size_t steps) {
    const char* code = kind == Inband::Overloaded    ? "server_is_overloaded"
                       : kind == Inband::RateLimited ? "rate_limit_exceeded"
                                                     : "server_error";
    const char* message = kind == Inband::Overloaded    ? "The server is overloaded, please try again later."
                          : kind == Inband::RateLimited ? "Rate limit reached for requests."
                                                        : "The server had an error while processing your request.";
    std::string out = "event: response.failed\ndata: {\"type\":\"response.failed\",\"sequence_number\":";
    out += std::to_string(head_events + steps);
    out += ",\"response\":{\"id\":";
    appendJsonString(out, id);
    out += ",\"object\":\"response\",\"created_at\":" + std::to_string(created);
    out += ",\"status\":\"failed\",\"error\":{\"code\":\"";
    out += code;
    out += "\",\"message\":\"";
    out += message;
    out += "\"},\"incomplete_details\":null,\"model\":";
    appendJsonString(out, model);
    out += ",\"output\":[],\"usage\":null}}\n\n";
    return out;
  };
}

std::function<std::string(std::size_t)> anthropicErrorEvent(int status, std::string request_id) {
  return [kind = inbandKind(status), request_id = std::move(request_id)](std::size_t) {
    std::string out = "event: error\ndata: {\"type\":\"error\",\"error\":";
    switch (kind) {
      case Inband::Overloaded: out += R"({"type":"overloaded_error","message":"Overloaded"})"; break;
      case Inband::RateLimited:
        out += R"({"type":"rate_limit_error","message":"Number of request tokens has exceeded your per-minute rate limit"})";
        break;
      case Inband::ServerError: out += R"({"type":"api_error","message":"Internal server error"})"; break;
    }
    out += ",\"request_id\":";
    appendJsonString(out, request_id);
    out += "}\n\n";
    return out;
  };
}

std::function<std::string(std::size_t)> geminiErrorEvent(int status, bool sse) {
  return [kind = inbandKind(status), sse](std::size_t steps) {
    std::string out = sse ? "data: " : steps > 0 ? ",\r\n" : "";
    switch (kind) {
      case Inband::Overloaded:
        out += R"({"error":{"code":503,"message":"The model is overloaded. Please try again later.","status":"UNAVAILABLE"}})";
        break;
      case Inband::RateLimited:
        out += R"({"error":{"code":429,"message":"Resource has been exhausted (e.g. check quota).","status":"RESOURCE_EXHAUSTED"}})";
        break;
      case Inband::ServerError:
        out += R"({"error":{"code":500,"message":"An internal error has occurred.","status":"INTERNAL"}})";
        break;
    }
    out += sse ? "\r\n\r\n" : "]";
    return out;
  };
}

// Holds a stalled stream's connection open, sending nothing, until the client closes it (its
// socket turns readable: EOF) or the longest knob delay has passed.
net::awaitable<void> holdOpen(http::Responder& r) {
  auto& sock = r.stream().socket();
  net::steady_timer limit(co_await net::this_coro::executor);
  limit.expires_after(std::chrono::milliseconds(kMaxKnobDelayMs));
  limit.async_wait([&sock](const boost::system::error_code& ec) {
    if (!ec) sock.cancel();
  });
  co_await sock.async_wait(net::socket_base::wait_read, net::as_tuple(net::use_awaitable));
  limit.cancel();
}

// Writes a stream: in one write when unpaced (the mock must not be the bottleneck),
// else one event per write with chunk_interval_ms before each content step. It ends after its
// content steps with its tail, or earlier, after the fewest steps one of these knobs names:
// reset_after (the connection breaks: no finish, no [DONE]), stall_after (nothing more is sent
// while the connection stays open) or error_event_after (the format's in-band error event, then
// the end of the response; -1 when this answer drew no error event).
net::awaitable<void> writeStream(http::Responder& r, const SseScript& s, const MockKnobs& k,
                                 std::string_view request_id, MockStats& stats,
                                 std::string_view content_type = kSseType, bool request_id_header = false) {
  std::string fields;
  fields.reserve(192);
  fields.append("Content-Type: ").append(content_type);
  fields.append("\r\nCache-Control: no-cache\r\nx-request-id: ");
  fields.append(request_id).append("\r\n");
  if (request_id_header) fields.append("request-id: ").append(request_id).append("\r\n");
  for (const auto& [n, v] : k.extra_headers) fields.append(n).append(": ").append(v).append("\r\n");
  if (!co_await r.beginStream(200, "OK", fields)) co_return;
  if (k.reset_after == 0) {  // the header, then the connection breaks: not one body byte
    co_await r.flushHeader();
    r.abort();
    co_return;
  }

  enum class End { Finish, Reset, Stall, Error };
  End end = End::Finish;
  std::size_t steps = s.content_count;
  auto earlier = [&](int at, End e) {
    if (at < 0 || static_cast<std::size_t>(at) > s.content_count) return;
    if (end == End::Finish || static_cast<std::size_t>(at) < steps) {
      steps = static_cast<std::size_t>(at);
      end = e;
    }
  };
  earlier(k.reset_after, End::Reset);
  if (k.stall_rate >= 1.0 || (k.stall_rate > 0.0 && randomUnit() < k.stall_rate)) earlier(k.stall_after, End::Stall);
  if (s.error_event) earlier(k.error_event_after, End::Error);
  // Every write reports whether the client (the gateway, in tests) is still there.
  auto done = [&](bool ok) {
    if (ok) stats.streamCompleted(); else stats.streamAborted();
  };

  std::string buf;
  if (k.chunk_interval_ms == 0) {
    buf.reserve(std::min<std::size_t>(kBatchBytes + 4096, 512 + (steps + 4) * 256));
    for (const auto& e : s.head) buf += e;
    for (std::size_t i = 0; i < steps; ++i) {
      s.content(i, buf);
      if (buf.size() >= kBatchBytes) {
        if (!co_await r.writeChunk(buf)) co_return done(false);
        buf.clear();
      }
    }
  } else {
    for (const auto& e : s.head)
      if (!co_await r.writeChunk(e)) co_return done(false);
    std::string ev;
    for (std::size_t i = 0; i < steps; ++i) {
      co_await sleepMs(k.chunk_interval_ms);
      ev.clear();
      s.content(i, ev);
      if (!co_await r.writeChunk(ev)) co_return done(false);
    }
  }
  switch (end) {
    case End::Finish:
      if (k.chunk_interval_ms == 0) {
        for (const auto& e : s.tail) buf += e;
        done(co_await r.writeLastChunk(buf));  // header, every event and the end: one write
        co_return;
      }
      for (std::size_t i = 0; i + 1 < s.tail.size(); ++i)
        if (!co_await r.writeChunk(s.tail[i])) co_return done(false);
      done(co_await r.writeLastChunk(s.tail.empty() ? std::string_view() : std::string_view(s.tail.back())));
      co_return;
    case End::Error:
      buf += s.error_event(steps);
      done(co_await r.writeLastChunk(buf));
      co_return;
    case End::Stall:
      if (!buf.empty() && !co_await r.writeChunk(buf)) co_return done(false);
      if (buf.empty()) co_await r.flushHeader();
      co_await holdOpen(r);
      break;
    case End::Reset:
      if (!buf.empty() && !co_await r.writeChunk(buf)) co_return done(false);
      break;
  }
  r.abort();  // reset or stall: no finish event, no [DONE], no terminating chunk
}

// A complete JSON answer, after the time a streamed one would have taken; with reset_after N
// (<= content steps) only the first N/steps of the body is sent before the connection breaks.
net::awaitable<void> writeAnswer(http::Responder& r, std::string body, std::size_t steps, const MockKnobs& k,
                                 std::string_view request_id, std::string_view content_type = "application/json",
                                 bool request_id_header = false) {
  const bool reset = k.reset_after >= 0 && static_cast<std::size_t>(k.reset_after) <= steps;
  const std::size_t paced = reset ? static_cast<std::size_t>(k.reset_after) : steps;
  co_await sleepMs(static_cast<std::int64_t>(k.chunk_interval_ms) * static_cast<std::int64_t>(paced));
  if (!reset) {
    http::Response res = makeResponse(200, std::move(body), content_type, request_id);
    if (request_id_header) res.set("request-id", request_id);
    for (const auto& [n, v] : k.extra_headers) res.set(n, v);
    co_await r.send(std::move(res));
    co_return;
  }
  const std::size_t cut = steps == 0 ? 0 : body.size() * static_cast<std::size_t>(k.reset_after) / steps;
  if (cut > 0) {
    std::string fields = "Content-Type: ";
    fields.append(content_type).append("\r\nx-request-id: ");
    fields.append(request_id).append("\r\n");
    if (request_id_header) fields.append("request-id: ").append(request_id).append("\r\n");
    if (co_await r.beginStream(200, "OK", fields)) co_await r.writeChunk(std::string_view(body).substr(0, cut));
  }
  r.abort();
}

}  // namespace

MockService::MockService(MockOptions options) : options_(std::move(options)) {
  if (options_.aws_keys.empty()) options_.aws_keys.emplace_back(bedrock::kDefaultAwsKey);
  for (const auto& k : options_.aws_keys)
    if (auto c = cloud::parseAwsKey(k)) aws_keys_.push_back(std::move(*c));
  std::vector<GoogleAccount> accounts;
  for (const auto& f : options_.google_accounts) {  // validateOptions read them once already
    std::ifstream in(f, std::ios::binary);
    std::stringstream text;
    text << in.rdbuf();
    if (auto a = googleAccountFromJson(text.str(), nullptr)) accounts.push_back(std::move(*a));
  }
  auto entra = options_.entra_clients;
  if (entra.empty()) entra.emplace_back("mock-client:mock-secret");
  oauth_ = std::make_unique<OAuthMock>(std::move(accounts), std::move(entra), options_.token_lifetime_s);
}

net::awaitable<void> MockService::handle(http::Request& req, http::Responder& r) {
  std::string_view target = req.target();
  const std::string path(target.substr(0, target.find('?')));
  Route rt = route(path);
  // GET /v1/models from an Anthropic client (anthropic-version header) lists Claude models.
  if ((rt.endpoint == kModels || rt.endpoint == kModel) && req.find("anthropic-version") != req.end()) {
    rt.endpoint = rt.endpoint == kModels ? kAnthropicModels : kAnthropicModel;
    rt.family = Family::Anthropic;
  }

  if (SubscriptionMock::handles(path)) {
    co_await r.send(subscriptions_.serve(req, path));
    co_return;
  }
  // ChatGPT's Codex endpoint speaks the Responses API to an OAuth bearer token.
  const bool codex = path == "/backend-api/codex/responses";
  if (codex) rt = Route{kResponses, bhttp::verb::post, {}};
  // An Anthropic request with a bearer token (no x-api-key) is a Claude subscription's.
  const bool claudeOAuth = rt.endpoint == kAnthropicMessages && req.find("x-api-key") == req.end() &&
                           req.find(bhttp::field::authorization) != req.end();

  if (!internal(rt.endpoint)) stats_.record(MockStats::sample(req));
  std::vector<std::pair<std::string, std::string>> usage;
  if ((codex || claudeOAuth) && req.method() == rt.method) {
    auto verdict = subscriptions_.check(req, claudeOAuth);
    if (verdict.refusal) {
      co_await r.send(std::move(*verdict.refusal));
      co_return;
    }
    usage = std::move(verdict.headers);
  }

  if (rt.endpoint == kNone && rt.family == Family::OpenAI && ResourcesMock::handles(path)) {
    co_await resources_.serve(req, r, path, options_.chunks);
    co_return;
  }
  if (rt.endpoint == kNone) {
    ApiError e = openai::unknownPathError(req.method_string(), path);
    if (rt.family == Family::Anthropic) e = anthropic::error(404, "Not found");
    if (rt.family == Family::Gemini) e = gemini::error(404, "Method not found: " + std::string(req.method_string()) + " " + path);
    if (rt.family == Family::Bedrock) e = bedrock::error(404, "The requested operation is not recognized by the service.");
    http::Response res = familyError(rt.family, e, {});
    co_await r.send(std::move(res));
    co_return;
  }
  if (req.method() != rt.method) {
    ApiError e = openai::methodNotAllowedError(req.method_string(), path, bhttp::to_string(rt.method));
    if (rt.family == Family::Anthropic) e = anthropic::error(405, e.message);
    if (rt.family == Family::Gemini) e = gemini::error(405, e.message);
    if (rt.family == Family::Bedrock) e = bedrock::error(405, e.message);
    auto res = familyError(rt.family, e, {});
    res.set(bhttp::field::allow, bhttp::to_string(rt.method));
    co_await r.send(std::move(res));
    co_return;
  }
  // The token endpoints answer OAuth JSON; Vertex (and Azure with a bearer) want an issued token.
  if (rt.endpoint == kGoogleToken || rt.endpoint == kEntraToken) {
    const OAuthMock::Answer a =
        rt.endpoint == kGoogleToken
            ? oauth_->google(req.body(), "http://" + std::string(req[bhttp::field::host]) + "/token", unixNow())
            : oauth_->entra(rt.model_id, req.body(), unixNow());
    stats_.tokenRequest(a.status != 200);
    http::Response res = makeResponse(a.status, a.body, "application/json", {});
    res.set(bhttp::field::cache_control, "no-store");
    co_await r.send(std::move(res));
    co_return;
  }
  const bool azureBearer = startsWith(path, "/openai/deployments/") && req.find(bhttp::field::authorization) != req.end();
  if ((rt.vertex || azureBearer) &&
      !oauth_->validBearer(req[bhttp::field::authorization], unixNow())) {
    // Google answers a missing or unknown token in its own format, whichever the publisher.
    http::Response res =
        rt.vertex ? familyError(Family::Gemini,
                                gemini::error(401, "Request had invalid authentication credentials. Expected OAuth 2 "
                                                   "access token, login cookie or other valid authentication credential."),
                                {})
                  : familyError(Family::OpenAI, openai::simulatedFailure(401), {});
    res.set(bhttp::field::www_authenticate, "Bearer realm=\"mock\"");
    stats_.bearerRefused();
    co_await r.send(std::move(res));
    co_return;
  }
  switch (rt.endpoint) {
    case kHealth:
      co_await r.send(makeResponse(200, "ok", "text/plain", {}));
      co_return;
    case kStats:
      co_await r.send(makeResponse(200, stats_.toJson(), "application/json", {}));
      co_return;
    case kStatsReset:
      stats_.reset();
      co_await r.send(makeResponse(200, "{\"ok\":true}", "application/json", {}));
      co_return;
    case kOAuthRevoke:
      co_await r.send(makeResponse(
          200, "{\"revoked\":" + std::to_string(oauth_->revokeAll(queryParam(target, "refuse_new") == "1")) + "}",
          "application/json", {}));
      co_return;
    default:
      break;
  }
  co_await serve(rt.endpoint, static_cast<int>(rt.family), rt.model_id, req, r, usage);
}

net::awaitable<void> MockService::serve(int endpoint, int family_id, std::string_view model_id, http::Request& req,
                                        http::Responder& r,
                                        const std::vector<std::pair<std::string, std::string>>& extra_headers) {
  const Family family = static_cast<Family>(family_id);
  const bool anth = family == Family::Anthropic;
  const std::string request_id = randomId("req_", anth ? 24 : 32);

  // Bedrock checks the signature before anything else: a request that fails it learns nothing more.
  if (family == Family::Bedrock) {
    if (auto refused = bedrock::verifySignature(req, aws_keys_, unixNow())) {
      co_await r.send(bedrock::errorResponse(*refused, request_id));
      co_return;
    }
  }
  MockKnobs k = MockKnobs::fromOptions(options_);
  k.extra_headers = extra_headers;
  if (auto bad = applyKnobHeaders(req, k)) {
    ApiError e = badRequest(family, "Invalid mock knob: " + *bad + ".");
    e.code = "invalid_mock_header";
    http::Response res = familyError(family, e, request_id);
    co_await r.send(std::move(res));
    co_return;
  }

  // Latency comes first: a slow upstream is slow to fail as well.
  const bool slow = k.slow_rate > 0.0 && (k.slow_rate >= 1.0 || randomUnit() < k.slow_rate);
  co_await sleepMs(slow ? k.slow_ms : k.ttfb_ms);
  // Whether this answer, if streamed, breaks with an in-band error event.
  if (!(k.error_event_rate > 0.0 && (k.error_event_rate >= 1.0 || randomUnit() < k.error_event_rate)))
    k.error_event_after = -1;

  const bool keyTargeted = !k.fail_key || MockStats::requestKey(req) == *k.fail_key;
  // x-mock-fail-key aims every fault at one key: a request made with another answers cleanly (so a
  // failover to another channel, which gets the same knob headers, is not failed too).
  if (!keyTargeted) k.error_event_after = k.reset_after = k.stall_after = -1;
  if (keyTargeted && k.fail_rate > 0.0 && (k.fail_rate >= 1.0 || randomUnit() < k.fail_rate)) {
    http::Response res;
    if (k.fail_body) {
      boost::system::error_code jec;
      sluice::parseJson(*k.fail_body, jec);
      res = makeResponse(k.fail_status, *k.fail_body, jec ? "text/plain" : "application/json", request_id);
      if (anth) res.set("request-id", request_id);
    } else {
      ApiError e = anth                        ? anthropic::simulatedFailure(k.fail_status)
                   : family == Family::Gemini  ? gemini::simulatedFailure(k.fail_status)
                   : family == Family::Bedrock ? bedrock::simulatedFailure(k.fail_status)
                                               : openai::simulatedFailure(k.fail_status);
      // Real providers quote the key they were given in some errors ("Incorrect API key provided: sk-...").
      if (k.echo_key) e.message += " API key provided: " + MockStats::requestKey(req) + ".";
      res = familyError(family, e, request_id);
    }
    if (k.retry_after_s) res.set(bhttp::field::retry_after, std::to_string(*k.retry_after_s));
    co_await r.send(std::move(res));
    co_return;
  }
  const bool plain = endpoint == kModels || endpoint == kModel || endpoint == kEmbeddings ||
                     endpoint == kAnthropicModels || endpoint == kAnthropicModel || endpoint == kAnthropicCountTokens ||
                     endpoint == kGeminiModels || endpoint == kGeminiModel || endpoint == kGeminiCountTokens ||
                     endpoint == kGeminiEmbed || endpoint == kGeminiBatchEmbed;
  if (k.reset_after == 0 && plain) {  // "after 0 chunks" of a plain answer: not a single byte
    r.abort();
    co_return;
  }

  const std::string_view gjson = "application/json; charset=UTF-8";
  switch (endpoint) {
    case kModels: {
      http::Response res = makeResponse(200, openai::modelsJson(), "application/json", request_id);
      co_await r.send(std::move(res));
      co_return;
    }
    case kModel: {
      auto m = openai::modelJson(model_id);
      http::Response res = m ? makeResponse(200, std::move(*m), "application/json", request_id)
                             : errorResponse(openai::modelNotFoundError(model_id), request_id);
      co_await r.send(std::move(res));
      co_return;
    }
    case kAnthropicModels: {
      const auto page = listPage(req, "limit", "after_id");
      http::Response res =
          makeResponse(200, anthropic::modelsJson(page.size, page.token), "application/json", request_id);
      res.set("request-id", request_id);
      co_await r.send(std::move(res));
      co_return;
    }
    case kAnthropicModel: {
      auto m = anthropic::modelJson(model_id);
      http::Response res;
      if (m) {
        res = makeResponse(200, std::move(*m), "application/json", request_id);
        res.set("request-id", request_id);
      } else {
        res = familyError(family, anthropic::error(404, "model: " + std::string(model_id)), request_id);
      }
      co_await r.send(std::move(res));
      co_return;
    }
    case kGeminiModels: {
      const auto page = listPage(req, "pageSize", "pageToken");
      http::Response res = makeResponse(200, gemini::modelsJson(page.size, page.token), gjson, request_id);
      co_await r.send(std::move(res));
      co_return;
    }
    case kGeminiModel: {
      auto m = gemini::modelJson(model_id);
      http::Response res = m ? makeResponse(200, std::move(*m), gjson, request_id)
                             : familyError(family, gemini::modelNotFound(model_id), request_id);
      co_await r.send(std::move(res));
      co_return;
    }
    default:
      break;
  }

  boost::system::error_code ec;
  boost::json::value body = sluice::parseJson(req.body(), ec);
  if (ec) {
    ApiError e = openai::invalidJsonError(ec.message());
    if (anth) e = anthropic::error(400, "There was an error parsing the body of your request: " + ec.message());
    if (family == Family::Gemini) e = gemini::error(400, "Invalid JSON payload received. " + ec.message());
    if (family == Family::Bedrock) e = bedrock::error(400, "Malformed input request, please reformat your input and try again.");
    http::Response res = familyError(family, e, request_id);
    co_await r.send(std::move(res));
    co_return;
  }
  const std::int64_t created = unixNow();
  const auto chunks = static_cast<std::size_t>(k.chunks);
  const auto piece_bytes = static_cast<std::size_t>(k.piece_bytes);

  switch (endpoint) {
    case kChat: {
      openai::ChatRequest cr;
      if (auto e = openai::parseChatRequest(body, cr)) {
        co_await r.send(errorResponse(*e, request_id));
        co_return;
      }
      if (k.echo) echoUserText(cr.tools);
      Generation gen = planAnswer(cr.tools, chunks, cr.max_tokens, cr.stop, cr.n);
      gen.piece_bytes = piece_bytes;
      gen.extra = k.usage;
      openai::ResponseMeta m{randomId("chatcmpl-", 29), created};
      if (cr.stream) {
        SseScript script = openai::chatCompletionStream(cr, gen, m);
        script.error_event = chatErrorEvent(k.fail_status);
        co_await writeStream(r, script, k, request_id, stats_);
      } else {
        co_await writeAnswer(r, openai::chatCompletionJson(cr, gen, m), gen.pieces, k, request_id);
      }
      co_return;
    }
    case kCompletions: {
      openai::CompletionRequest cr;
      if (auto e = openai::parseCompletionRequest(body, cr)) {
        co_await r.send(errorResponse(*e, request_id));
        co_return;
      }
      Generation gen = planGeneration(chunks, cr.max_tokens, cr.stop, cr.choices);
      gen.piece_bytes = piece_bytes;
      gen.extra = k.usage;
      openai::ResponseMeta m{randomId("cmpl-", 29), created};
      if (cr.stream) {
        SseScript script = openai::completionStream(cr, gen, m);
        script.error_event = chatErrorEvent(k.fail_status);
        co_await writeStream(r, script, k, request_id, stats_);
      } else
        co_await writeAnswer(r, openai::completionJson(cr, gen, m), gen.pieces, k, request_id);
      co_return;
    }
    case kEmbeddings: {
      openai::EmbeddingsRequest er;
      if (auto e = openai::parseEmbeddingsRequest(body, er)) {
        co_await r.send(errorResponse(*e, request_id));
        co_return;
      }
      co_await r.send(makeResponse(200, openai::embeddingsJson(er), "application/json", request_id));
      co_return;
    }
    case kResponses: {
      responses::ResponsesRequest rr;
      if (auto e = responses::parseResponsesRequest(body, rr)) {
        http::Response res = errorResponse(*e, request_id);
        co_await r.send(std::move(res));
        co_return;
      }
      if (k.echo) echoUserText(rr.tools);
      Generation gen = planAnswer(rr.tools, chunks, rr.max_output_tokens, {}, 1);
      gen.piece_bytes = piece_bytes;
      gen.extra = k.usage;
      responses::ResponseMeta m{randomId("resp_", 48), created, randomId("msg_", 48)};
      if (rr.stream) {
        SseScript script = responses::responseStream(rr, gen, m);
        script.error_event = responsesErrorEvent(k.fail_status, script.head.size(), m.id, rr.model, created);
        co_await writeStream(r, script, k, request_id, stats_);
      } else {
        std::string answer = responses::responseJson(rr, gen, m);
        co_await writeAnswer(r, std::move(answer), gen.pieces, k, request_id);
      }
      co_return;
    }
    case kVertexAnthropic:
    case kVertexAnthropicStream: {
      // Claude on Vertex: the model is the URL's, the version a body field; then a Messages call.
      std::string bad;
      if (!body.is_object()) {
        bad = "the body must be a JSON object";
      } else if (const auto* v = body.as_object().if_contains("anthropic_version");
                 !v || !v->is_string() || v->get_string() != "vertex-2023-10-16") {
        bad = "anthropic_version: Input should be 'vertex-2023-10-16'";
      } else if (body.as_object().contains("model")) {
        bad = "model: Extra inputs are not permitted";
      }
      if (!bad.empty()) {
        co_await r.send(familyError(family, anthropic::error(400, bad), request_id));
        co_return;
      }
      body.as_object().erase("anthropic_version");
      body.as_object()["model"] = providers::percentDecode(model_id).value_or(std::string(model_id));
      if (endpoint == kVertexAnthropicStream) body.as_object()["stream"] = true;
      [[fallthrough]];
    }
    case kAnthropicMessages: {
      anthropic::MessagesRequest mr;
      if (auto e = anthropic::parseMessagesRequest(body, mr)) {
        http::Response res = familyError(family, *e, request_id);
        co_await r.send(std::move(res));
        co_return;
      }
      if (k.echo) echoUserText(mr.tools);
      Generation gen = planAnswer(mr.tools, chunks, mr.max_tokens, mr.stop, 1);
      gen.piece_bytes = piece_bytes;
      gen.extra = k.usage;
      const std::string id = randomId("msg_01", 22);
      if (mr.stream) {
        SseScript script = anthropic::messageStream(mr, gen, id);
        script.error_event = anthropicErrorEvent(k.fail_status, request_id);
        co_await writeStream(r, script, k, request_id, stats_, kSseType, true);
      } else {
        std::string answer = anthropic::messageJson(mr, gen, id);
        co_await writeAnswer(r, std::move(answer), gen.pieces, k, request_id, "application/json", true);
      }
      co_return;
    }
    case kAnthropicCountTokens: {
      std::int64_t tokens = 0;
      http::Response res;
      if (auto e = anthropic::parseCountTokensRequest(body, tokens)) {
        res = familyError(family, *e, request_id);
      } else {
        res = makeResponse(200, anthropic::countTokensJson(tokens), "application/json", request_id);
        res.set("request-id", request_id);
      }
      co_await r.send(std::move(res));
      co_return;
    }
    case kGeminiGenerate:
    case kGeminiStream: {
      gemini::GenerateRequest gr;
      if (auto e = gemini::parseGenerateRequest(body, model_id, gr)) {
        http::Response res = familyError(family, *e, request_id);
        co_await r.send(std::move(res));
        co_return;
      }
      if (k.echo) echoUserText(gr.tools);
      Generation gen = planAnswer(gr.tools, chunks, gr.max_tokens, gr.stop, gr.candidates);
      gen.piece_bytes = piece_bytes;
      gen.extra = k.usage;
      const std::string response_id = randomId("", 22);
      if (endpoint == kGeminiStream) {
        const bool sse = queryParam(req.target(), "alt") == std::optional<std::string_view>("sse");
        SseScript script = gemini::generateStream(gr, gen, response_id, sse);
        script.error_event = geminiErrorEvent(k.fail_status, sse);
        co_await writeStream(r, script, k, request_id, stats_, sse ? std::string_view("text/event-stream") : gjson);
      } else {
        std::string answer = gemini::generateJson(gr, gen, response_id);
        co_await writeAnswer(r, std::move(answer), gen.pieces, k, request_id, gjson);
      }
      co_return;
    }
    case kGeminiCountTokens: {
      std::int64_t tokens = 0;
      http::Response res;
      if (auto e = gemini::parseCountTokensRequest(body, tokens))
        res = familyError(family, *e, request_id);
      else
        res = makeResponse(200, gemini::countTokensJson(tokens), gjson, request_id);
      co_await r.send(std::move(res));
      co_return;
    }
    case kGeminiEmbed:
    case kGeminiBatchEmbed: {
      const bool batch = endpoint == kGeminiBatchEmbed;
      gemini::EmbedRequest er;
      http::Response res;
      if (auto e = gemini::parseEmbedRequest(body, batch, er))
        res = familyError(family, *e, request_id);
      else
        res = makeResponse(200, gemini::embedJson(er, batch), gjson, request_id);
      co_await r.send(std::move(res));
      co_return;
    }
    case kBedrockConverse:
    case kBedrockStream: {
      bedrock::ConverseRequest cr;
      const auto model = providers::percentDecode(model_id).value_or(std::string(model_id));
      if (auto e = bedrock::parseConverseRequest(body, model, cr)) {
        co_await r.send(bedrock::errorResponse(*e, request_id));
        co_return;
      }
      if (k.echo) echoUserText(cr.tools);
      Generation gen = planAnswer(cr.tools, chunks, cr.max_tokens, cr.stop, 1);
      gen.piece_bytes = piece_bytes;
      gen.extra = k.usage;
      if (endpoint == kBedrockStream) {
        SseScript script = bedrock::converseStream(cr, gen);
        script.error_event = [status = k.fail_status](std::size_t) { return bedrock::exceptionFrame(status); };
        co_await writeStream(r, script, k, request_id, stats_, "application/vnd.amazon.eventstream");
      } else {
        co_await writeAnswer(r, bedrock::converseJson(cr, gen), gen.pieces, k, request_id);
      }
      co_return;
    }
    default: {
      http::Response res = errorResponse(openai::unknownPathError(req.method_string(), req.target()), request_id);
      co_await r.send(std::move(res));
    }
  }
}

}  // namespace sluice::mock
