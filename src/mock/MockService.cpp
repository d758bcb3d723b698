#include "mock/MockService.hpp"

#include "mock/OpenAIMock.hpp"

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
  kChat,
  kCompletions,
  kEmbeddings,
  kModels,
  kModel,
};

struct Route {
  Endpoint endpoint = kNone;
  bhttp::verb method = bhttp::verb::get;
  std::string_view model_id;  // kModel
};

// One table of paths. Anthropic (/v1/messages) and Gemini (/v1beta/models/...) go here too.
Route route(std::string_view path) {
  if (path == "/v1/chat/completions" || path == "/chat/completions") return {kChat, bhttp::verb::post, {}};
  if (path == "/v1/completions" || path == "/completions") return {kCompletions, bhttp::verb::post, {}};
  if (path == "/v1/embeddings" || path == "/embeddings") return {kEmbeddings, bhttp::verb::post, {}};
  if (path == "/v1/models" || path == "/models") return {kModels, bhttp::verb::get, {}};
  for (std::string_view prefix : {"/v1/models/", "/models/"})
    if (path.size() > prefix.size() && path.substr(0, prefix.size()) == prefix)
      return {kModel, bhttp::verb::get, path.substr(prefix.size())};
  if (path == "/healthz") return {kHealth, bhttp::verb::get, {}};
  if (path == "/mock/stats") return {kStats, bhttp::verb::get, {}};
  if (path == "/mock/reset") return {kStatsReset, bhttp::verb::post, {}};
  return {};
}

bool internal(Endpoint e) { return e == kHealth || e == kStats || e == kStatsReset; }

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
  res.set(bhttp::field::content_type, content_type);
  if (!request_id.empty()) res.set("x-request-id", request_id);
  res.body() = std::move(body);
  return res;
}

http::Response errorResponse(const ApiError& e, std::string_view request_id) {
  return makeResponse(e.status, openai::errorJson(e), "application/json", request_id);
}

constexpr std::size_t kBatchBytes = 256 * 1024;

// Writes a stream: in one write when unpaced (the mock must not be the bottleneck),
// else one event per write with chunk_interval_ms before each content step. With reset_after
// N (<= content steps), breaks the connection after N content steps: no finish, no [DONE].
net::awaitable<void> writeStream(http::Responder& r, const SseScript& s, const MockKnobs& k,
                                 std::string_view request_id, MockStats& stats) {
  std::string fields;
  fields.reserve(128);
  fields.append("Content-Type: text/event-stream; charset=utf-8\r\nCache-Control: no-cache\r\nx-request-id: ");
  fields.append(request_id).append("\r\n");
  if (!co_await r.beginStream(200, "OK", fields)) co_return;
  if (k.reset_after == 0) {  // the header, then the connection breaks: not one body byte
    co_await r.flushHeader();
    r.abort();
    co_return;
  }

  const bool reset = k.reset_after >= 0 && static_cast<std::size_t>(k.reset_after) <= s.content_count;
  const std::size_t steps = reset ? static_cast<std::size_t>(k.reset_after) : s.content_count;
  // Every write reports whether the client (the gateway, in tests) is still there.
  auto done = [&](bool ok) {
    if (ok) stats.streamCompleted(); else stats.streamAborted();
  };

  if (k.chunk_interval_ms == 0) {
    std::string buf;
    buf.reserve(std::min<std::size_t>(kBatchBytes + 4096, 512 + (steps + 4) * 256));
    for (const auto& e : s.head) buf += e;
    for (std::size_t i = 0; i < steps; ++i) {
      s.content(i, buf);
      if (buf.size() >= kBatchBytes) {
        if (!co_await r.writeChunk(buf)) co_return done(false);
        buf.clear();
      }
    }
    if (!reset) {
      for (const auto& e : s.tail) buf += e;
      done(co_await r.writeLastChunk(buf));  // header, every event and the end: one write
      co_return;
    }
    if (!buf.empty() && !co_await r.writeChunk(buf)) co_return done(false);
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
    if (!reset) {
      for (std::size_t i = 0; i + 1 < s.tail.size(); ++i)
        if (!co_await r.writeChunk(s.tail[i])) co_return done(false);
      done(co_await r.writeLastChunk(s.tail.empty() ? std::string_view() : std::string_view(s.tail.back())));
      co_return;
    }
  }
  r.abort();  // reset: no finish event, no [DONE], no terminating chunk
}

// A complete JSON answer, after the time a streamed one would have taken; with reset_after N
// (<= content steps) only the first N/steps of the body is sent before the connection breaks.
net::awaitable<void> writeAnswer(http::Responder& r, std::string body, std::size_t steps, const MockKnobs& k,
                                 std::string_view request_id) {
  const bool reset = k.reset_after >= 0 && static_cast<std::size_t>(k.reset_after) <= steps;
  const std::size_t paced = reset ? static_cast<std::size_t>(k.reset_after) : steps;
  co_await sleepMs(static_cast<std::int64_t>(k.chunk_interval_ms) * static_cast<std::int64_t>(paced));
  if (!reset) {
    co_await r.send(makeResponse(200, std::move(body), "application/json", request_id));
    co_return;
  }
  const std::size_t cut = steps == 0 ? 0 : body.size() * static_cast<std::size_t>(k.reset_after) / steps;
  if (cut > 0) {
    std::string fields = "Content-Type: application/json\r\nx-request-id: ";
    fields.append(request_id).append("\r\n");
    if (co_await r.beginStream(200, "OK", fields)) co_await r.writeChunk(std::string_view(body).substr(0, cut));
  }
  r.abort();
}

}  // namespace

net::awaitable<void> MockService::handle(http::Request& req, http::Responder& r) {
  std::string_view target = req.target();
  const std::string path(target.substr(0, target.find('?')));
  const Route rt = route(path);

  if (!internal(rt.endpoint)) stats_.record(MockStats::sample(req));

  if (rt.endpoint == kNone) {
    co_await r.send(errorResponse(openai::unknownPathError(req.method_string(), path), {}));
    co_return;
  }
  if (req.method() != rt.method) {
    auto res = errorResponse(openai::methodNotAllowedError(req.method_string(), path, bhttp::to_string(rt.method)), {});
    res.set(bhttp::field::allow, bhttp::to_string(rt.method));
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
    default:
      break;
  }
  co_await serveOpenAI(rt.endpoint, rt.model_id, req, r);
}

net::awaitable<void> MockService::serveOpenAI(int endpoint, std::string_view model_id, http::Request& req,
                                              http::Responder& r) {
  const std::string request_id = randomId("req_", 32);

  MockKnobs k = MockKnobs::fromOptions(options_);
  if (auto bad = applyKnobHeaders(req, k)) {
    ApiError e;
    e.message = "Invalid mock knob: " + *bad + ".";
    e.code = "invalid_mock_header";
    co_await r.send(errorResponse(e, request_id));
    co_return;
  }

  // Latency comes first: a slow upstream is slow to fail as well.
  co_await sleepMs(k.ttfb_ms);

  const bool keyTargeted = !k.fail_key || MockStats::requestKey(req) == *k.fail_key;
  if (keyTargeted && k.fail_rate > 0.0 && (k.fail_rate >= 1.0 || randomUnit() < k.fail_rate)) {
    http::Response res;
    if (k.fail_body) {
      boost::system::error_code jec;
      boost::json::parse(*k.fail_body, jec);
      res = makeResponse(k.fail_status, *k.fail_body, jec ? "text/plain" : "application/json", request_id);
    } else {
      res = errorResponse(openai::simulatedFailure(k.fail_status), request_id);
    }
    if (k.retry_after_s) res.set(bhttp::field::retry_after, std::to_string(*k.retry_after_s));
    co_await r.send(std::move(res));
    co_return;
  }
  if (k.reset_after == 0) {  // "after 0 chunks" of a plain answer: not a single byte
    if (endpoint == kModels || endpoint == kModel || endpoint == kEmbeddings) {
      r.abort();
      co_return;
    }
  }

  if (endpoint == kModels) {
    co_await r.send(makeResponse(200, openai::modelsJson(), "application/json", request_id));
    co_return;
  }
  if (endpoint == kModel) {
    if (auto m = openai::modelJson(model_id))
      co_await r.send(makeResponse(200, std::move(*m), "application/json", request_id));
    else
      co_await r.send(errorResponse(openai::modelNotFoundError(model_id), request_id));
    co_return;
  }

  boost::system::error_code ec;
  boost::json::value body = boost::json::parse(req.body(), ec);
  if (ec) {
    co_await r.send(errorResponse(openai::invalidJsonError(ec.message()), request_id));
    co_return;
  }
  const std::int64_t created = unixNow();

  switch (endpoint) {
    case kChat: {
      openai::ChatRequest cr;
      if (auto e = openai::parseChatRequest(body, cr)) {
        co_await r.send(errorResponse(*e, request_id));
        co_return;
      }
      Generation gen = planGeneration(static_cast<std::size_t>(k.chunks), cr.max_tokens, cr.stop, cr.n);
      gen.piece_bytes = static_cast<std::size_t>(k.piece_bytes);
      openai::ResponseMeta m{randomId("chatcmpl-", 29), created};
      if (cr.stream)
        co_await writeStream(r, openai::chatCompletionStream(cr, gen, m), k, request_id, stats_);
      else
        co_await writeAnswer(r, openai::chatCompletionJson(cr, gen, m), gen.pieces, k, request_id);
      co_return;
    }
    case kCompletions: {
      openai::CompletionRequest cr;
      if (auto e = openai::parseCompletionRequest(body, cr)) {
        co_await r.send(errorResponse(*e, request_id));
        co_return;
      }
      Generation gen = planGeneration(static_cast<std::size_t>(k.chunks), cr.max_tokens, cr.stop, cr.choices);
      gen.piece_bytes = static_cast<std::size_t>(k.piece_bytes);
      openai::ResponseMeta m{randomId("cmpl-", 29), created};
      if (cr.stream)
        co_await writeStream(r, openai::completionStream(cr, gen, m), k, request_id, stats_);
      else
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
    default:
      co_await r.send(errorResponse(openai::unknownPathError(req.method_string(), req.target()), request_id));
  }
}

}  // namespace sluice::mock
