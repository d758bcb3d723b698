#include "gateway/Proxy.hpp"

#include <boost/beast/http/field.hpp>
#include <boost/json/monotonic_resource.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/parser.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <optional>

#include <spdlog/spdlog.h>

#include "cache/Controls.hpp"
#include "cache/Recorder.hpp"
#include "cache/Replay.hpp"
#include "core/Clock.hpp"
#include "core/JsonText.hpp"
#include "gateway/StreamTaps.hpp"
#include "metrics/Metrics.hpp"
#include "pipeline/Protect.hpp"
#include "providers/Translate.hpp"
#include "providers/UpstreamPath.hpp"
#include "redact/Redactor.hpp"
#include "redact/Restorer.hpp"
#include "routing/ModelName.hpp"

namespace sluice::gateway {

namespace bhttp = boost::beast::http;
namespace json = boost::json;
using Clock = std::chrono::steady_clock;
using Millis = std::chrono::milliseconds;
using routing::Outcome;

namespace {

constexpr std::size_t kReadChunk = 16u * 1024;
constexpr std::size_t kMaxErrorBody = 64u * 1024;
constexpr std::size_t kMaxWholeBody = 64u << 20;

bool isHopByHop(std::string_view name) {
  static constexpr std::string_view kSkip[] = {"connection", "keep-alive", "proxy-connection", "proxy-authorization",
                                               "te", "trailer", "transfer-encoding", "upgrade", "content-length",
                                               "host"};
  return std::any_of(std::begin(kSkip), std::end(kSkip), [&](std::string_view s) { return boost::beast::iequals(s, name); });
}

// Client headers that must not reach the provider: our own credentials and controls, and
// encodings we would have to undo to read the stream.
bool dropTowardUpstream(std::string_view name) {
  if (isHopByHop(name)) return true;
  static constexpr std::string_view kDrop[] = {"authorization", "x-api-key", "x-goog-api-key", "accept-encoding",
                                               "cookie", "expect"};
  if (std::any_of(std::begin(kDrop), std::end(kDrop), [&](std::string_view s) { return boost::beast::iequals(s, name); }))
    return true;
  return name.size() >= 9 && boost::beast::iequals(name.substr(0, 9), "x-sluice-");
}

bool dropTowardClient(std::string_view name) {
  if (isHopByHop(name)) return true;
  static constexpr std::string_view kDrop[] = {"set-cookie", "server", "alt-svc", "date"};
  return std::any_of(std::begin(kDrop), std::end(kDrop), [&](std::string_view s) { return boost::beast::iequals(s, name); });
}

std::int64_t parseRetryAfterMs(const bhttp::fields& h) {
  if (auto ms = h["retry-after-ms"]; !ms.empty()) {
    try {
      return static_cast<std::int64_t>(std::stod(std::string(ms)));
    } catch (...) {
    }
  }
  auto ra = h[bhttp::field::retry_after];
  if (ra.empty()) return 0;
  try {
    std::size_t used = 0;
    double secs = std::stod(std::string(ra), &used);
    if (used == ra.size()) return static_cast<std::int64_t>(secs * 1000);
  } catch (...) {
  }
  // An HTTP-date: honour it roughly by parsing with the C library.
  struct tm tm {};
  if (strptime(std::string(ra).c_str(), "%a, %d %b %Y %H:%M:%S", &tm)) {
    auto when = timegm(&tm);
    auto delta = static_cast<std::int64_t>(when - time(nullptr));
    return delta > 0 ? delta * 1000 : 0;
  }
  return 0;
}

std::string errorMessageFromBody(std::string_view body) {
  boost::system::error_code ec;
  auto v = sluice::parseJson(body, ec);
  if (!ec && v.is_object()) {
    if (auto* e = v.as_object().if_contains("error")) {
      if (e->is_object()) {
        if (auto* m = e->as_object().if_contains("message"); m && m->is_string()) return std::string(m->as_string());
      } else if (e->is_string()) {
        return std::string(e->as_string());
      }
    }
    if (auto* m = v.as_object().if_contains("message"); m && m->is_string()) return std::string(m->as_string());
  }
  std::string s(body.substr(0, 200));
  std::replace(s.begin(), s.end(), '\n', ' ');
  return s;
}

// Header values of an error answer relayed from upstream, with the secrets masked.
void scrubFields(const pipeline::SecretScrubber& s, bhttp::fields& f) {
  if (s.empty()) return;
  std::vector<std::pair<std::string, std::string>> masked;
  for (auto it = f.begin(); it != f.end();) {
    if (s.contains(it->value())) {
      masked.emplace_back(std::string(it->name_string()), s.scrubbed(it->value()));
      it = f.erase(it);
    } else {
      ++it;
    }
  }
  for (const auto& [name, value] : masked) f.insert(name, value);
}

struct Deadline {
  Clock::time_point at;
  // The phase timeout, cut to what is left of the total; at least 1 ms so Beast arms a timer.
  Millis cap(Millis phase) const {
    auto left = std::chrono::duration_cast<Millis>(at - Clock::now());
    if (left < Millis(1)) left = Millis(1);
    return std::min(phase, left);
  }
  bool passed() const { return Clock::now() >= at; }
};

struct Attempt {
  Outcome outcome = Outcome::ChannelFailure;
  int status = 0;           // upstream status, or 0 when none was received
  bool timeout = false;
  std::int64_t retry_after_ms = 0;
  bool delivered = false;   // the client got a response (or left): stop trying
  double duration_ms = 0;   // from the pick to the end of the attempt (for the log)
  std::string why;          // one line for the per-attempt summary
};

double msSince(Clock::time_point t) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

// Byte offset -> "line L, column C" for JSON error messages.
std::string positionOf(std::string_view text, std::size_t offset) {
  std::size_t line = 1, col = 1;
  for (std::size_t i = 0; i < offset && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++line;
      col = 1;
    } else {
      ++col;
    }
  }
  return fmt::format("line {}, column {} (byte {})", line, col, offset);
}

// What the proxy needs from a request body, read in one parse. The parse uses a per-thread
// arena and ends before the caller's next suspension, so requests on one worker never share it.
struct BodyFacts {
  std::string model;
  bool stream = false;
  bool asked_usage = false;      // stream_options.include_usage: true
  bool has_stream_options = false;
  std::int64_t max_tokens = 0;   // the output cap the client set (0: none), for estimates
  std::string error;             // non-empty: a 400 with this message
  std::string error_code;
};

// keep (optional): the parsed body is moved there (parsed in keep's own storage), for the
// protect stages (pipeline::scanRequest) to use rather than parse the body again.
BodyFacts inspectBody(std::string_view text, const ClientCall& call, json::value* keep = nullptr) {
  BodyFacts f;
  auto bad = [&](std::string code, std::string msg) {
    f.error_code = std::move(code);
    f.error = std::move(msg);
    return f;
  };
  if (text.empty()) return bad("invalid_json", "request body is empty: send a JSON object with \"model\" and the request fields");
  thread_local unsigned char arena[16 * 1024];
  thread_local unsigned char scratch[4 * 1024];
  json::monotonic_resource mr(arena, sizeof arena);  // overflows to the heap for big bodies
  json::parser jp(json::storage_ptr(), jsonParseOptions(), scratch, sizeof scratch);
  jp.reset(keep != nullptr ? keep->storage() : json::storage_ptr(&mr));
  boost::system::error_code ec;
  std::size_t used = jp.write(text.data(), text.size(), ec);
  if (isTooDeep(ec)) return bad("invalid_json", tooDeepMessage("request body"));
  if (ec) return bad("invalid_json", fmt::format("request body is not valid JSON at {}: {}", positionOf(text, used), ec.message()));
  json::value parsed = jp.release();
  json::value& body = keep != nullptr ? (*keep = std::move(parsed)) : parsed;
  if (!body.is_object()) return bad("invalid_json", "request body must be a JSON object");
  const auto& obj = body.as_object();
  auto cap = [&](const json::value* v) {
    if (v && v->is_int64() && v->as_int64() > 0) f.max_tokens = v->as_int64();
    else if (v && v->is_uint64()) f.max_tokens = static_cast<std::int64_t>(std::min<std::uint64_t>(v->as_uint64(), INT64_MAX));
  };
  if (call.wire == Wire::Gemini) {
    // The model is in the path; streaming is the method.
    f.model = call.model;
    f.stream = call.op == "streamGenerateContent";
    if (const auto* gc = obj.if_contains("generationConfig"); gc && gc->is_object())
      cap(gc->as_object().if_contains("maxOutputTokens"));
    return f;
  }
  for (const char* name : {"max_tokens", "max_completion_tokens", "max_output_tokens"}) cap(obj.if_contains(name));
  const auto* modelV = obj.if_contains("model");
  if (!modelV || !modelV->is_string() || modelV->as_string().empty())
    return bad("missing_model", call.wire == Wire::Anthropic
                                    ? "\"model\" is required and must be a non-empty string, e.g. \"claude-sonnet-4-5\""
                                    : "\"model\" is required and must be a non-empty string, e.g. \"gpt-4o-mini\"");
  f.model = std::string(modelV->as_string());
  if (const auto* s = obj.if_contains("stream")) {
    if (!s->is_bool() && !s->is_null()) return bad("invalid_type", "\"stream\" must be true or false");
    f.stream = s->is_bool() && s->as_bool();
  }
  if (const auto* so = obj.if_contains("stream_options")) {
    f.has_stream_options = true;
    if (so->is_object())
      if (const auto* iu = so->as_object().if_contains("include_usage"); iu && iu->is_bool()) f.asked_usage = iu->as_bool();
  }
  return f;
}

// The body to send upstream when the model name or the usage option must change. The common
// case (only adding stream_options) is a splice after the opening brace; anything else is a
// parse, edit and serialize.
std::string rewriteBody(std::string_view text, const BodyFacts& facts, const std::string* new_model, bool inject_usage) {
  if (!new_model && inject_usage && !facts.has_stream_options) {
    auto brace = text.find('{');
    static constexpr std::string_view kAdd = "\"stream_options\":{\"include_usage\":true},";
    std::string out;
    out.reserve(text.size() + kAdd.size());
    out.append(text.substr(0, brace + 1)).append(kAdd).append(text.substr(brace + 1));
    return out;
  }
  // inspectBody parsed the same text with the same limit: this parse does not fail.
  boost::system::error_code ec;
  json::value body = sluice::parseJson(text, ec);
  auto& obj = body.as_object();
  if (new_model) obj["model"] = *new_model;
  if (inject_usage) {
    auto& so = obj["stream_options"];
    if (!so.is_object()) so = json::object{};
    so.as_object()["include_usage"] = true;
  }
  return json::serialize(body);
}

// What one admitted request holds on the limiter, given back when the request ends.
struct Held {
  cluster::Subject subject;
  cluster::Charge charge;
  // The channel (and key) the charge is for; both null for the caller's own (virtual key).
  const routing::Channel* channel = nullptr;
  const routing::UpstreamKey* key = nullptr;
};

// 16 KB parse arenas, recycled per thread: a request may keep one from inspectBody until its
// protect scan, across a suspension and possibly ending on another thread; in the steady state
// none is allocated (an allocation this large would also make glibc consolidate its fast bins).
class ParseArena {
 public:
  static constexpr std::size_t kBytes = 16 * 1024;
  ParseArena() {
    auto& spare = spares();
    if (spare.empty()) {
      buf_.reset(new unsigned char[kBytes]);
    } else {
      buf_ = std::move(spare.back());
      spare.pop_back();
    }
  }
  ~ParseArena() {
    if (auto& spare = spares(); buf_ && spare.size() < kMaxSpares) spare.push_back(std::move(buf_));
  }
  ParseArena(const ParseArena&) = delete;
  ParseArena& operator=(const ParseArena&) = delete;
  unsigned char* data() const { return buf_.get(); }

 private:
  static constexpr std::size_t kMaxSpares = 8;
  static std::vector<std::unique_ptr<unsigned char[]>>& spares() {
    thread_local std::vector<std::unique_ptr<unsigned char[]>> s;
    return s;
  }
  std::unique_ptr<unsigned char[]> buf_;
};

// A request body parsed once, kept from inspectBody until the protect stages have scanned it (the
// per-thread parse arena inspectBody otherwise uses does not outlive a suspension). A body that
// does not fit the arena overflows to the heap.
struct ParsedBody {
  ParsedBody() : mr(arena.data(), ParseArena::kBytes), doc(json::storage_ptr(&mr)) {}
  ParsedBody(const ParsedBody&) = delete;
  ParsedBody& operator=(const ParsedBody&) = delete;
  ParseArena arena;
  json::monotonic_resource mr;
  json::value doc;  // declared last: destroyed first
};

struct Relay;
std::string reviewPayloadOf(const Relay& relay, std::string_view phase, std::string_view answer);
// Defined below (needs RequestContext/Caller only).
http::Response failure(Wire wire, const RequestContext& ctx, RequestRecord& rec, int status, std::string_view type,
                       std::string_view code, const std::string& msg);

struct Relay {
  const Snapshot& snap;
  upstream::Pool& pool;
  http::Request& req;
  http::Responder& r;
  const RequestContext& ctx;
  const ClientCall& call;
  RequestRecord& rec;
  const BodyFacts& facts;
  std::string_view routed_model;  // the model after aliases and CHANNEL/ pinning
  bool stream;
  bool strip_usage;
  Deadline deadline;
  // The body last made for a channel (per upstream format and model name); most requests
  // make none and send the client's bytes as they are.
  std::string body_key;
  std::string body_made;
  bool body_is_original = false;
  std::string upstream_model;  // for the current attempt

  // Redaction issued tokens for this request: answers are restored with this cipher.
  std::shared_ptr<const redact::TokenCipher> restore_cipher;
  std::shared_ptr<redact::RestoreStats> restore_stats;
  std::shared_ptr<const redact::SealMemo> restore_memo;  // the tokens this request sealed
  std::unique_ptr<ParsedBody> parsed_body;  // req.body() as inspectBody parsed it, for scanRequest
  // The response cache records this answer under cache_key (set when a write is decided).
  cache::ResponseCache* cache = nullptr;
  std::optional<cache::CacheKey> cache_key;
  std::chrono::milliseconds cache_ttl{0};
  std::size_t cache_max_entry = cache::kDefaultMaxEntryBytes;
  std::shared_ptr<const cache::Entry> recorded;  // the entry made from this answer
  // Headers the protect stages add to every answer (screening, guardrail, cache).
  std::vector<std::pair<std::string, std::string>> extra_headers;
  // Responses clients are answered from a Chat translation (even by an openai channel) when the
  // answer must be restored or recorded: neither has a decoder for the native Responses stream.
  bool force_translate = false;
  bool translatable = false;  // a chat-style request (the protect stages apply to these)
  std::vector<const routing::Channel*> candidates_seen;  // for the message when none could be tried
  // guardrail.review_response: the webhook reviews a non-streamed answer before it is sent.
  const guard::WebhookTarget* review_answer = nullptr;
  bool review_fail_open = true;
  const Caller* caller = nullptr;
  std::vector<pipeline::OutgoingText> outgoing;

  Wire upWire(const routing::Pick& p) const { return channelWire(p.channel->cfg.type); }
  bool responsesClient() const { return call.wire == Wire::OpenAI && call.op == "/responses"; }
  // Same format: relayed as it is. Responses requests go natively only to `openai` channels;
  // other OpenAI-format upstreams (vLLM, Ollama, DeepSeek...) get them as chat completions.
  bool translating(const routing::Pick& p) const {
    if (upWire(p) != call.wire) return true;
    return responsesClient() && (p.channel->cfg.type != config::ChannelType::OpenAI || force_translate);
  }
  // Streams go through a decoder and encoder when translated or restored.
  bool decodeStream(const routing::Pick& p) const { return translating(p) || restore_cipher != nullptr; }
  providers::Format clientFormat() const {
    switch (call.wire) {
      case Wire::Anthropic: return providers::Format::AnthropicMessages;
      case Wire::Gemini: return providers::Format::GeminiGenerate;
      case Wire::OpenAI: break;
    }
    return responsesClient() ? providers::Format::OpenAIResponses : providers::Format::OpenAIChat;
  }
  providers::Format upstreamFormat(const routing::Pick& p) const {
    switch (upWire(p)) {
      case Wire::Anthropic: return providers::Format::AnthropicMessages;
      case Wire::Gemini: return providers::Format::GeminiGenerate;
      case Wire::OpenAI: break;
    }
    return providers::Format::OpenAIChat;
  }
  // A Gemini client of streamGenerateContent without alt=sse reads one JSON array.
  bool geminiJsonArray() const {
    return call.wire == Wire::Gemini && stream && call.query.find("alt=sse") == std::string::npos;
  }
  providers::TranslateContext translateContext(const routing::Pick& p) const {
    providers::TranslateContext tc;
    tc.upstream_model = std::string(upstream_model);
    tc.openai_max_completion_tokens = p.channel->cfg.type == config::ChannelType::OpenAI;
    tc.include_usage = client_asked_usage;
    tc.client_model = call.model;
    tc.client_stream = stream;
    tc.gemini_json_array = geminiJsonArray();
    tc.responses_echo = responses_echo;
    if (restore_cipher) {
      auto cipher = restore_cipher;
      auto stats = restore_stats;
      auto memo = restore_memo;
      tc.wrap_encoder = [cipher, stats, memo](std::unique_ptr<providers::StreamEncoder> inner) {
        return pipeline::makeRestoringEncoder(std::move(inner), cipher, stats, memo);
      };
    }
    return tc;
  }
  std::shared_ptr<const providers::openai::ResponsesEcho> responses_echo;
  bool client_asked_usage = false;
  // The caller's x-ratelimit-* figures; when set they replace the provider's.
  std::vector<std::pair<std::string, std::string>> rate_headers;
  std::size_t body_cap = 0;  // store.log_bodies: keep this much of the response for the log

  // Limits held for this request, settled once: right before the answer's last bytes go out,
  // so a client that sends its next request as soon as it has the answer finds its slot,
  // tokens and spend already counted; on the other paths, when the request ends.
  cluster::Limiter* limiter = nullptr;
  std::vector<Held> held;
  std::optional<config::Price> price;  // of the routed model, for the cost
  bool settled = false;

  // Marks the request settled and computes its cost from the real usage, at the price of the
  // model the channel was asked for. True when limits are held: then settleHeld() must follow.
  // Synchronous, so requests that hold no limits (the master key's) make no coroutine frame.
  bool beginSettle() {
    if (settled) return false;
    settled = true;
    const std::int64_t in = std::max<std::int64_t>(rec.input_tokens, 0);
    const std::int64_t out = std::max<std::int64_t>(rec.output_tokens, 0);
    if (in + out > 0) {
      auto p = upstream_model.empty() || upstream_model == routed_model ? price : snap.prices->find(upstream_model);
      if (!p) p = price;
      if (p) rec.cost_usd = pipeline::PriceTable::cost(*p, in, out, rec.cached_tokens);
    }
    return !held.empty();
  }

  // `served`: the attempt that answered (its channel and key are charged the real usage).
  boost::asio::awaitable<void> settleHeld(const routing::Pick* served) {
    const std::int64_t tokens = std::max<std::int64_t>(rec.input_tokens, 0) + std::max<std::int64_t>(rec.output_tokens, 0);
    for (auto& h : held) {
      const bool real = !h.channel || (served && h.channel == served->channel && (!h.key || h.key == served->key));
      const double cost = h.channel ? 0.0 : rec.cost_usd;
      co_await limiter->settle(h.subject, h.charge, real ? tokens : 0, real ? cost : 0.0);
    }
    held.clear();
  }

  // A whole answer as a cache entry: an object body, or the JSON array of a Gemini stream
  // requested without alt=sse (its elements are the stream's chunks).
  std::optional<cache::Entry> decodeAnswer(providers::Format f, int status, const std::string& body) const {
    const auto first = body.find_first_not_of(" \t\r\n");
    if (f == providers::Format::GeminiGenerate && first != std::string::npos && body[first] == '[') {
      boost::system::error_code ec;
      json::value arr = sluice::parseJson(body, ec);
      if (ec || !arr.is_array() || status < 200 || status > 299) return std::nullopt;
      auto rec = cache::Recorder::forStream(f, cache_max_entry);
      if (!rec) return std::nullopt;
      for (const auto& el : arr.as_array()) {
        std::string event = "data: " + json::serialize(el) + "\r\n\r\n";
        rec->feed(event);
      }
      return rec->finish();
    }
    return cache::Recorder::fromWhole(f, status, body, cache_max_entry);
  }

  // guardrail.review_response: the webhook's verdict on the answer; a refusal to send instead.
  boost::asio::awaitable<std::optional<http::Response>> reviewAnswer(const std::string& answer) {
    auto& counters = metrics::registry().safety;
    const std::string payload = reviewPayloadOf(*this, "response", answer);
    guard::Verdict v = co_await guard::review(pool, *review_answer, payload);
    counters.guardrail(v.action == guard::Verdict::Action::Failed && v.timed_out ? "timeout" : guard::verdictName(v.action));
    std::optional<http::Response> out;
    if (v.action == guard::Verdict::Action::Warn) {
      extra_headers.emplace_back("x-sluice-guardrail", "warn");
    } else if (v.action == guard::Verdict::Action::Block) {
      out = failure(call.wire, ctx, rec, 400, "invalid_request_error", "guardrail_blocked",
                    "the answer was withheld by the gateway's guardrail" + (v.reason.empty() ? std::string() : ": " + v.reason));
    } else if (v.action == guard::Verdict::Action::Failed) {
      spdlog::warn("request {}: guardrail webhook failed on the answer ({}): {}", ctx.id,
                   review_fail_open ? "fail_open" : "fail_closed", v.reason);
      if (!review_fail_open) {
        out = failure(call.wire, ctx, rec, 503, "api_error", "guardrail_unavailable",
                      "the gateway's guardrail could not review the answer (" + v.reason +
                          ") and is configured fail_closed; retry later");
      } else {
        extra_headers.emplace_back("x-sluice-guardrail", "unavailable");
      }
    }
    if (out) {
      setOwnHeaders(*out);
    }
    co_return out;
  }

  // Puts the recorded answer in the cache (once).
  boost::asio::awaitable<void> storeRecorded() {
    if (!recorded || !cache || !cache_key) co_return;
    const cache::CacheKey& key = *cache_key;
    const std::shared_ptr<const cache::Entry> entry = std::move(recorded);
    const std::chrono::milliseconds ttl = cache_ttl;
    co_await cache->put(key, entry, ttl);
  }

  void countRestored(const redact::RestoreStats& st) {
    auto& m = metrics::registry().safety;
    if (st.restored) m.restored.fetch_add(st.restored, std::memory_order_relaxed);
    if (st.tampered) m.tampered.fetch_add(st.tampered, std::memory_order_relaxed);
  }

  bool ownRateHeader(std::string_view name) const {
    return !rate_headers.empty() && name.size() > 12 && boost::beast::iequals(name.substr(0, 12), "x-ratelimit-");
  }
  void keepBody(std::string_view bytes) {
    if (body_cap == 0 || rec.response_body.size() >= body_cap) return;
    rec.response_body.append(bytes.substr(0, body_cap - rec.response_body.size()));
  }

  // The body to send to p's channel, or an error the client must fix (bad for that format).
  std::optional<providers::TranslateError> prepareBody(const routing::Pick& p, std::string_view& out) {
    upstream_model = p.channel->upstreamModel(routed_model);
    std::string key = std::string(wireName(upWire(p))) + '\n' + upstream_model;
    if (key != body_key) {
      body_key = std::move(key);
      body_is_original = false;
      if (translating(p)) {
        body_made.clear();
        providers::RequestInfo info;
        if (auto err = providers::translateRequest(clientFormat(), upstreamFormat(p), req.body(), body_made,
                                                   translateContext(p), &info)) {
          body_key.clear();
          return err;
        }
        responses_echo = std::move(info.responses_echo);
      } else {
        bool rename = upstream_model != facts.model && call.wire != Wire::Gemini;  // Gemini: model in the path
        if (rename || strip_usage) {
          body_made = rewriteBody(req.body(), facts, rename ? &upstream_model : nullptr, strip_usage);
        } else {
          body_is_original = true;
        }
      }
    }
    out = body_is_original ? std::string_view(req.body()) : std::string_view(body_made);
    return std::nullopt;
  }

  // The upstream request head, formatted once per attempt (no Beast fields or serializer:
  // this runs for every request).
  std::string buildUpstreamHead(const routing::Pick& p, std::string_view sendBody) const {
    const auto& ch = *p.channel;
    std::string h;
    h.reserve(512);
    const Wire up = upWire(p);
    const bool azure = ch.cfg.type == config::ChannelType::Azure;
    providers::TargetParts target{ch.endpoint.base_path, ch.cfg.type, ch.cfg.api_version, translating(p), stream,
                                  call.op, upstream_model, call.query};
    h.append("POST ").append(providers::upstreamTarget(target)).append(" HTTP/1.1\r\n");
    h.append("Host: ").append(ch.endpoint.host_header).append("\r\n");
    bool haveType = false;
    for (const auto& f : req) {
      auto name = f.name_string();
      if (dropTowardUpstream(name)) continue;
      bool overridden = false;
      for (const auto& [k, v] : ch.cfg.headers) overridden = overridden || boost::beast::iequals(k, name);
      if (overridden) continue;
      haveType = haveType || f.name() == bhttp::field::content_type;
      h.append(name).append(": ").append(f.value()).append("\r\n");
    }
    for (const auto& [k, v] : ch.cfg.headers) h.append(k).append(": ").append(v).append("\r\n");
    if (!haveType) h.append("Content-Type: application/json\r\n");
    if (!p.key->secret.empty()) {
      switch (up) {
        case Wire::OpenAI: h.append(azure ? "api-key: " : "Authorization: Bearer "); break;
        case Wire::Anthropic: h.append("x-api-key: "); break;
        case Wire::Gemini: h.append("x-goog-api-key: "); break;
      }
      h.append(p.key->secret).append("\r\n");
    }
    if (up == Wire::Anthropic && req["anthropic-version"].empty()) h.append("anthropic-version: 2023-06-01\r\n");
    h.append("Content-Length: ").append(std::to_string(sendBody.size())).append("\r\n\r\n");
    return h;
  }

  // Response header lines for the client: the upstream's, less hop-by-hop ones, plus ours.
  std::string responseFieldLines(const bhttp::fields& from, const routing::Pick& p, int attempts,
                                 bool json_array = false) const {
    std::string out;
    out.reserve(256);
    if (json_array) out.append("Content-Type: application/json\r\n");
    for (const auto& f : from) {
      if (dropTowardClient(f.name_string()) || ownRateHeader(f.name_string())) continue;
      if (json_array && f.name() == bhttp::field::content_type) continue;
      // The provider's request id stays available under another name; x-request-id is ours.
      if (boost::beast::iequals(f.name_string(), "x-request-id")) out.append("x-upstream-request-id");
      else out.append(f.name_string());
      out.append(": ").append(f.value()).append("\r\n");
    }
    out.append("x-request-id: ").append(ctx.id).append("\r\n");
    out.append("x-sluice-channel: ").append(p.channel->cfg.name).append("\r\n");
    out.append("x-sluice-attempts: ").append(std::to_string(attempts)).append("\r\n");
    appendOwnHeaderLines(out);
    return out;
  }

  void copyResponseHeaders(const bhttp::fields& from, bhttp::fields& to, const routing::Pick& p, int attempts) const {
    for (const auto& f : from) {
      if (dropTowardClient(f.name_string()) || ownRateHeader(f.name_string())) continue;
      if (boost::beast::iequals(f.name_string(), "x-request-id")) to.insert("x-upstream-request-id", f.value());
      else to.insert(f.name_string(), f.value());
    }
    to.set("x-request-id", ctx.id);
    to.set("x-sluice-channel", p.channel->cfg.name);
    to.set("x-sluice-attempts", std::to_string(attempts));
    setOwnHeaders(to);
  }

  // The caller's x-ratelimit-* figures and the protect stages' headers, on any answer.
  void setOwnHeaders(bhttp::fields& to) const {
    for (const auto& [k, v] : rate_headers) to.set(k, v);
    for (const auto& [k, v] : extra_headers) to.set(k, v);
  }
  void appendOwnHeaderLines(std::string& out) const {
    for (const auto& [k, v] : rate_headers) out.append(k).append(": ").append(v).append("\r\n");
    for (const auto& [k, v] : extra_headers) out.append(k).append(": ").append(v).append("\r\n");
  }

  // One attempt on one (channel, key). Never throws.
  boost::asio::awaitable<Attempt> attempt(const routing::Pick& p, int attemptNo) {
    const auto& t = snap.cfg->routing.timeouts;
    Attempt a;
    std::unique_ptr<upstream::Connection> conn;
    std::optional<upstream::ResponseParser> parser;
    std::string_view sendBody;
    if (auto err = prepareBody(p, sendBody)) {
      // A request that cannot be expressed in this channel's format is the client's to fix:
      // answer now rather than try another channel.
      a.outcome = Outcome::ClientError;
      a.status = err->status;
      a.why = err->message;
      http::Response res{static_cast<bhttp::status>(err->status), 11};
      res.set(bhttp::field::content_type, "application/json");
      res.set("x-request-id", ctx.id);
      res.body() = providers::errorBody(clientFormat(), *err);
      rec.status = err->status;
      rec.error = err->message;
      co_await r.send(std::move(res));
      a.delivered = true;
      co_return a;
    }
    const std::string upHead = buildUpstreamHead(p, sendBody);

    // A pooled connection the provider closed while idle shows up as a failed write or an
    // early EOF; that is not the provider's fault, so try once more on a fresh connection.
    for (int fresh = 0; fresh < 2; ++fresh) {
      auto [cec, c] = co_await pool.acquire(p.channel->endpoint, deadline.cap(t.connect), fresh == 0);
      if (cec) {
        a.timeout = cec == boost::beast::error::timeout;
        a.why = a.timeout ? "connect timed out" : "connect failed: " + cec.message();
        co_return a;
      }
      conn = std::move(c);
      auto wec = co_await conn->writeRaw(upHead, sendBody, deadline.cap(t.connect));
      if (!wec) {
        parser.emplace();
        parser->body_limit(boost::none);
        wec = co_await conn->readHeader(*parser, deadline.cap(t.first_byte));
        if (!wec) break;
      }
      bool stale = conn->reused && wec != boost::beast::error::timeout;
      conn->close();
      conn.reset();
      if (stale && fresh == 0) continue;
      a.timeout = wec == boost::beast::error::timeout;
      a.why = a.timeout ? "no response header within the first_byte timeout" : "upstream failed: " + wec.message();
      co_return a;
    }
    auto& head = parser->get();
    a.status = static_cast<int>(head.result_int());

    if (a.status >= 400) {
      // Read the (bounded) error body: it says why, and the connection can be reused.
      std::string errBody;
      char buf[4096];
      while (!parser->is_done() && errBody.size() < kMaxErrorBody) {
        auto [ec, n] = co_await conn->readBody(*parser, buf, sizeof buf, deadline.cap(t.idle));
        errBody.append(buf, n);
        if (ec) break;
      }
      if (parser->is_done() && head.keep_alive()) {
        pool.release(std::move(conn));
      } else {
        conn->close();
      }
      // Some providers quote the key they were given: nothing of it may pass this point (the
      // client's answer, the attempt list, the key's health reason, the logs).
      snap.scrubber.scrub(errBody);
      auto msg = errorMessageFromBody(errBody);
      a.why = fmt::format("upstream answered {}: {}", a.status, msg);
      if (a.status == 429 || a.status == 401 || a.status == 403) {
        a.outcome = Outcome::KeyFailure;
        a.retry_after_ms = parseRetryAfterMs(head);
      } else if (a.status >= 500 || a.status == 408) {
        a.outcome = Outcome::ChannelFailure;
      } else {
        // The request itself was refused: the client must fix it, another channel won't help.
        a.outcome = Outcome::ClientError;
        http::Response res{head.result(), 11};
        copyResponseHeaders(head, res, p, attemptNo);
        scrubFields(snap.scrubber, res);
        if (translating(p)) {
          res.body() = providers::translateError(clientFormat(), upstreamFormat(p), a.status, errBody);
          res.set(bhttp::field::content_type, "application/json");
        } else {
          res.body() = std::move(errBody);
        }
        rec.status = a.status;
        co_await r.send(std::move(res));
        a.delivered = true;
      }
      co_return a;
    }

    bool sse = stream && head[bhttp::field::content_type].find("text/event-stream") != std::string_view::npos;
    if (!sse) co_return co_await relayWhole(p, attemptNo, std::move(conn), *parser, a);
    co_return co_await relayStream(p, attemptNo, std::move(conn), *parser, a);
  }

  boost::asio::awaitable<Attempt> relayWhole(const routing::Pick& p, int attemptNo,
                                             std::unique_ptr<upstream::Connection> conn,
                                             upstream::ResponseParser& parser, Attempt a) {
    const auto& t = snap.cfg->routing.timeouts;
    std::string whole;
    if (auto cl = parser.content_length()) whole.reserve(std::min<std::uint64_t>(*cl, kMaxWholeBody));
    char buf[kReadChunk];
    while (!parser.is_done()) {
      auto [ec, n] = co_await conn->readBody(parser, buf, sizeof buf, deadline.cap(t.idle));
      whole.append(buf, n);
      if (ec || whole.size() > kMaxWholeBody) {
        conn->close();
        a.outcome = Outcome::ChannelFailure;
        a.timeout = ec == boost::beast::error::timeout;
        a.why = ec ? "response body broke: " + ec.message() : "response body over 64 MiB";
        co_return a;
      }
    }
    auto& head = parser.get();
    const providers::Format recFormat = translating(p) ? upstreamFormat(p) : clientFormat();
    std::optional<cache::Entry> canonical;  // the answer decoded, when caching or reviewing needs it
    if (cache_key || (review_answer && !stream)) canonical = decodeAnswer(recFormat, a.status, whole);
    if (cache_key && canonical) {
      // Recorded from the upstream's own bytes, tokens and all: a replay is restored per request.
      canonical->stored_at_ms = unixNowMs();
      recorded = std::make_shared<const cache::Entry>(*canonical);
    }
    if (review_answer && !stream) {
      std::string text;
      if (canonical)
        for (const auto& part : canonical->response.content)
          if (part.kind == providers::Part::Kind::Text) text += part.text;
      std::optional<http::Response> refusal = co_await reviewAnswer(text);
      if (refusal) {
        if (head.keep_alive()) pool.release(std::move(conn));
        else conn->close();
        recorded.reset();
        co_await r.send(std::move(*refusal));
        a.outcome = Outcome::Success;
        a.delivered = true;
        co_return a;
      }
    }
    Usage usage;
    if (translating(p)) {
      std::string clientBody;
      providers::Usage cu;
      if (auto err = providers::translateResponse(clientFormat(), upstreamFormat(p), whole, clientBody,
                                                  translateContext(p), &cu)) {
        conn->close();
        a.outcome = Outcome::ChannelFailure;
        a.why = "upstream response could not be translated: " + err->message;
        co_return a;
      }
      whole = std::move(clientBody);
      usage = fromCanonical(cu);
      rec.input_tokens = usage.prompt_tokens;
      rec.output_tokens = usage.completion_tokens;
      rec.cached_tokens = usage.cached_tokens;
    } else if (usageFromBody(call.wire, whole, usage)) {
      rec.input_tokens = usage.prompt_tokens;
      rec.output_tokens = usage.completion_tokens;
      rec.cached_tokens = usage.cached_tokens;
    }
    keepBody(whole);  // the log keeps the answer as it came, tokens sealed
    if (restore_cipher) {
      redact::RestoreStats st;
      pipeline::restoreWholeBody(whole, *restore_cipher, st, restore_memo.get());
      countRestored(st);
    }
    http::Response res{head.result(), 11};
    copyResponseHeaders(head, res, p, attemptNo);
    res.body() = std::move(whole);
    if (head.keep_alive()) {
      pool.release(std::move(conn));
    } else {
      conn->close();
    }
    rec.status = a.status;
    rec.ttfb_ms = msSince(ctx.start);
    if (beginSettle()) co_await settleHeld(&p);
    co_await storeRecorded();  // before the answer goes out: an immediate repeat finds it
    co_await r.send(std::move(res));
    a.outcome = Outcome::Success;
    a.delivered = true;
    co_return a;
  }

  boost::asio::awaitable<Attempt> relayStream(const routing::Pick& p, int attemptNo,
                                              std::unique_ptr<upstream::Connection> conn,
                                              upstream::ResponseParser& parser, Attempt a) {
    const auto& t = snap.cfg->routing.timeouts;
    // A same-format stream that must be restored goes through a same-format translator.
    const providers::Format upFormat = translating(p) ? upstreamFormat(p) : clientFormat();
    // OpenAI Chat to OpenAI Chat with tokens to restore: a tap that parses only the events
    // that may hold one (the common case by far; the others decode and re-encode every event).
    const bool rawRestore = restore_cipher && !translating(p) && clientFormat() == providers::Format::OpenAIChat;
    auto tap = rawRestore        ? makeRestoringChatTap(strip_usage, restore_cipher, restore_stats, restore_memo)
               : decodeStream(p) ? makeTranslatingTap(providers::makeStreamTranslator(clientFormat(), upFormat,
                                                                                      translateContext(p)))
                                 : makeStreamTap(call.wire, strip_usage);
    auto& filter = *tap;
    std::unique_ptr<cache::Recorder> recorder;
    if (cache_key) recorder = cache::Recorder::forStream(upFormat, cache_max_entry);
    std::string out;
    out.reserve(kReadChunk);
    char buf[kReadChunk];
    auto& head = parser.get();
    bool begun = false;
    auto& active = metrics::registry().active_streams;
    active.fetch_add(1, std::memory_order_relaxed);
    struct Dec {
      std::atomic<std::int64_t>& g;
      ~Dec() { g.fetch_sub(1, std::memory_order_relaxed); }
    } dec{active};

    for (;;) {
      // Until a byte reaches the client the first-byte timeout applies and failure is retryable.
      bool sent = r.bytesSent() > 0;
      auto [ec, n] = co_await conn->readBody(parser, buf, sizeof buf, deadline.cap(sent ? t.idle : t.first_byte));
      out.clear();
      if (recorder) recorder->feed(std::string_view(buf, n));
      if (restore_cipher) keepBody(std::string_view(buf, n));  // logged as it came, tokens sealed
      bool ok = filter.feed(std::string_view(buf, n), out);
      if (!ok) ec = boost::beast::errc::make_error_code(boost::beast::errc::message_size);
      // The usual last read carries the final events and the upstream's end: send both in one write.
      bool last = parser.is_done() && !ec;
      if (last) {
        filter.finish(out);
        if (recorder) {
          if (auto entry = recorder->finish()) {
            entry->stored_at_ms = unixNowMs();
            recorded = std::make_shared<const cache::Entry>(std::move(*entry));
          }
        }
        if (restore_stats) countRestored(*restore_stats);
        if (const auto u = filter.usage(); u.known()) {
          rec.input_tokens = u.prompt_tokens;
          rec.output_tokens = u.completion_tokens;
          rec.cached_tokens = u.cached_tokens;
        }
        if (beginSettle()) co_await settleHeld(&p);
        if (head.result_int() >= 200 && head.result_int() < 300) co_await storeRecorded();
      }
      if (!out.empty() || last) {
        if (!begun) {
          std::string lines = responseFieldLines(head, p, attemptNo, decodeStream(p) && geminiJsonArray());
          co_await r.beginStream(static_cast<int>(head.result_int()), head.reason(), lines);
          begun = true;
        }
        if (!out.empty() && rec.ttfb_ms < 0) rec.ttfb_ms = msSince(ctx.start);
        if (!restore_cipher) keepBody(out);
        bool written = last ? co_await r.writeLastChunk(out) : co_await r.writeChunk(out);
        if (!written) {
          // The client left: stop reading and drop the upstream connection so the provider
          // stops generating.
          conn->close();
          rec.status = 499;
          rec.error = "client closed the connection mid-stream";
          a.outcome = Outcome::Success;
          a.delivered = true;
          co_return a;
        }
      }
      if (ec) {
        conn->close();
        bool timedOut = ec == boost::beast::error::timeout;
        std::string why = timedOut ? (r.bytesSent() > 0 ? "upstream stream idle past the idle timeout"
                                                         : "no first chunk within the first_byte timeout")
                                   : "upstream stream broke: " + ec.message();
        if (r.bytesSent() == 0) {
          a.outcome = Outcome::ChannelFailure;
          a.timeout = timedOut;
          a.why = why;
          co_return a;  // nothing reached the client: another attempt is still invisible
        }
        // After the first byte: no retry. End with a well-formed error event and close.
        std::string event = streamErrorEvent(call.wire, timedOut ? 504 : 502,
                                             timedOut ? "upstream_timeout" : "upstream_stream_broken",
                                             why + " (after the response started; not retried)");
        r.setKeepAlive(false);
        co_await r.writeChunk(event);
        co_await r.endStream();
        rec.status = timedOut ? 504 : 502;
        rec.error = why;
        a.outcome = Outcome::ChannelFailure;
        a.delivered = true;
        a.why = why;
        co_return a;
      }
      if (parser.is_done()) break;
    }
    if (!r.finished()) co_await r.endStream();
    if (head.keep_alive()) {
      pool.release(std::move(conn));
    } else {
      conn->close();
    }
    rec.status = a.status;
    a.outcome = Outcome::Success;
    a.delivered = true;
    co_return a;
  }
};

// Adds one attempt to the JSON array kept for the request log.
void appendAttempt(std::string& json_array, const routing::Pick& p, const Attempt& a) {
  json_array.pop_back();  // ']'
  if (json_array.size() > 1) json_array.push_back(',');
  json_array.append("{\"channel\":");
  appendJsonString(json_array, p.channel->cfg.name);
  json_array.append(",\"key\":");
  appendJsonString(json_array, p.key->id);
  json_array.append(",\"status\":").append(std::to_string(a.status));
  json_array.append(",\"duration_ms\":").append(fmt::format("{:.3f}", a.duration_ms));
  json_array.append(",\"error\":");
  if (a.why.empty()) json_array.append("null"); else appendJsonString(json_array, a.why);
  json_array.append("}]");
}

std::string formatReset(std::int64_t ms) {
  if (ms <= 0) return "0s";
  if (ms < 1000) return std::to_string(ms) + "ms";
  std::int64_t secs = (ms + 999) / 1000;
  if (secs < 60) return std::to_string(secs) + "s";
  return std::to_string(secs / 60) + "m" + std::to_string(secs % 60) + "s";
}

// Tokens a request may use, before it runs: about 4 bytes of prompt per token (OpenAI's own
// rule for rate limits) plus the output cap the client set.
std::int64_t estimateTokens(std::string_view body, std::int64_t max_tokens) {
  return static_cast<std::int64_t>(body.size() / 4) + max_tokens;
}

// Output assumed for a budget reservation when the client set no cap.
constexpr std::int64_t kDefaultOutputEstimate = 1024;

struct LimitRefusal {
  int status = 429;
  std::string type, code, message;
  std::int64_t retry_after_ms = 0;
  bool retryable = true;
};

// `est_tokens`: what the request was charged up front (to explain a request larger than a limit).
LimitRefusal refusalFor(const cluster::Decision& d, std::string_view who, std::int64_t est_tokens) {
  LimitRefusal r;
  r.retry_after_ms = d.retry_after_ms;
  r.type = "rate_limit_error";
  r.code = "rate_limit_exceeded";
  switch (d.hit) {
    case cluster::LimitKind::Requests:
      r.message = fmt::format("{} is over its limit of {} requests per minute; retry in {}", who, d.limit_requests,
                              formatReset(d.retry_after_ms));
      break;
    case cluster::LimitKind::Tokens:
      if (est_tokens > d.limit_tokens) {
        // Waiting will not help: the request alone does not fit in a minute's tokens.
        r.retryable = false;
        r.message = fmt::format("this request is estimated at {} tokens (prompt bytes / 4 + max_tokens), more than "
                                "{}'s limit of {} tokens per minute: lower max_tokens or shorten the prompt",
                                est_tokens, who, d.limit_tokens);
      } else {
        r.message = fmt::format("{} is over its limit of {} tokens per minute; retry in {}", who, d.limit_tokens,
                                formatReset(d.retry_after_ms));
      }
      break;
    case cluster::LimitKind::Concurrency:
      r.code = "concurrency_limit_exceeded";
      r.message = fmt::format("{} has as many requests in flight as it may; retry when one finishes", who);
      break;
    case cluster::LimitKind::BudgetDaily:
    case cluster::LimitKind::BudgetMonthly:
    case cluster::LimitKind::BudgetTotal: {
      r.type = "insufficient_quota";
      r.code = "budget_exceeded";
      r.retryable = false;
      const char* span = d.hit == cluster::LimitKind::BudgetDaily     ? "daily"
                         : d.hit == cluster::LimitKind::BudgetMonthly ? "monthly"
                                                                      : "total";
      r.message = d.hit == cluster::LimitKind::BudgetTotal
                      ? fmt::format("{} has used its {} budget", who, span)
                      : fmt::format("{} has used its {} budget; it resets in {}", who, span, formatReset(d.retry_after_ms));
      break;
    }
    case cluster::LimitKind::None:
      r.message = fmt::format("{} is over a limit", who);
      break;
  }
  return r;
}

// An error answer in the caller's format, noted in the request's record.
http::Response failure(Wire wire, const RequestContext& ctx, RequestRecord& rec, int status, std::string_view type,
                       std::string_view code, const std::string& msg) {
  rec.status = status;
  rec.error = msg;
  auto res = errorResponse(wire, status, type, code, msg);
  res.set("x-request-id", ctx.id);
  return res;
}

http::Response refusalResponse(Wire wire, const RequestContext& ctx, RequestRecord& rec, const LimitRefusal& why,
                               const std::vector<std::pair<std::string, std::string>>& headers) {
  auto res = failure(wire, ctx, rec, why.status, why.type, why.code, why.message);
  if (why.retry_after_ms > 0) res.set(bhttp::field::retry_after, std::to_string((why.retry_after_ms + 999) / 1000));
  // The SDKs retry 429s on their own; a spent budget will not come back within their retries.
  if (!why.retryable) res.set("x-should-retry", "false");
  for (const auto& [k, v] : headers) res.set(k, v);
  return res;
}

}  // namespace

void scrubRecord(const Snapshot& snap, RequestRecord& rec) {
  const auto& s = snap.scrubber;
  if (s.empty()) return;
  // The error and the attempts were made from upstream text already masked where it came in
  // (attempt()); a logged body may hold a key the client sent or the provider quoted.
  s.scrub(rec.request_body);
  s.scrub(rec.response_body);
}

Snapshot::Switches switchesFrom(const std::map<std::string, std::string>& rows) {
  Snapshot::Switches sw;
  auto flag = [&](const char* name) -> std::optional<bool> {
    auto it = rows.find(name);
    if (it == rows.end()) return std::nullopt;
    if (it->second == "true") return true;
    if (it->second == "false") return false;
    return std::nullopt;
  };
  sw.cache = flag("cache.enabled");
  sw.redaction = flag("redaction.enabled");
  sw.guardrail = flag("guardrail.enabled");
  if (auto it = rows.find("screening.action"); it != rows.end()) sw.screening = config::parseScreenAction(it->second);
  return sw;
}

std::vector<std::pair<std::string, std::string>> rateLimitHeaders(const cluster::Decision& d) {
  std::vector<std::pair<std::string, std::string>> h;
  if (d.limit_requests >= 0) {
    h.emplace_back("x-ratelimit-limit-requests", std::to_string(d.limit_requests));
    h.emplace_back("x-ratelimit-remaining-requests", std::to_string(std::max<std::int64_t>(d.remaining_requests, 0)));
    h.emplace_back("x-ratelimit-reset-requests", formatReset(d.reset_requests_ms));
  }
  if (d.limit_tokens >= 0) {
    h.emplace_back("x-ratelimit-limit-tokens", std::to_string(d.limit_tokens));
    h.emplace_back("x-ratelimit-remaining-tokens", std::to_string(std::max<std::int64_t>(d.remaining_tokens, 0)));
    h.emplace_back("x-ratelimit-reset-tokens", formatReset(d.reset_tokens_ms));
  }
  return h;
}

namespace {

// The relay proper, after the caller's own limits admitted the request.
boost::asio::awaitable<void> relayWithFailover(const Snapshot& snap, cluster::Limiter& limiter, Relay& relay,
                                               std::vector<const routing::Channel*> candidates, std::int64_t estTokens) {
  auto& held = relay.held;
  auto& rec = relay.rec;
  auto& r = relay.r;
  const auto& ctx = relay.ctx;
  const auto& call = relay.call;
  const auto& cfg = *snap.cfg;
  auto fail = [&](int status, std::string_view type, std::string_view code, const std::string& msg) {
    return failure(call.wire, ctx, rec, status, type, code, msg);
  };
  relay.candidates_seen = candidates;
  routing::Attempts attempts(*snap.router, std::move(candidates));
  std::vector<std::string> summary;
  bool allTimeouts = true, all429 = true;
  std::int64_t retryAfter = 0;
  std::int64_t quotaRetry = -1;  // channels/keys skipped for their own quotas: soonest retry
  std::string quotaWhy;
  const int maxAttempts = cfg.routing.max_retries + 1;
  std::vector<const routing::Channel*> charged;  // channels this request holds a quota charge on
  for (int n = 1; n <= maxAttempts;) {
    std::int64_t coolingFor = 0;
    auto pick = attempts.next(coolingFor);
    if (!pick.channel) {
      if (n == 1 && coolingFor > 0) {
        retryAfter = coolingFor;
        summary.push_back(fmt::format("every key of the matching channels is cooling down for {} ms", coolingFor));
        allTimeouts = false;
      }
      break;
    }
    if (relay.deadline.passed()) {
      summary.push_back("total timeout reached");
      break;
    }
    const auto& ch = *pick.channel;
    // Provider quotas: a channel or key at its own limit is passed over, not tried.
    auto refuse = [&](const cluster::Decision& d, const std::string& who) {
      auto why = refusalFor(d, who, estTokens);
      if (quotaRetry < 0 || (d.retry_after_ms > 0 && d.retry_after_ms < quotaRetry)) quotaRetry = d.retry_after_ms;
      quotaWhy += (quotaWhy.empty() ? "" : "; ") + why.message;
    };
    if ((ch.cfg.rpm > 0 || ch.cfg.tpm > 0 || ch.cfg.max_concurrent > 0) &&
        std::find(charged.begin(), charged.end(), &ch) == charged.end()) {
      Held h{cluster::Subject{"ch:" + ch.cfg.name, {}}, cluster::Charge{ctx.id, estTokens, 0}, &ch, nullptr};
      h.subject.spec.rpm = ch.cfg.rpm;
      h.subject.spec.tpm = ch.cfg.tpm;
      h.subject.spec.max_concurrent = ch.cfg.max_concurrent;
      auto d = co_await limiter.acquire(h.subject, h.charge);
      if (!d.allowed) {
        std::string who = "channel " + ch.cfg.name;
        refuse(d, who);
        attempts.skipChannel(pick);
        continue;
      }
      charged.push_back(&ch);
      held.push_back(std::move(h));
    }
    std::size_t keyHeld = held.size();
    if (ch.cfg.key_rpm > 0 || ch.cfg.key_tpm > 0) {
      Held h{cluster::Subject{"uk:" + ch.cfg.name + ":" + pick.key->ref, {}}, cluster::Charge{ctx.id, estTokens, 0},
             &ch, pick.key};
      h.subject.spec.rpm = ch.cfg.key_rpm;
      h.subject.spec.tpm = ch.cfg.key_tpm;
      auto d = co_await limiter.acquire(h.subject, h.charge);
      if (!d.allowed) {
        std::string who = "key " + pick.key->id + " of channel " + ch.cfg.name;
        refuse(d, who);
        if (pick.probe) ch.health->probing.store(false);
        continue;  // the key stays in the tried set; the channel's other keys are next
      }
      held.push_back(std::move(h));
    }
    rec.attempts = n;
    rec.channel = ch.cfg.name;
    rec.key_id = pick.key->id;
    const auto attemptStart = Clock::now();
    auto a = co_await relay.attempt(pick, n);
    a.duration_ms = msSince(attemptStart);
    snap.router->report(pick, a.outcome, a.status, a.retry_after_ms, a.why);
    appendAttempt(rec.attempts_json, pick, a);
    if (a.delivered) {
      // A success settled before its last bytes went out; any other answer (an error the
      // client must fix, a stream that broke after it started) settles with what is known.
      if (relay.beginSettle()) co_await relay.settleHeld(&pick);
      co_return;
    }
    // A failed attempt used the key's request but none of its tokens.
    if (keyHeld < held.size()) {
      auto h = std::move(held[keyHeld]);
      held.erase(held.begin() + static_cast<std::ptrdiff_t>(keyHeld));
      co_await limiter.settle(h.subject, h.charge, 0, 0);
    }
    summary.push_back(fmt::format("#{} {} key {}: {}", n, ch.cfg.name, pick.key->id, a.why));
    allTimeouts = allTimeouts && a.timeout;
    all429 = all429 && a.status == 429;
    if (a.status == 429) retryAfter = std::max(retryAfter, a.retry_after_ms);
    attempts.failed(pick, a.outcome);
    if (n < maxAttempts) metrics::registry().retry(ch.cfg.name, a.timeout ? "timeout" : a.status ? std::to_string(a.status) : "connect");
    ++n;
  }

  std::string joined;
  for (const auto& s : summary) joined += (joined.empty() ? "" : "; ") + s;
  http::Response res;
  if (rec.attempts == 0 && quotaRetry >= 0) {
    LimitRefusal why;
    why.type = "rate_limit_error";
    why.code = "rate_limit_exceeded";
    why.message = "every channel that serves this model is at its rate limit: " + quotaWhy;
    why.retry_after_ms = quotaRetry;
    res = refusalResponse(call.wire, ctx, rec, why, relay.rate_headers);
  } else if (!summary.empty() && all429 && rec.attempts > 0) {
    res = fail(429, "rate_limit_error", "upstream_rate_limited",
               "every upstream key is rate limited: " + joined);
  } else if (rec.attempts == 0 && retryAfter > 0) {
    res = fail(429, "rate_limit_error", "upstream_rate_limited", joined);
  } else if (allTimeouts && rec.attempts > 0) {
    res = fail(504, "server_error", "upstream_timeout", "every upstream attempt timed out: " + joined);
  } else if (rec.attempts == 0 && summary.empty()) {
    // Nothing was tried: every key of every candidate channel is disabled (or has no key).
    std::string why;
    for (const auto* c : relay.candidates_seen) {
      std::size_t disabled = 0;
      for (const auto& k : c->keys) disabled += k.health->disabled.load(std::memory_order_relaxed) ? 1 : 0;
      why += fmt::format("{}channel {}: {} of {} keys disabled", why.empty() ? "" : "; ", c->cfg.name, disabled, c->keys.size());
    }
    res = fail(503, "server_error", "no_upstream_key",
               "no upstream key is available for this model (" + why +
                   "); enable one with POST /admin/api/upstream-keys/{ref}/enable or add a key");
  } else {
    res = fail(502, "server_error", "upstream_unavailable",
               fmt::format("all {} upstream attempts failed: {}", rec.attempts, joined.empty() ? "no channel available" : joined));
  }
  if (retryAfter > 0 && res.find(bhttp::field::retry_after) == res.end())
    res.set(bhttp::field::retry_after, std::to_string((retryAfter + 999) / 1000));
  res.set("x-sluice-attempts", std::to_string(rec.attempts));
  for (const auto& [k, v] : relay.rate_headers) res.set(k, v);
  co_await r.send(std::move(res));
}


// The request's text as the guardrail webhook sees it (after redaction).
std::string reviewPayload(const RequestContext& ctx, const Caller& caller, std::string_view model,
                          const std::vector<pipeline::OutgoingText>& texts, std::string_view phase,
                          std::string_view answer) {
  std::string out;
  out.reserve(256);
  out.append("{\"phase\":");
  appendJsonString(out, phase);
  out.append(",\"request_id\":");
  appendJsonString(out, ctx.id);
  out.append(",\"model\":");
  appendJsonString(out, model);
  out.append(",\"key\":");
  if (caller.vk) {
    out.append("{\"id\":").append(std::to_string(caller.vk->id)).append(",\"name\":");
    appendJsonString(out, caller.vk->name);
    out.append("}");
  } else {
    out.append("null");
  }
  out.append(",\"messages\":[");
  bool first = true;
  for (const auto& t : texts) {
    if (!first) out.push_back(',');
    first = false;
    out.append("{\"role\":");
    appendJsonString(out, t.role);
    out.append(",\"text\":");
    appendJsonString(out, t.text);
    out.append("}");
  }
  out.append("]");
  if (phase == "response") {
    out.append(",\"response\":");
    appendJsonString(out, answer);
  }
  out.append("}");
  return out;
}

std::string reviewPayloadOf(const Relay& relay, std::string_view phase, std::string_view answer) {
  return reviewPayload(relay.ctx, *relay.caller, relay.facts.model, relay.outgoing, phase, answer);
}

// A cached entry with the tokens of this request's scope opened (the entry keeps them sealed).
std::shared_ptr<const cache::Entry> restoredEntry(const std::shared_ptr<const cache::Entry>& e,
                                                  const redact::TokenCipher& cipher, redact::RestoreStats& st,
                                                  const redact::SealMemo* memo) {
  std::shared_ptr<cache::Entry> copy;
  for (std::size_t i = 0; i < e->response.content.size(); ++i) {
    const auto& part = e->response.content[i];
    const bool args = part.kind == providers::Part::Kind::ToolCall;
    const std::string& text = args ? part.arguments : part.text;
    if (text.find(redact::kTokenPrefix) == std::string::npos) continue;
    std::string restored = redact::restoreAll(text, cipher, args ? 1 : 0, &st, memo);
    if (restored == text) continue;
    if (!copy) copy = std::make_shared<cache::Entry>(*e);
    auto& dst = copy->response.content[i];
    (args ? dst.arguments : dst.text) = std::move(restored);
    if (i < copy->pieces.size()) copy->pieces[i].clear();  // one piece: the delta sizes changed
  }
  return copy ? std::shared_ptr<const cache::Entry>(std::move(copy)) : e;
}

// Answers from a cache entry, streamed or whole, in the client's format.
// `sealed`: the entry as stored (for the log when `e` had tokens opened).
boost::asio::awaitable<void> replayHit(Relay& relay, const cache::Entry& e, const cache::Entry& sealed) {
  auto& r = relay.r;
  auto& rec = relay.rec;
  const auto& ctx = relay.ctx;
  const auto fmt = relay.clientFormat();
  cache::ReplayOptions ro;
  ro.include_usage = relay.client_asked_usage;
  ro.gemini_json_array = relay.geminiJsonArray();
  if (relay.responsesClient()) {
    // The Responses answer echoes request fields: take them from a translation of this request.
    std::string scratch;
    providers::RequestInfo info;
    providers::TranslateContext tc;
    if (!providers::translateRequest(fmt, providers::Format::OpenAIChat, relay.req.body(), scratch, tc, &info))
      ro.responses_echo = std::move(info.responses_echo);
  }
  const std::int64_t age = std::max<std::int64_t>(0, (unixNowMs() - e.stored_at_ms) / 1000);
  rec.channel = "cache";
  rec.status = e.status;
  rec.attempts = 0;
  if (e.response.usage.input >= 0) rec.input_tokens = e.response.usage.input;
  if (e.response.usage.output >= 0) rec.output_tokens = e.response.usage.output;
  const bool logSealed = &e != &sealed && relay.body_cap > 0;
  if (logSealed) relay.keepBody(cache::replayWhole(fmt, sealed, ro));
  if (relay.stream) {
    std::vector<std::string> chunks = cache::replayStream(fmt, e, ro);
    std::string lines;
    lines.append(ro.gemini_json_array ? "Content-Type: application/json\r\n" : "Content-Type: text/event-stream\r\nCache-Control: no-cache\r\n");
    lines.append("x-request-id: ").append(ctx.id).append("\r\n");
    lines.append("x-sluice-channel: cache\r\nx-sluice-attempts: 0\r\n");
    lines.append("age: ").append(std::to_string(age)).append("\r\n");
    relay.appendOwnHeaderLines(lines);
    co_await r.beginStream(e.status, "OK", lines);
    rec.ttfb_ms = msSince(ctx.start);
    for (std::size_t i = 0; i < chunks.size(); ++i) {
      if (!logSealed) relay.keepBody(chunks[i]);
      const bool last = i + 1 == chunks.size();
      bool written = last ? co_await r.writeLastChunk(chunks[i]) : co_await r.writeChunk(chunks[i]);
      if (!written) {
        rec.status = 499;
        rec.error = "client closed the connection mid-stream";
        co_return;
      }
    }
    if (!r.finished()) co_await r.endStream();
    co_return;
  }
  http::Response res{static_cast<bhttp::status>(e.status), 11};
  res.set(bhttp::field::content_type, "application/json");
  res.set("x-request-id", ctx.id);
  res.set("x-sluice-channel", "cache");
  res.set("x-sluice-attempts", "0");
  res.set(bhttp::field::age, std::to_string(age));
  relay.setOwnHeaders(res);
  res.body() = cache::replayWhole(fmt, e, ro);
  if (!logSealed) relay.keepBody(res.body());
  rec.ttfb_ms = msSince(ctx.start);
  co_await r.send(std::move(res));
}

// The protect-and-save stages between admission and the relay: prompt-injection screening,
// redaction, the guardrail webhook, then the response cache. Every refusal here answers in the
// caller's format; the caller settles the limits held.
boost::asio::awaitable<void> protectAndRelay(const Snapshot& snap, upstream::Pool& pool, cluster::Limiter& limiter,
                                             cache::ResponseCache* cache, const Caller& caller, Relay& relay,
                                             std::vector<const routing::Channel*> candidates, std::int64_t estTokens) {
  const auto& sf = *snap.safety;
  const auto& cfg = *snap.cfg;
  auto& rec = relay.rec;
  auto& r = relay.r;
  auto& req = relay.req;
  const auto& ctx = relay.ctx;
  const auto& call = relay.call;
  const auto* vk = caller.vk;
  const auto& firstCh = candidates.front()->cfg;
  auto& counters = metrics::registry().safety;
  auto fail = [&](int status, std::string_view type, std::string_view code, const std::string& msg) {
    auto res = failure(call.wire, ctx, rec, status, type, code, msg);
    relay.setOwnHeaders(res);
    return res;
  };
  const bool translatable = relay.translatable;

  // Screening: the key's and the channel's settings over the gateway's default; when both are
  // set the stricter one applies (either may be the one that must not be weakened).
  config::ScreenAction screenAction = snap.screeningDefault();
  if (firstCh.screening || (vk && vk->screening)) {
    const auto keyAction = vk && vk->screening ? *vk->screening : config::ScreenAction::Off;
    const auto chAction = firstCh.screening.value_or(config::ScreenAction::Off);
    screenAction = std::max(keyAction, chAction);
  }
  const bool screening = translatable && screenAction != config::ScreenAction::Off;
  const bool redacting = translatable && snap.redactionOn();
  const auto* webhook = translatable && snap.guardrailOn() ? sf.webhook() : nullptr;
  std::vector<pipeline::OutgoingText> outgoing;
  if (screening || redacting || webhook) {
    // Tokens are sealed per caller: the key's limiter subject id ("vk:ID") names it already.
    static const std::string kMasterScope = "master";
    const std::string& scope = vk ? vk->subject.id : kMasterScope;
    std::shared_ptr<const redact::TokenCipher> cipher = redacting ? sf.cipherFor(scope) : nullptr;
    std::optional<redact::Redactor> redactor;
    std::shared_ptr<redact::SealMemo> memo;
    if (redacting) {
      memo = std::make_shared<redact::SealMemo>();
      redactor.emplace(sf.rules(), cipher.get(), memo.get());
    }
    pipeline::ScanOptions so;
    so.collect_user_text = screening;
    so.collect_outgoing = webhook != nullptr;
    const auto parsed = std::move(relay.parsed_body);  // freed once scanned
    pipeline::RequestScan scan = pipeline::scanRequest(relay.clientFormat(), req.body(), redactor ? &*redactor : nullptr,
                                                       so, parsed ? &parsed->doc : nullptr);
    if (scan.ok && screening && !scan.user_text.empty()) {
      counters.screened_total.fetch_add(1, std::memory_order_relaxed);
      const pipeline::ScreenResult verdict = sf.screen(scan.user_text);
      if (verdict.flagged) {
        const std::string why = verdict.deny.empty()
                                    ? fmt::format("prompt-injection score {:.2f} (threshold {:.2f})", verdict.score, sf.threshold())
                                    : fmt::format("the prompt matches the deny-list pattern {}", verdict.deny);
        if (!verdict.deny.empty()) counters.screened("deny_hit");
        switch (screenAction) {
          case config::ScreenAction::Block: {
            counters.screened("blocked");
            spdlog::info("request {}: blocked by the prompt-injection screen: {}", ctx.id, why);
            http::Response reply = fail(400, "invalid_request_error", "prompt_injection_detected",
                                        "the request was refused by the gateway's prompt-injection screen: " + why);
            co_await r.send(std::move(reply));
            co_return;
          }
          case config::ScreenAction::Warn:
            counters.screened("flagged_warn");
            relay.extra_headers.emplace_back("x-sluice-screening", fmt::format("flagged; score={:.2f}", verdict.score));
            break;
          case config::ScreenAction::Log:
          case config::ScreenAction::Off:
            counters.screened("flagged_log");
            break;
        }
        spdlog::info("request {}: flagged by the prompt-injection screen ({}): {}", ctx.id,
                     config::screenActionName(screenAction), why);
        rec.error = "screening: " + why;  // noted in the log even though the request goes on
      }
    }
    if (scan.ok && redacting) {
      if (!scan.blocked_rule.empty()) {
        counters.redacted(scan.blocked_rule, "block");
        http::Response reply = fail(400, "invalid_request_error", "redaction_blocked",
                                    fmt::format("the request contains data the gateway may not send upstream ({} in {}); "
                                                "remove it and retry", scan.blocked_rule, scan.blocked_path));
        co_await r.send(std::move(reply));
        co_return;
      }
      for (const auto& rule : scan.rules_hit) counters.redacted(rule, "redact");
      if (scan.changed) req.body() = std::move(scan.body);
      if (scan.encrypted > 0 && cipher) {
        relay.restore_cipher = cipher;
        relay.restore_stats = std::make_shared<redact::RestoreStats>();
        relay.restore_memo = std::move(memo);
        relay.force_translate = true;
      }
    }
    outgoing = std::move(scan.outgoing);
  }
  relay.parsed_body.reset();  // not needed past here (when no stage scanned it)
  relay.caller = &caller;
  if (cfg.store.log_bodies && redacting) rec.request_body = req.body().substr(0, cfg.store.log_body_max_bytes);

  if (webhook) {
    const std::string payload = reviewPayload(ctx, caller, relay.facts.model, outgoing, "request", {});
    guard::Verdict v = co_await guard::review(pool, *webhook, payload);
    const char* name = v.action == guard::Verdict::Action::Failed && v.timed_out ? "timeout" : guard::verdictName(v.action);
    counters.guardrail(name);
    switch (v.action) {
      case guard::Verdict::Action::Allow: break;
      case guard::Verdict::Action::Warn:
        relay.extra_headers.emplace_back("x-sluice-guardrail", "warn");
        break;
      case guard::Verdict::Action::Block: {
        http::Response reply = fail(400, "invalid_request_error", "guardrail_blocked",
                                    "the request was refused by the gateway's guardrail" +
                                        (v.reason.empty() ? std::string() : ": " + v.reason));
        co_await r.send(std::move(reply));
        co_return;
      }
      case guard::Verdict::Action::Failed:
        spdlog::warn("request {}: guardrail webhook failed ({}): {}", ctx.id, sf.failOpen() ? "fail_open" : "fail_closed",
                     v.reason);
        if (!sf.failOpen()) {
          http::Response reply = fail(503, "api_error", "guardrail_unavailable",
                                      "the gateway's guardrail could not review the request (" + v.reason +
                                          ") and is configured fail_closed; retry later");
          co_await r.send(std::move(reply));
          co_return;
        }
        relay.extra_headers.emplace_back("x-sluice-guardrail", "unavailable");
        break;
    }
  }

  if (webhook && sf.reviewResponse() && !relay.stream) {
    relay.review_answer = webhook;
    relay.review_fail_open = sf.failOpen();
    relay.outgoing = outgoing;
  }

  // The exact cache, on the (redacted) body.
  const auto& cc = sf.cache();
  if (cache && translatable) {
    std::string_view cacheControl = req[bhttp::field::cache_control];
    std::string_view sluiceCache = req["x-sluice-cache"];
    const cache::RequestControls controls = cache::parseRequestControls(cacheControl, sluiceCache);
    cache::CacheSettings gateway{snap.cacheOn(), cc.ttl};
    cache::CacheSettings keySettings;
    if (vk) keySettings = cache::CacheSettings{vk->cache, vk->cache_ttl};
    cache::CacheSettings channel{firstCh.cache, firstCh.cache_ttl};
    const cache::CacheDecision d = cache::decide(controls, gateway, keySettings, channel);
    if (d.read || d.write) {
      std::optional<std::int64_t> vkId;
      if (vk) vkId = vk->id;
      const std::string ns = cache::namespaceFor(vkId, cc.shared);
      cache::KeyResult kr = cache::makeCacheKey(relay.clientFormat(), req.body(), ns, call.model);
      if (kr.key) {
        if (d.read) {
          const cache::CacheKey& key = *kr.key;
          std::shared_ptr<const cache::Entry> hit = co_await cache->get(key);
          if (hit) {
            std::shared_ptr<const cache::Entry> sealed = hit;
            if (relay.restore_cipher) hit = restoredEntry(hit, *relay.restore_cipher, *relay.restore_stats, relay.restore_memo.get());
            relay.extra_headers.emplace_back("x-sluice-cache", "hit");
            // A hit costs nothing upstream: the limits get their reservations back, and the
            // metrics count what it would have cost.
            relay.settled = true;
            for (auto& h : relay.held) co_await limiter.settle(h.subject, h.charge, 0, 0.0);
            relay.held.clear();
            if (relay.price) {
              const auto& u = hit->response.usage;
              double saved = pipeline::PriceTable::cost(*relay.price, std::max<std::int64_t>(u.input, 0),
                                                        std::max<std::int64_t>(u.output, 0), std::max<std::int64_t>(u.cached, 0));
              counters.cache_saved_micro_usd.fetch_add(static_cast<std::uint64_t>(saved * 1e6), std::memory_order_relaxed);
            }
            co_await replayHit(relay, *hit, *sealed);
            if (relay.restore_stats) relay.countRestored(*relay.restore_stats);
            co_return;
          }
          relay.extra_headers.emplace_back("x-sluice-cache", "miss");
        } else {
          relay.extra_headers.emplace_back("x-sluice-cache", "refresh");
        }
        if (d.write) {
          relay.cache = cache;
          relay.cache_key = *kr.key;
          relay.cache_ttl = d.ttl;
          relay.cache_max_entry = cc.max_entry_bytes;
          relay.force_translate = true;  // Responses clients: record a decodable stream
        }
      } else {
        relay.extra_headers.emplace_back("x-sluice-cache", "uncacheable");
      }
    }
  }

  co_await relayWithFailover(snap, limiter, relay, std::move(candidates), estTokens);
}
}  // namespace

boost::asio::awaitable<void> proxy(const Snapshot& snap, upstream::Pool& pool, cluster::Limiter& limiter,
                                   cache::ResponseCache* cache, const Caller& caller, http::Request& req, http::Responder& r,
                                   const RequestContext& ctx, const ClientCall& call, RequestRecord& rec) {
  auto fail = [&](int status, std::string_view type, std::string_view code, const std::string& msg) {
    return failure(call.wire, ctx, rec, status, type, code, msg);
  };

  // Parse the body once: the model picks the channels, stream decides the relay.
  const auto& text = req.body();
  const auto& cfg = *snap.cfg;
  // With redaction on, bodies are logged once redacted (in protectAndRelay); a request refused
  // before that logs none, so the log never holds what redaction keeps from leaving.
  if (cfg.store.log_bodies && !snap.redactionOn()) rec.request_body = text.substr(0, cfg.store.log_body_max_bytes);
  // When protect stages will read the body too, the parse is kept for them (in storage of this
  // request's own: the per-thread arena does not outlive a suspension).
  const bool keepParse = snap.redactionOn() || snap.guardrailOn() || snap.screeningDefault() != config::ScreenAction::Off ||
                         (caller.vk && caller.vk->screening);
  auto kept = keepParse ? std::make_unique<ParsedBody>() : nullptr;
  BodyFacts facts = inspectBody(text, call, kept ? &kept->doc : nullptr);
  if (!facts.error.empty()) {
    http::Response reply = fail(400, "invalid_request_error", facts.error_code, facts.error);
    co_await r.send(std::move(reply));
    co_return;
  }
  const std::string& model = facts.model;
  const bool stream = facts.stream;
  // The name reaches upstream URLs and logs: it follows the model-name rule before any routing
  // (so a channel glob only ever sees valid names) and any upstream byte.
  if (auto problem = routing::modelNameProblem(model)) {
    rec.model = routing::printableModelName(model);
    http::Response reply = fail(400, "invalid_request_error", "invalid_model", routing::modelNameError(model, *problem));
    co_await r.send(std::move(reply));
    co_return;
  }
  rec.model = model;
  rec.stream = stream;
  const auto* vk = caller.vk;

  std::string routedModel;
  auto candidates = snap.router->candidates(model, routedModel);
  if (vk && !vk->allowsModel(model) && !vk->allowsModel(routedModel)) {
    http::Response reply = fail(403, "permission_error", "model_not_allowed",
                                fmt::format("this key ({}) may not use model \"{}\"", vk->name, model));
    co_await r.send(std::move(reply));
    co_return;
  }
  // Gemini and Azure channels put the model in the URL path as one segment: one that cannot take
  // this name (a '/' in it) is no candidate, and when no other channel serves it, the client
  // hears why.
  if (!candidates.empty()) {
    std::string pathProblem;
    std::erase_if(candidates, [&](const routing::Channel* c) {
      auto p = providers::pathModelProblem(c->cfg.type, c->upstreamModel(routedModel));
      if (p && pathProblem.empty())
        pathProblem = fmt::format("\"model\" \"{}\" cannot be sent to channel \"{}\": the name it goes upstream as {}",
                                  routing::printableModelName(model), c->cfg.name, *p);
      return p.has_value();
    });
    if (candidates.empty()) {
      http::Response reply = fail(400, "invalid_request_error", "invalid_model", pathProblem);
      co_await r.send(std::move(reply));
      co_return;
    }
  }
  // Channels of the client's own format take the request as it is; chat requests are
  // translated between the OpenAI and Anthropic formats. When the preferred channel can take it
  // neither way, say so rather than quietly answering from a lower-priority one.
  const bool translatable = (call.wire == Wire::OpenAI && (call.op == "/chat/completions" || call.op == "/responses")) ||
                            (call.wire == Wire::Anthropic && call.op == "/v1/messages") ||
                            (call.wire == Wire::Gemini && (call.op == "generateContent" || call.op == "streamGenerateContent"));
  auto sameWire = [&](const routing::Channel* c) { return translatable || channelWire(c->cfg.type) == call.wire; };
  if (!candidates.empty() && !sameWire(candidates.front())) {
    const auto* c = candidates.front();
    http::Response reply = fail(501, "invalid_request_error", "format_not_supported",
                                fmt::format("model \"{}\" is served by channel \"{}\" of type {}, and relaying "
                                            "{}-format requests to that provider's API is not supported yet",
                                            model, c->cfg.name, config::channelTypeName(c->cfg.type),
                                            wireName(call.wire)));
    co_await r.send(std::move(reply));
    co_return;
  }
  std::erase_if(candidates, [&](const routing::Channel* c) { return !sameWire(c); });
  if (candidates.empty()) {
    auto names = snap.router->modelNames();
    std::string list;
    std::size_t shown = 0;
    for (std::size_t i = 0; i < names.size() && shown < 50; ++i) {
      if (vk && !vk->allowsModel(names[i])) continue;
      list += (shown++ ? ", " : "") + names[i];
    }
    http::Response reply = fail(404, "invalid_request_error", "model_not_found",
                         fmt::format("model \"{}\" is not served by any channel; available: {}", model,
                                     list.empty() ? "(none configured)" : list));
    co_await r.send(std::move(reply));
    co_return;
  }
  if (vk) {
    std::erase_if(candidates, [&](const routing::Channel* c) { return !vk->allowsChannel(c->cfg.name); });
    if (candidates.empty()) {
      http::Response reply = fail(403, "permission_error", "channel_not_allowed",
                                  fmt::format("this key ({}) may not use any channel that serves model \"{}\"",
                                              vk->name, model));
      co_await r.send(std::move(reply));
      co_return;
    }
  }

  // What goes upstream: the original bytes unless the model name or usage option must change.
  bool injectUsage = call.wire == Wire::OpenAI && stream && !facts.asked_usage && call.op == "/chat/completions";
  Relay relay{snap, pool, req, r, ctx, call, rec, facts, routedModel, stream, injectUsage,
              Deadline{ctx.start + cfg.routing.timeouts.total}};
  relay.client_asked_usage = facts.asked_usage;
  relay.translatable = translatable;
  relay.parsed_body = std::move(kept);
  if (cfg.store.log_bodies) relay.body_cap = cfg.store.log_body_max_bytes;

  const std::int64_t estTokens = estimateTokens(text, facts.max_tokens);
  relay.limiter = &limiter;
  relay.price = snap.prices->find(routedModel);
  const auto& price = relay.price;
  if (vk && vk->subject.spec.any()) {
    double estCost = price ? pipeline::PriceTable::cost(*price, static_cast<std::int64_t>(text.size() / 4),
                                                        facts.max_tokens > 0 ? facts.max_tokens : kDefaultOutputEstimate, 0)
                           : 0.0;
    Held h{vk->subject, cluster::Charge{ctx.id, estTokens, estCost}, nullptr, nullptr};
    auto d = co_await limiter.acquire(h.subject, h.charge);
    relay.rate_headers = rateLimitHeaders(d);
    if (!d.allowed) {
      std::string who = "key " + vk->name;
      auto why = refusalFor(d, who, estTokens);
      http::Response reply = refusalResponse(call.wire, ctx, rec, why, relay.rate_headers);
      co_await r.send(std::move(reply));
      co_return;
    }
    relay.held.push_back(std::move(h));
  }

  std::exception_ptr failure;
  try {
    co_await protectAndRelay(snap, pool, limiter, cache, caller, relay, std::move(candidates), estTokens);
  } catch (...) {
    failure = std::current_exception();
  }
  // Every path that did not settle already (no channel answered, an exception): the caller's
  // own charge gets what usage is known, the channels' and keys' give their tokens back.
  if (relay.beginSettle()) co_await relay.settleHeld(nullptr);
  if (failure) std::rethrow_exception(failure);
}

}  // namespace sluice::gateway
