// Exchange: one request's shared context, which the stages of the chain (gateway/Stage.hpp)
// read and fill in, in order. Kept small and explicit: what the gateway gives (the snapshot,
// the services, the request, the responder, the ids, the record), then one part per stage that
// writes it: the caller (auth), the route (route), the limits held (limits; settled by the relay
// or at completion), the protect scan (scan), and the plan for the answer's way back (the
// protect-and-save stages write it, the relay reads it).
#pragma once
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "cache/Recorder.hpp"
#include "cache/ResponseCache.hpp"
#include "cluster/Limiter.hpp"
#include "gateway/Settlement.hpp"
#include "gateway/Stage.hpp"
#include "gateway/Wire.hpp"
#include "http/Server.hpp"
#include "pipeline/KeyTable.hpp"
#include "pipeline/Protect.hpp"
#include "providers/Translate.hpp"
#include "routing/Router.hpp"
#include "upstream/Client.hpp"

namespace sluice::redact {
class TokenCipher;
class SealMemo;
struct RestoreStats;
}  // namespace sluice::redact

namespace sluice::guard {
struct WebhookTarget;
}

namespace sluice::telemetry {
class Tracer;
class RequestTrace;
}  // namespace sluice::telemetry

namespace sluice::gateway {

class ObjectRoutes;

struct Snapshot;
struct ParsedBody;
class ResponseStoreService;
class SubscriptionService;

// Who is calling: the master key (vk == nullptr) or a virtual key of the snapshot's table.
struct Caller {
  const pipeline::VirtualKeyEntry* vk = nullptr;
};

struct RequestContext {
  std::string id;
  std::chrono::steady_clock::time_point start;
  std::string path;   // without the query
  std::string query;  // without '?'
  std::string remote;
};

// The outcome a finished request leaves for the access log and metrics.
struct RequestRecord {
  std::string channel;
  std::string key_id;
  std::string model;
  int status = 0;
  int attempts = 0;
  double ttfb_ms = -1;
  double duration_ms = 0;
  std::int64_t input_tokens = -1;
  std::int64_t output_tokens = -1;
  std::int64_t cached_tokens = 0;       // of input_tokens, read from a prompt cache
  std::int64_t cache_write_tokens = 0;  // of input_tokens, written to a prompt cache
  std::int64_t reasoning_tokens = 0;    // of output_tokens, spent on reasoning
  bool stream = false;
  std::string error;
  // JSON array, one object per upstream attempt: {"channel","key","status","error"}.
  std::string attempts_json = "[]";
  // JSON array, one object per screened part: {"part":"user"|"tool","path","score","flagged"}
  // (empty when nothing was screened).
  std::string screening;
  std::optional<std::int64_t> virtual_key_id;
  double cost_usd = 0;
  std::string request_body;   // only when store.log_bodies (capped; after redaction)
  std::string response_body;  // idem
};

// The translation format of a wire (OpenAI's is Chat; the Responses API is the client's choice).
providers::Format chatFormat(Wire w);

// What a client asked for, as the gateway saw it in the path.
struct ClientCall {
  Wire wire = Wire::OpenAI;
  // OpenAI: the path under /v1 ("/chat/completions"); Anthropic: "/v1/messages" or
  // "/v1/messages/count_tokens"; Gemini: the method ("generateContent", "streamGenerateContent"...).
  std::string op;
  std::string model;         // Gemini: from the path (the body has none)
  std::string query;         // Gemini: the query to pass on (the client's key= removed); set by the route stage
  bool models_list = false;  // GET /v1/models (or the Gemini and Anthropic equivalents)
  // The rest of the OpenAI API (images, audio, moderations, files, batches): relayed as it is to
  // an OpenAI-format channel. `op` is then the whole path under /v1, ids included
  // ("/files/file-abc/content"); `methods` the methods it takes ("GET DELETE").
  bool passthrough = false;
  std::string_view methods;
  std::string object_id;   // the file or batch the path names: its channel is remembered
  bool json_body = false;  // a JSON body that may name the model
  bool multipart = false;  // a multipart/form-data body whose `model` part names it
  // /v1/responses/{id} (GET, DELETE) and /v1/responses/{id}/input_items (GET): the id as the
  // path gave it (the responses stage checks it), and which of the two.
  std::string stored_id;
  bool stored_items = false;

  bool responses() const { return wire == Wire::OpenAI && op == "/responses"; }
  bool storedResponse() const { return wire == Wire::OpenAI && op == "/responses/{id}"; }
  // The client's format for translation.
  providers::Format format() const;
  // A chat-style request: translatable to any channel, and what the protect stages apply to.
  bool translatable() const;
};

// What the request path needs from a request body (gateway/BodyFacts.hpp reads it).
struct BodyFacts {
  std::string model;
  bool stream = false;
  bool asked_usage = false;  // stream_options.include_usage: true
  bool has_stream_options = false;
  std::int64_t max_tokens = 0;  // the output cap the client set (0: none), for estimates
  std::string error;            // non-empty: a 400 with this message
  std::string error_code;
};

// The services a request may use, all owned by the gateway.
struct Services {
  upstream::Pool& pool;
  cluster::Limiter& limiter;
  cache::ResponseCache* cache = nullptr;      // null: no response cache
  telemetry::Tracer* tracer = nullptr;        // null: no tracing (tests)
  ResponseStoreService* responses = nullptr;  // null: no stored responses (tests)
  ObjectRoutes* objects = nullptr;            // null: files and batches route without memory (tests)
  SubscriptionService* subscriptions = nullptr;  // null: subscription channels cannot serve (tests)
};

// What the route stage decided: the model, the channels that may serve it, and the facts of the
// body that the later stages and the relay use.
struct Route {
  Route();
  ~Route();
  Route(const Route&) = delete;
  Route& operator=(const Route&) = delete;

  BodyFacts facts;
  std::string routed_model;                         // after aliases and CHANNEL/ pinning
  std::string upstream_model;                       // what the current (last) attempt asked its channel for (the relay)
  std::vector<const routing::Channel*> candidates;  // in preference order; never empty once routed
  bool inject_usage = false;                        // OpenAI chat streams: the gateway asks for usage itself
  std::int64_t est_tokens = 0;                      // what the limits charge up front
  std::unique_ptr<ParsedBody> parsed;               // the body as inspectBody parsed it, for the scan stage
  // A streamed upload (Responder::body): the first bytes, read ahead for the model field; the
  // relay sends them, then the rest as it arrives.
  std::string body_prefix;
};

// The one parse of the body the protect stages share (the scan stage makes it).
struct ProtectScan {
  config::ScreenAction screen = config::ScreenAction::Off;  // what the screening stage does
  bool redacting = false;
  const guard::WebhookTarget* webhook = nullptr;  // the guardrail's, when it reviews this request
  pipeline::RequestScan scan;
  std::shared_ptr<const redact::TokenCipher> cipher;  // redaction's, for this caller's scope
  std::shared_ptr<redact::SealMemo> memo;             // the tokens this request sealed
};

// What every answer carries and how the relay must bring it back, decided by the stages before
// the relay (what a stage does to the answer itself is its own response hooks' work).
struct AnswerPlan {
  // The caller's x-ratelimit-* figures (the limits stage); when set they replace the provider's.
  std::vector<std::pair<std::string, std::string>> rate_headers;
  // Headers the protect stages add to every answer (screening, guardrail, cache).
  std::vector<std::pair<std::string, std::string>> headers;
  // Redaction issued tokens for this request: answers are restored with this cipher (by the
  // redaction stage's response hooks, and by the cache stage's replay of a hit).
  std::shared_ptr<const redact::TokenCipher> restore_cipher;
  std::shared_ptr<redact::RestoreStats> restore_stats;
  std::shared_ptr<const redact::SealMemo> restore_memo;
  // Responses clients are answered from a Chat translation (even by an openai channel) when the
  // answer must be restored or recorded: neither has a decoder for the native Responses stream.
  bool force_translate = false;

  // The caller's x-ratelimit-* figures and the protect stages' headers, on any answer.
  void apply(boost::beast::http::fields& to) const;
  void appendLines(std::string& out) const;
  bool ownRateHeader(std::string_view name) const;
};

struct Exchange {
  Exchange(const Snapshot& snap, Services svc, http::Request& req, http::Responder& r, const RequestContext& ctx,
           ClientCall& call, RequestRecord& rec);

  const Snapshot& snap;  // in force when the request arrived, to its end
  Services svc;
  http::Request& req;
  http::Responder& r;
  const RequestContext& ctx;
  ClientCall& call;
  RequestRecord& rec;

  StartedStages started;     // the chain (runChain): the stages this request started, in order
  Caller caller;             // auth
  Route route;               // route
  Settlement settle;         // limits (and the relay's channel and key quotas)
  ProtectScan protect;       // scan
  AnswerPlan answer;         // screening, redaction, guardrail, cache, limits
  std::size_t body_cap = 0;  // store.log_bodies: keep this much of the response for the log
  // The trace stage's, while the request is traced (null otherwise): the stages and the relay
  // add their spans to it where they spend time (telemetry::ScopedSpan).
  telemetry::RequestTrace* trace = nullptr;

  // An error answer in the caller's format, noted in the record, with the answer plan's headers.
  http::Response failure(int status, std::string_view type, std::string_view code, const std::string& msg) const;
  // A Gemini client of streamGenerateContent without alt=sse reads one JSON array.
  bool geminiJsonArray() const;
  // store.log_bodies: keeps the start of the answer for the log.
  void keepBody(std::string_view bytes);
};

// An error answer in the caller's format, noted in the request's record (no plan headers).
http::Response failure(Wire wire, const RequestContext& ctx, RequestRecord& rec, int status, std::string_view type,
                       std::string_view code, const std::string& msg);

}  // namespace sluice::gateway
