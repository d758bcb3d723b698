#include "gateway/Relay.hpp"

#include "gateway/CloudTokens.hpp"
#include "providers/anthropic/VertexBody.hpp"
#include "core/Ascii.hpp"

#include <fmt/format.h>
#include <boost/beast/http/field.hpp>
#include <boost/json/monotonic_resource.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/parser.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>

#include <algorithm>
#include <optional>

#include <spdlog/spdlog.h>

#include "cache/Controls.hpp"
#include "cache/Recorder.hpp"
#include "cache/Replay.hpp"
#include "config/Scalars.hpp"
#include "cloud/Subscription.hpp"
#include "core/Clock.hpp"
#include "core/JsonText.hpp"
#include "gateway/BodyFacts.hpp"
#include "gateway/CommitGate.hpp"
#include "gateway/LimitRefusal.hpp"
#include "gateway/ObjectRoutes.hpp"
#include "gateway/StreamTaps.hpp"
#include "gateway/stages/Stages.hpp"
#include "guard/Webhook.hpp"
#include "http/Framing.hpp"
#include "metrics/Metrics.hpp"
#include "pipeline/Protect.hpp"
#include "providers/Translate.hpp"
#include "providers/UpstreamPath.hpp"
#include "providers/openai/ResponsesUpstream.hpp"
#include "redact/Redactor.hpp"
#include "redact/Restorer.hpp"
#include "routing/ModelName.hpp"
#include "telemetry/RequestTrace.hpp"

namespace sluice::gateway::relay {

namespace json = boost::json;

namespace {

constexpr std::size_t kMaxErrorBody = 64u * 1024;
// What Bedrock's ConverseStream answers in (AWS's binary event-stream framing).
constexpr std::string_view kAwsEventStream = "application/vnd.amazon.eventstream";
constexpr std::size_t kMaxWholeBody = 64u << 20;

bool isHopByHop(std::string_view name) {
  static constexpr std::string_view kSkip[] = {
      "connection", "keep-alive",        "proxy-connection", "proxy-authorization", "te",
      "trailer",    "transfer-encoding", "upgrade",          "content-length",      "host"};
  return std::any_of(std::begin(kSkip), std::end(kSkip), [&](std::string_view s) { return sluice::iequals(s, name); });
}

// Client headers that must not reach the provider: our own credentials and controls, and
// encodings we would have to undo to read the stream.
bool dropTowardUpstream(std::string_view name) {
  if (isHopByHop(name)) return true;
  static constexpr std::string_view kDrop[] = {"authorization",   "x-api-key", "x-goog-api-key",
                                               "accept-encoding", "cookie",    "expect"};
  if (std::any_of(std::begin(kDrop), std::end(kDrop), [&](std::string_view s) { return sluice::iequals(s, name); }))
    return true;
  return name.size() >= 9 && sluice::iequals(name.substr(0, 9), "x-sluice-");
}

// A wait of this attempt's (its connect, its first byte) as a child of its span.
void traceWait(Exchange& ex, std::string_view name, Clock::time_point from, const boost::system::error_code& ec) {
  telemetry::RequestTrace& t = *ex.trace;
  const std::size_t i = t.add(name, t.attempt, from, Clock::now());
  if (telemetry::SpanRecord* s = t.at(i); s && ec) {
    s->status = telemetry::StatusCode::Error;
    s->status_message = ec.message();
  }
}

bool dropTowardClient(std::string_view name) {
  if (isHopByHop(name)) return true;
  static constexpr std::string_view kDrop[] = {"set-cookie", "server", "alt-svc", "date"};
  return std::any_of(std::begin(kDrop), std::end(kDrop), [&](std::string_view s) { return sluice::iequals(s, name); });
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

// How long a key should rest, as the provider says: Retry-After (or retry-after-ms), else the
// reset of the rate-limit window that ran out (OpenAI's x-ratelimit-reset-requests/-tokens, for
// the one whose remaining count is 0). 0: the provider does not say.
std::int64_t providerRetryMs(const bhttp::fields& h) {
  if (auto ms = parseRetryAfterMs(h); ms > 0) return ms;
  std::int64_t best = 0;
  for (std::string_view what : {"requests", "tokens"}) {
    std::string remaining = "x-ratelimit-remaining-";
    remaining.append(what);
    if (h[remaining] != "0") continue;
    std::string reset = "x-ratelimit-reset-";
    reset.append(what);
    best = std::max(best, routing::resetDurationMs(h[reset]));
  }
  return best;
}

const char* outcomeAction(Outcome o) {
  switch (o) {
    case Outcome::KeyRetry:
      return "retry";
    case Outcome::ChannelFailure:
      return "failover";
    case Outcome::KeyCooldown:
      return "cooldown";
    case Outcome::KeyDisable:
      return "disable";
    case Outcome::Fallback:
      return "fallback";
    case Outcome::ClientError:
      return "return";
    case Outcome::Success:
      break;
  }
  return "success";
}

void recordUsage(RequestRecord& rec, const Usage& u) {
  rec.input_tokens = u.prompt_tokens;
  rec.output_tokens = u.completion_tokens;
  rec.cached_tokens = u.cached_tokens;
  rec.cache_write_tokens = u.cache_write_tokens;
  rec.reasoning_tokens = u.reasoning_tokens;
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

}  // namespace

// Whether `lines` are whole HTTP field lines ("name: value\r\n"...): a token for each name that is
// not one of the framing's (Content-Length, Transfer-Encoding, Host, Connection...), no CR, LF or
// NUL inside a value. What a stage adds to an upstream head must be, or it could smuggle a second
// request or a second length past the gateway's own.
bool wellFormedFieldLines(std::string_view lines) {
  while (!lines.empty()) {
    const std::size_t end = lines.find("\r\n");
    if (end == std::string_view::npos) return false;
    const std::string_view line = lines.substr(0, end);
    const std::size_t colon = line.find(':');
    if (colon == 0 || colon == std::string_view::npos) return false;
    const std::string_view name = line.substr(0, colon), value = line.substr(colon + 1);
    if (!std::all_of(name.begin(), name.end(), http::isTchar)) return false;
    if (!std::all_of(value.begin(), value.end(),
                     [](char c) { return http::isFieldByte(static_cast<unsigned char>(c)); }))
      return false;
    if (isHopByHop(name)) return false;  // the framing and the Host are the relay's
    lines.remove_prefix(end + 2);
  }
  return true;
}

void Relay::noteUsageWindows(const routing::Pick& p, const bhttp::fields& head, Attempt& a) const {
  const auto kind = cloud::parseSubscriptionKind(p.channel->cfg.subscription);
  if (!kind) return;
  std::vector<std::pair<std::string, std::string>> fields;
  for (const auto& f : head) {
    const std::string_view n = f.name_string();
    auto hasPrefix = [n](std::string_view pre) { return n.size() > pre.size() && sluice::iequals(n.substr(0, pre.size()), pre); };
    if (hasPrefix("x-codex-") || hasPrefix("anthropic-ratelimit-unified-"))
      fields.emplace_back(std::string(n), std::string(f.value()));
  }
  if (fields.empty()) return;
  const std::int64_t now = unixNowMs();
  const cloud::UsageWindows w = cloud::readUsageWindows(*kind, fields, now);
  auto& h = *p.key->health;
  if (w.used_fraction >= 0) h.usage_permille.store(static_cast<int>(std::min(w.used_fraction, 10.0) * 1000));
  if (!w.exhausted) return;
  // Used up: the account rests until its window resets (an hour when the provider does not say).
  const std::int64_t rest = w.reset_at_ms > now ? w.reset_at_ms - now : 3'600'000;
  if (a.status == 429) a.retry_after_ms = std::max(a.retry_after_ms, rest);
  else
    h.coolDown(routing::nowMs() + rest, fmt::format("the subscription's usage window is used up; it resets in {} s",
                                                    (rest + 999) / 1000));
}

bool Relay::translating(const routing::Pick& p) const {
  if (continuing()) return true;  // a continuation is a request of the gateway's making
  if (codex(p) && call.translatable()) return !call.responses() || plan.force_translate || splice != nullptr;
  if (upWire(p) != call.wire) return true;
  return call.responses() &&
         (p.channel->cfg.type != config::ChannelType::OpenAI || plan.force_translate || splice != nullptr);
}

providers::Format Relay::upstreamFormat(const routing::Pick& p) const {
  if (codex(p)) return providers::Format::OpenAIResponses;
  return chatFormat(upWire(p));
}

providers::TranslateContext Relay::translateContext(const routing::Pick& p) const {
  providers::TranslateContext tc;
  tc.upstream_model = std::string(upstream_model);
  tc.openai_max_completion_tokens = p.channel->cfg.type == config::ChannelType::OpenAI;
  tc.include_usage = facts.asked_usage;
  tc.client_model = call.model;
  tc.client_stream = stream;
  tc.gemini_json_array = ex.geminiJsonArray();
  tc.responses_echo = responses_echo;
  tc.answer_id = ctx.id;
  tc.codex = codex(p);
  return tc;
}

ResponseHead Relay::responseHead(const routing::Pick& p, int status, bool sse) {
  const bool tr = translating(p);
  ResponseHead h(p, status, sse, tr ? upstreamFormat(p) : call.format(), call.format(), tr);
  if (wayback::takes(ex, Stage::kResponseHeaders)) wayback::headers(ex, h);
  return h;
}

std::optional<providers::TranslateError> Relay::prepareBody(const routing::Pick& p, std::string_view& out) {
  upstream_model = p.channel->upstreamModel(routed_model);
  std::string key = std::string(wireName(upWire(p))) + '\n' + upstream_model;
  if (codex(p)) key += "\ncodex";  // the Responses API, made fit for the Codex endpoint
  // A continuation: the client's request with the answer so far (which grows with every break).
  providers::Resume resume;
  if (continuing()) {
    resume.text = splice->text();
    resume.prefill = upstreamFormat(p) == providers::Format::AnthropicMessages;
    resume.output_so_far = splice->outputSoFar();
    key += fmt::format("\nresume {} {}", splice->breaks(), resume.text.size());
  }
  if (key != body_key) {
    body_key = std::move(key);
    body_is_original = false;
    if (translating(p)) {
      body_made.clear();
      providers::RequestInfo info;
      providers::TranslateContext tc = translateContext(p);
      if (continuing()) tc.resume = &resume;
      if (auto err = providers::translateRequest(call.format(), upstreamFormat(p), req.body(), body_made, tc, &info)) {
        body_key.clear();
        return err;
      }
      responses_echo = std::move(info.responses_echo);
    } else {
      // Gemini: the model is in the path; the rest of the OpenAI API: only a JSON body names it.
      bool rename = upstream_model != facts.model && call.wire != Wire::Gemini &&
                    (!call.passthrough || (call.json_body && !facts.model.empty() && !req.body().empty()));
      if (codex(p) && call.responses()) {
        // A Responses client's own request: the Codex endpoint wants it streamed, kept nowhere and
        // with instructions.
        auto made = providers::openai::codexRequestBody(req.body(), upstream_model);
        if (!made) {
          body_key.clear();
          return providers::TranslateError{
              400, providers::ErrorKind::InvalidRequest, "the request body must be a JSON object", {}, {}};
        }
        body_made = std::move(*made);
      } else if (rename || strip_usage) {
        body_made = rewriteBody(req.body(), facts, rename ? &upstream_model : nullptr, strip_usage);
      } else {
        body_is_original = true;
      }
    }
  }
  out = body_is_original ? std::string_view(req.body()) : std::string_view(body_made);
  // Claude on Vertex: no "model" in the body, the API version in it (made once per body key).
  if (p.channel->cfg.type == config::ChannelType::Vertex && upWire(p) == Wire::Anthropic &&
      !body_key.ends_with("\nvertex")) {
    auto vb = providers::anthropic::vertexMessagesBody(out);
    if (!vb) {
      body_key.clear();
      return providers::TranslateError{400, providers::ErrorKind::InvalidRequest,
                                       "the request body must be a JSON object", {}, {}};
    }
    body_made = std::move(*vb);
    body_is_original = false;
    body_key += "\nvertex";
    out = body_made;
  }
  return std::nullopt;
}

std::string Relay::target(const routing::Pick& p) const {
  const auto& ch = *p.channel;
  providers::TargetParts target{ch.endpoint.base_path, ch.cfg.type, ch.cfg.api_version, translating(p), stream, call.op,
                                upstream_model,        call.query,  ch.cfg.project,     ch.cfg.location};
  target.responses = codex(p);
  return providers::upstreamTarget(target);
}

std::string Relay::buildUpstreamHead(const routing::Pick& p, std::string_view sendBody,
                                     std::string_view stageLines) const {
  const auto& ch = *p.channel;
  std::string h;
  h.reserve(512);
  const Wire up = upWire(p);
  const bool azure = ch.cfg.type == config::ChannelType::Azure;
  h.append(call.passthrough ? std::string_view(req.method_string()) : std::string_view("POST"))
      .append(" ")
      .append(target(p))
      .append(" HTTP/1.1\r\n");
  h.append("Host: ").append(ch.endpoint.host_header).append("\r\n");
  bool haveType = false;
  const telemetry::RequestTrace* trace = ex.trace;
  for (const auto& f : req) {
    auto name = f.name_string();
    if (dropTowardUpstream(name)) continue;
    // Traced: the upstream gets Sluice's own trace context (below), never the client's bytes.
    if (trace && (sluice::iequals(name, "traceparent") || sluice::iequals(name, "tracestate"))) continue;
    // AWS reads x-amz-* as part of the request's authentication: only the signing stage's go.
    if (up == Wire::Bedrock && name.size() >= 6 && sluice::iequals(name.substr(0, 6), "x-amz-")) continue;
    // A subscription: the stage sends anthropic-beta (the client's flags and OAuth's) and the
    // account id; a client never names another account.
    if (!ch.cfg.subscription.empty() && (sluice::iequals(name, "anthropic-beta") || sluice::iequals(name, "chatgpt-account-id")))
      continue;
    bool overridden = false;
    for (const auto& [k, v] : ch.cfg.headers) overridden = overridden || sluice::iequals(k, name);
    if (overridden) continue;
    haveType = haveType || f.name() == bhttp::field::content_type;
    h.append(name).append(": ").append(f.value()).append("\r\n");
  }
  for (const auto& [k, v] : ch.cfg.headers) h.append(k).append(": ").append(v).append("\r\n");
  if (!stageLines.empty()) {
    if (wellFormedFieldLines(stageLines))
      h.append(stageLines);
    else
      spdlog::error("request {}: a stage's header lines for the upstream are not well-formed; not sent", ctx.id);
  }
  // A call without a body (a GET or DELETE of the files and batches endpoints) has no type and,
  // unless it is a POST, no length either.
  const bool bodiless = call.passthrough && sendBody.empty() && req.method() != bhttp::verb::post;
  if (!haveType && !bodiless) h.append("Content-Type: application/json\r\n");
  if (trace) trace->appendUpstreamHeaders(h);
  const bool vertex = ch.cfg.type == config::ChannelType::Vertex;
  // Bedrock, Vertex (and Entra keys, whose secret is ""): the signing stage's lines; a
  // subscription: the subscription stage's bearer token (the key is the credential file, never sent).
  if (!p.key->secret.empty() && up != Wire::Bedrock && !vertex && ch.cfg.subscription.empty()) {
    switch (up) {
      case Wire::OpenAI:
        h.append(azure ? "api-key: " : "Authorization: Bearer ");
        break;
      case Wire::Anthropic:
        h.append("x-api-key: ");
        break;
      case Wire::Gemini:
        h.append("x-goog-api-key: ");
        break;
      case Wire::Bedrock:
        break;
    }
    h.append(p.key->secret).append("\r\n");
  }
  if (up == Wire::Anthropic && !vertex && req["anthropic-version"].empty())
    h.append("anthropic-version: 2023-06-01\r\n");
  if (const http::RequestBody* up = r.body(); up && call.passthrough) {
    // A streamed upload: the length the client declared, or chunked as the client sent it.
    if (up->content_length)
      h.append("Content-Length: ").append(std::to_string(*up->content_length)).append("\r\n");
    else
      h.append("Transfer-Encoding: chunked\r\n");
  } else if (!bodiless) {
    h.append("Content-Length: ").append(std::to_string(sendBody.size())).append("\r\n");
  }
  h.append("\r\n");
  return h;
}

std::string Relay::responseFieldLines(const bhttp::fields& from, const routing::Pick& p, int attempts,
                                      bool json_array) const {
  std::string out;
  out.reserve(256);
  if (json_array) out.append("Content-Type: application/json\r\n");
  for (const auto& f : from) {
    if (dropTowardClient(f.name_string()) || plan.ownRateHeader(f.name_string())) continue;
    if (json_array && f.name() == bhttp::field::content_type) continue;
    // The provider's request id stays available under another name; x-request-id is ours.
    if (sluice::iequals(f.name_string(), "x-request-id"))
      out.append("x-upstream-request-id");
    else
      out.append(f.name_string());
    out.append(": ").append(f.value()).append("\r\n");
  }
  out.append("x-request-id: ").append(ctx.id).append("\r\n");
  out.append("x-sluice-channel: ").append(p.channel->cfg.name).append("\r\n");
  out.append("x-sluice-attempts: ").append(std::to_string(attempts)).append("\r\n");
  out.append("x-sluice-model: ").append(routed_model).append("\r\n");
  plan.appendLines(out);
  return out;
}

void Relay::copyResponseHeaders(const bhttp::fields& from, bhttp::fields& to, const routing::Pick& p,
                                int attempts) const {
  for (const auto& f : from) {
    if (dropTowardClient(f.name_string()) || plan.ownRateHeader(f.name_string())) continue;
    if (sluice::iequals(f.name_string(), "x-request-id"))
      to.insert("x-upstream-request-id", f.value());
    else
      to.insert(f.name_string(), f.value());
  }
  to.set("x-request-id", ctx.id);
  to.set("x-sluice-channel", p.channel->cfg.name);
  to.set("x-sluice-attempts", std::to_string(attempts));
  to.set("x-sluice-model", routed_model);
  plan.apply(to);
}

boost::asio::awaitable<Attempt> Relay::attempt(const routing::Pick& p, int attemptNo, const UpstreamAttempt* stages) {
  Opening o;
  co_await open(p, stages, o);
  co_return co_await finish(p, attemptNo, o);
}

boost::asio::awaitable<void> Relay::open(const routing::Pick& p, const UpstreamAttempt* stages, Opening& o) {
  const auto& t = snap.cfg->routing.timeouts;
  Attempt& a = o.a;
  // A hedge that lost stops at its next step: it closes what it holds and touches nothing else
  // (the request may have ended, its relay with it).
  auto lost = [&o] {
    if (!o.cancelled || !*o.cancelled) return false;
    if (o.conn) o.conn->close();
    o.done = true;
    o.a.why = "hedge lost";
    return true;
  };
  std::string_view sendBody;
  if (stages) {
    sendBody = stages->sendBody();
  } else if (auto err = prepareBody(p, sendBody)) {
    o.untranslatable = std::move(*err);
    co_return;
  }
  // A hedged attempt keeps its own copy: the body made for the other channel may replace the
  // relay's while this one is still being sent.
  if (o.cancelled != nullptr) {
    o.own_body.assign(sendBody);
    sendBody = o.own_body;
  }
  // A streamed upload: what was read ahead goes first (framed as a chunk when the client's body
  // was chunked), the rest as it arrives, once the head and those bytes are out.
  http::RequestBody* const upload = call.passthrough ? r.body() : nullptr;
  const bool chunkedUpload = upload && !upload->content_length;
  std::string framedPrefix;
  if (upload) {
    sendBody = ex.route.body_prefix;
    if (chunkedUpload && !sendBody.empty()) {
      framedPrefix = fmt::format("{:x}\r\n", sendBody.size());
      framedPrefix.append(sendBody).append("\r\n");
    }
    if (chunkedUpload) sendBody = framedPrefix;
  }
  // A bedrock channel takes signed requests only: one the signing stage did not sign is not sent
  // (it would carry no credential and fail anyway), and says so.
  if (p.channel->cfg.type == config::ChannelType::Bedrock &&
      (!stages || stages->header_lines.find("Authorization: AWS4-HMAC-SHA256 ") == std::string::npos)) {
    a.outcome = Outcome::ChannelFailure;
    a.why = "the request to a bedrock channel was not signed";
    o.done = true;
    co_return;
  }
  // Nor is a request to a subscription channel without the subscription's bearer token.
  if (!p.channel->cfg.subscription.empty() &&
      (!stages || stages->header_lines.find("Authorization: Bearer ") == std::string::npos)) {
    a.outcome = Outcome::ChannelFailure;
    a.why = "the request to a subscription channel carried no access token";
    o.done = true;
    co_return;
  }
  // Nor does a vertex key or an Entra key go without its access token.
  if (takesCloudToken(p.channel->cfg, p.key->secret) &&
      (!stages || stages->header_lines.find("Authorization: Bearer ") == std::string::npos)) {
    a.outcome = Outcome::ChannelFailure;
    a.why = "the request to a cloud channel carried no access token";
    o.done = true;
    co_return;
  }
  const std::string upHead = buildUpstreamHead(p, sendBody, stages ? std::string_view(stages->header_lines) : "");

  // A pooled connection the provider closed while idle shows up as a failed write or an
  // early EOF; that is not the provider's fault, so try once more on a fresh connection.
  for (int fresh = 0; fresh < 2; ++fresh) {
    const auto connectStart = Clock::now();
    auto [cec, c] = co_await pool.acquire(p.channel->endpoint, deadline.cap(t.connect), fresh == 0);
    if (!cec) o.conn = std::move(c);
    if (lost()) co_return;
    if (ex.trace && (cec || !o.conn->reused)) traceWait(ex, "connect", connectStart, cec);
    if (cec) {
      a.timeout = cec == boost::beast::error::timeout;
      a.why = a.timeout ? "connect timed out" : "connect failed: " + cec.message();
      o.done = true;
      co_return;
    }
    const auto sentAt = Clock::now();
    auto wec = co_await o.conn->writeRaw(upHead, sendBody, deadline.cap(t.connect));
    if (lost()) co_return;
    if (!wec && upload) {
      // From here the client's body is being spent: nothing can send it again.
      body_spent = true;
      std::string frame;
      while (!wec && !upload->done()) {
        auto [bec, piece] = co_await upload->read();
        if (bec) {
          o.conn->close();
          o.conn.reset();
          o.client_failure = upload->failure(bec);
          a.outcome = Outcome::ClientError;
          a.why = "the client's upload broke: " + bec.message();
          o.done = true;
          co_return;
        }
        if (piece.empty()) continue;
        if (chunkedUpload) {
          frame = fmt::format("{:x}\r\n", piece.size());
          wec = co_await o.conn->writeRaw(frame, piece, deadline.cap(t.idle));
          if (!wec) wec = co_await o.conn->writeRaw("\r\n", {}, deadline.cap(t.idle));
        } else {
          wec = co_await o.conn->writeRaw({}, piece, deadline.cap(t.idle));
        }
      }
      if (!wec && chunkedUpload) wec = co_await o.conn->writeRaw("0\r\n\r\n", {}, deadline.cap(t.idle));
      if (wec) {
        o.conn->close();
        o.conn.reset();
        a.timeout = wec == boost::beast::error::timeout;
        a.why = "the upload to the provider failed: " + wec.message() + " (not retried: the body is spent)";
        o.done = true;
        co_return;
      }
    }
    if (!wec) {
      o.parser.emplace();
      o.parser->body_limit(boost::none);
      wec = co_await o.conn->readHeader(*o.parser, deadline.cap(t.first_byte));
      if (lost()) co_return;
    }
    if (ex.trace) traceWait(ex, "first byte", sentAt, wec);
    if (!wec) break;
    bool stale = o.conn->reused && wec != boost::beast::error::timeout;
    o.conn->close();
    o.conn.reset();
    if (stale && fresh == 0 && !body_spent) continue;
    a.timeout = wec == boost::beast::error::timeout;
    a.why = a.timeout ? "no response header within the first_byte timeout" : "upstream failed: " + wec.message();
    o.done = true;
    co_return;
  }
  auto& head = o.parser->get();
  a.status = static_cast<int>(head.result_int());
  a.first_byte_ms = msSince(a.started);
  if (!p.channel->cfg.subscription.empty()) noteUsageWindows(p, head, a);
  if (a.status >= 400) co_return;  // finish() reads why
  const std::string_view type = head[bhttp::field::content_type];
  o.sse = (stream || call.passthrough) && (type.find("text/event-stream") != std::string_view::npos ||
                                           (upWire(p) == Wire::Bedrock && type.starts_with(kAwsEventStream)));
  // The rest of the OpenAI API: an answer that is not JSON (speech, a file's content) is relayed
  // as a stream of bytes, never held whole.
  if (call.passthrough && !o.sse && !type.starts_with("application/json")) o.sse = true;
  if (!o.sse) co_return;
  if (!call.translatable()) {
    a.first_byte_ms = -1;  // a stream's first byte is its first event the client gets
    co_return;
  }
  // Commit on the first meaningful event (chat-like calls): the upstream's first events are held,
  // unread by the tap and the stages, until one carries content, a tool call or reasoning; an
  // in-band error before it fails this attempt unseen. Bounded by first_byte from here.
  o.held_stream = true;
  CommitGate gate(translating(p) ? upstreamFormat(p) : call.format());  // the format it answers in
  const auto until = Clock::now() + t.first_byte;
  for (;;) {
    const Millis wait = std::clamp(std::chrono::ceil<Millis>(until - Clock::now()), Millis(1), t.first_byte);
    // `got` is valid until the next suspension: kept (copied) before it.
    auto [ec, got] = co_await o.conn->readBody(*o.parser, deadline.cap(wait));
    if (lost()) co_return;
    auto v = gate.feed(got);
    if (v == CommitGate::Verdict::Hold && o.parser->is_done() && !ec) v = CommitGate::Verdict::Commit;  // the end
    if (v == CommitGate::Verdict::Fail) {
      if (auto failed = inbandFailure(gate, a)) {
        o.conn->close();
        a = *failed;
        o.done = true;
        co_return;
      }
      v = CommitGate::Verdict::Commit;  // a `return` rule: the client gets the stream as it is
    }
    if (v == CommitGate::Verdict::Hold) {
      if (!ec) {
        o.held.append(got);
        continue;
      }
      // Broken or silent before any content: a failed attempt the client never sees.
      o.conn->close();
      a.outcome = Outcome::ChannelFailure;
      a.timeout = ec == boost::beast::error::timeout;
      a.why = a.timeout ? (deadline.passed() ? "the request's total timeout ran out before the first content"
                                             : "no content within the first_byte timeout")
                        : "upstream stream broke before the first content: " + ec.message();
      o.done = true;
      co_return;
    }
    o.held.append(got);  // the held events and this piece: the stream's first, as one
    o.held_ec = ec;
    a.first_byte_ms = msSince(a.started);
    co_return;
  }
}

namespace {
boost::asio::awaitable<Attempt> settled(Attempt a) {
  co_return a;
}
}  // namespace

// Not a coroutine: it hands the attempt to the coroutine that answers, so no frame of its own
// (every branch's Attempt) is held while a stream runs.
boost::asio::awaitable<Attempt> Relay::finish(const routing::Pick& p, int attemptNo, Opening& o) {
  if (o.untranslatable) return refuseUntranslatable(*o.untranslatable);
  if (o.client_failure || (o.done && o.a.outcome == Outcome::ClientError)) return clientFailure(o);
  if (o.done) return settled(o.a);
  if (o.a.status >= 400) return upstreamError(p, attemptNo, std::move(o.conn), *o.parser, std::move(o.a));
  if (!o.sse) return relayWhole(p, attemptNo, std::move(o.conn), *o.parser, o.a);
  return relayStream(p, attemptNo, o);
}

// The client's upload broke (past max_body_bytes, too slow, malformed): its answer, if the
// client is still there to read one.
boost::asio::awaitable<Attempt> Relay::clientFailure(Opening& o) {
  rec.status = o.client_failure ? o.client_failure->result_int() : 499;
  rec.error = o.a.why;
  if (o.client_failure) {
    o.client_failure->set("x-request-id", ctx.id);
    co_await r.send(std::move(*o.client_failure));
  } else {
    r.abort();
  }
  o.a.status = rec.status;
  o.a.delivered = true;
  co_return o.a;
}

boost::asio::awaitable<void> Relay::failBegunStream(int status, std::string_view code, const std::string& why,
                                                    std::string_view note) {
  const std::string message = why + std::string(note);
  std::string out;
  if (splice)  // the stream's encoder: it closes what it has open first
    splice->fail(providers::ApiError{status, providers::errorKindForStatus(status), message, {}, std::string(code)},
                 out);
  else
    out = streamErrorEvent(call.wire, status, code, message, call.format() == providers::Format::OpenAIResponses);
  // The answer still ends well framed (the error event, then the last chunk), so the client's
  // connection stays open for its next request: closing it here made a client that reuses it (as
  // fetch and the SDKs do) fail that next request with "other side closed".
  if (!out.empty()) co_await r.writeChunk(out);
  co_await r.endStream();
  rec.status = status;
  rec.error = why;
}

void Relay::giveBack(std::unique_ptr<upstream::Connection> conn, upstream::ResponseParser& parser) {
  if (parser.is_done() && parser.get().keep_alive())
    pool.release(std::move(conn));
  else
    conn->close();
}

std::optional<Attempt> Relay::inbandFailure(const CommitGate& gate, Attempt a) {
  std::string data = gate.errorData();
  snap.scrubber.scrub(data);
  std::string msg = gate.message();
  snap.scrubber.scrub(msg);
  const routing::ErrorVerdict v = snap.router->errorRules().classify(gate.status(), data);
  a.outcome = v.outcome;
  if (a.outcome == Outcome::Fallback && !fallback_left) a.outcome = Outcome::ClientError;
  if (a.outcome == Outcome::ClientError) return std::nullopt;
  a.status = gate.status();
  a.retry_after_ms = v.cooldown_ms;
  a.why = fmt::format("in-band error {} before the first content: {}", gate.status(), msg);
  if (v.rule >= 0) a.why += fmt::format(" (routing.rules[{}]: {})", v.rule, outcomeAction(v.outcome));
  return a;
}

// A request that cannot be expressed in this channel's format is the client's to fix: answered now
// rather than tried on another channel.
boost::asio::awaitable<Attempt> Relay::refuseUntranslatable(const providers::TranslateError& err) {
  Attempt a;
  a.outcome = Outcome::ClientError;
  a.status = err.status;
  a.why = err.message;
  if (continuing()) {  // the client's stream is under way: another channel may take the rest
    a.outcome = Outcome::ChannelFailure;
    a.why = "the continuation could not be made for this channel: " + err.message;
    co_return a;
  }
  http::Response res{static_cast<bhttp::status>(err.status), 11};
  res.set(bhttp::field::content_type, "application/json");
  res.set("x-request-id", ctx.id);
  res.body() = providers::errorBody(call.format(), err);
  rec.status = err.status;
  rec.error = err.message;
  co_await r.send(std::move(res));
  a.delivered = true;
  co_return a;
}

// An upstream status of 400 or more: its (bounded) body read, as it says why and the connection can
// then be reused; a refusal of the request itself is passed to the client, anything else is left to
// the failover loop.
boost::asio::awaitable<Attempt> Relay::upstreamError(const routing::Pick& p, int attemptNo,
                                                     std::unique_ptr<upstream::Connection> conn,
                                                     upstream::ResponseParser& parser, Attempt a) {
  const auto& t = snap.cfg->routing.timeouts;
  auto& head = parser.get();
  // Read the (bounded) error body: it says why, and the connection can be reused.
  std::string errBody;
  while (!parser.is_done() && errBody.size() < kMaxErrorBody) {
    auto [ec, got] = co_await conn->readBody(parser, deadline.cap(t.idle));
    errBody.append(got);
    if (ec) break;
  }
  giveBack(std::move(conn), parser);
  // Some providers quote the key they were given: nothing of it may pass this point (the
  // client's answer, the attempt list, the key's health reason, the logs).
  snap.scrubber.scrub(errBody);
  auto msg = errorMessageFromBody(errBody);
  // routing.rules, then the built-in ones, say what the answer leads to.
  // Bedrock's ModelErrorException (424: the model failed on AWS's side) is an upstream failure
  // for the routing rules, which another channel may not have.
  const int ruleStatus = upWire(p) == Wire::Bedrock && a.status == 424 ? 502 : a.status;
  const routing::ErrorVerdict v = snap.router->errorRules().classify(ruleStatus, errBody);
  a.outcome = v.outcome;
  // A fallback with no fallback model left: the client hears the upstream's answer.
  if (a.outcome == Outcome::Fallback && !fallback_left) a.outcome = Outcome::ClientError;
  a.why = v.rule < 0 ? fmt::format("upstream answered {}: {}", a.status, msg)
                     : fmt::format("upstream answered {}: {} (routing.rules[{}]: {})", a.status, msg, v.rule,
                                   outcomeAction(v.outcome));
  if (v.cooldown_ms > 0)
    a.retry_after_ms = v.cooldown_ms;
  else if (a.outcome == Outcome::KeyCooldown || a.status == 429)
    a.retry_after_ms = std::max(providerRetryMs(head), a.retry_after_ms);  // a subscription's window reset too
  if (a.outcome == Outcome::ClientError && continuing()) {
    // A continuation refused: the client's stream is under way, so another channel is asked.
    a.outcome = Outcome::ChannelFailure;
    a.why += " (a continuation)";
  }
  if (a.outcome == Outcome::ClientError) {
    // The request itself was refused: the client must fix it, another channel won't help.
    http::Response res{head.result(), 11};
    copyResponseHeaders(head, res, p, attemptNo);
    scrubFields(snap.scrubber, res);
    if (translating(p)) {
      res.body() = providers::translateError(call.format(), upstreamFormat(p), a.status, errBody, nullptr,
                                             head["x-amzn-errortype"]);
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

boost::asio::awaitable<Attempt> Relay::relayWhole(const routing::Pick& p, int attemptNo,
                                                  std::unique_ptr<upstream::Connection> conn,
                                                  upstream::ResponseParser& parser, Attempt a) {
  const auto& t = snap.cfg->routing.timeouts;
  if (continuing()) {  // the client reads a stream: an answer in one piece cannot continue it
    conn->close();
    a.outcome = Outcome::ChannelFailure;
    a.why = "the continuation was answered without a stream";
    co_return a;
  }
  std::string whole;
  if (auto cl = parser.content_length()) whole.reserve(std::min<std::uint64_t>(*cl, kMaxWholeBody));
  while (!parser.is_done()) {
    auto [ec, got] = co_await conn->readBody(parser, deadline.cap(t.idle));
    whole.append(got);
    if (ec || whole.size() > kMaxWholeBody) {
      conn->close();
      a.outcome = Outcome::ChannelFailure;
      a.timeout = ec == boost::beast::error::timeout;
      a.why = ec ? "response body broke: " + ec.message() : "response body over 64 MiB";
      co_return a;
    }
  }
  // ChatGPT's Codex endpoint streams every answer: a client that asked for one piece gets the
  // Responses object assembled from the stream, read as any whole answer from here on.
  const bool assembled = codex(p) && providers::openai::looksLikeSse(whole);
  if (assembled) {
    std::string made;
    if (auto err = providers::openai::assembleResponsesStream(whole, made)) {
      giveBack(std::move(conn), parser);
      a.outcome = Outcome::ChannelFailure;
      a.why = "the Codex endpoint's stream could not be assembled: " + err->message;
      co_return a;
    }
    whole = std::move(made);
  }
  auto& head = parser.get();
  const ResponseHead rh = responseHead(p, a.status, false);
  // The client's body: translated, or the upstream's own bytes; the stages' hooks get both (a
  // copy only when a stage may rewrite the body or reads the answer after that: it must see the
  // upstream's bytes as they came; otherwise both views are of the one body).
  const bool stagesRead = wayback::takes(ex, Stage::kResponseData | Stage::kResponseEnd);
  std::string body;
  Usage usage;
  if (rh.translated) {
    providers::Usage cu;
    if (auto err =
            providers::translateResponse(call.format(), rh.upstream_format, whole, body, translateContext(p), &cu)) {
      conn->close();
      a.outcome = Outcome::ChannelFailure;
      a.why = "upstream response could not be translated: " + err->message;
      co_return a;
    }
    usage = fromCanonical(cu);
  } else {
    usageFromBody(call.wire, whole, usage);
    if (stagesRead)
      body = whole;
    else
      body.swap(whole);  // one body for both views: no stage rewrites it
  }
  const std::string_view upstreamBytes = rh.translated || stagesRead ? std::string_view(whole) : std::string_view(body);
  if (usage.known()) recordUsage(rec, usage);
  ex.keepBody(body);  // the log keeps the answer as it came, tokens sealed
  const ResponseEnd end{.pick = p, .status = a.status, .stream = false, .upstream_body = upstreamBytes};
  if (wayback::takes(ex, Stage::kResponseData)) {
    ResponseData piece{.upstream = upstreamBytes, .out = body, .end_of_stream = true};
    if (wayback::data(ex, piece) == DataStep::Abort) {
      conn->close();
      a.outcome = Outcome::ChannelFailure;
      a.why = "the answer passed a bound of the gateway's";
      co_return a;
    }
  }
  if (wayback::takes(ex, Stage::kResponseEnd)) {
    const Step step = co_await wayback::end(ex, end);
    if (step == Step::Answered) {  // a stage sent another answer instead (guardrail)
      giveBack(std::move(conn), parser);
      a.outcome = Outcome::Success;
      a.delivered = true;
      co_return a;
    }
  }
  giveBack(std::move(conn), parser);
  rec.status = a.status;
  rec.ttfb_ms = msSince(ctx.start);
  // Files and batches: whoever answered holds them, and every later call about them goes there.
  if (call.passthrough && ex.svc.objects && a.status < 300 &&
      (call.op.starts_with("/files") || call.op.starts_with("/batches"))) {
    if (req.method() == bhttp::verb::delete_)
      ex.svc.objects->forget(call.object_id);
    else
      ex.svc.objects->learnFrom(body, p.channel->cfg.name);
  }
  // Settled and stored before the answer goes out: an immediate repeat finds both.
  if (wayback::takes(ex, Stage::kResponseCommit)) co_await wayback::commit(ex, end);
  http::Response res{head.result(), 11};
  copyResponseHeaders(head, res, p, attemptNo);
  if (assembled) res.set(bhttp::field::content_type, "application/json");
  res.body() = std::move(body);
  co_await r.send(std::move(res));
  a.outcome = Outcome::Success;
  a.delivered = true;
  co_return a;
}

// The stream's filter: translating (or decoding and encoding again, for a stage or a splice),
// bytes as they are, or events with the usage chunk stripped. A plain function: its locals (the
// translation context) stay off the frame a stream holds for its life.
std::unique_ptr<StreamTap> Relay::streamTap(const routing::Pick& p, ResponseHead& rh, bool decode) {
  StreamSplice* const sp = splice.get();
  std::unique_ptr<StreamTap> tap;
  if (decode) {
    providers::TranslateContext tc = translateContext(p);
    if (sp) {
      tc.wrap_encoder = [sp, wrap = std::move(rh.wrap_encoder)](std::unique_ptr<providers::StreamEncoder> fresh) {
        return sp->encoderFor(std::move(fresh), wrap);
      };
    } else {
      tc.wrap_encoder = std::move(rh.wrap_encoder);
    }
    tap = makeTranslatingTap(providers::makeStreamTranslator(call.format(), rh.upstream_format, tc));
  } else if (call.passthrough) {
    tap = makeByteTap();
  } else {
    tap = makeStreamTap(call.wire, strip_usage);
  }
  return tap;
}

// Why a stream ended early, for the attempt's summary and the client's error event.
std::string Relay::brokenWhy(boost::system::error_code ec, const std::optional<providers::ApiError>& inband,
                             bool stallBound, Millis stall) const {
  const bool timedOut = ec == boost::beast::error::timeout;
  if (inband) {
    std::string msg = inband->message;
    snap.scrubber.scrub(msg);
    return fmt::format("in-band error {} after the response started: {}", inband->status, msg);
  }
  if (!timedOut) return "upstream stream broke: " + ec.message();
  if (r.bytesSent() == 0) return "no first chunk within the first_byte timeout";
  if (deadline.passed()) return "the request's total timeout ran out mid-stream";  // a read waits at most what is left
  if (stallBound)
    return "upstream stream stalled: no bytes for " + config::formatDuration(stall) + " (routing.stall_timeout)";
  return "upstream stream idle past the idle timeout";
}

boost::asio::awaitable<Attempt> Relay::relayStream(const routing::Pick& p, int attemptNo, Opening& o) {
  const auto& t = snap.cfg->routing.timeouts;
  std::unique_ptr<upstream::Connection> conn = std::move(o.conn);
  upstream::ResponseParser& parser = *o.parser;
  Attempt& a = o.a;  // o outlives this (the caller's frame, or the hedge's race)
  ResponseHead rh = responseHead(p, a.status, true);
  // routing.on_stall: continue: every attempt writes through the stream's one encoder.
  StreamSplice* const sp = splice.get();
  // Decoded (and encoded again) when translated, when a stage must see the events, or when the
  // stream may have to be continued (its text known, only whole events given to the client).
  const bool decode = rh.translated || rh.wrap_encoder != nullptr || sp != nullptr;
  std::unique_ptr<StreamTap> tap = streamTap(p, rh, decode);
  // Bytes that are not events (speech, a file's content) cannot carry an error event: a break
  // after they began leaves the client a chunked body without its end, never a whole-looking one.
  const bool rawBytes =
      call.passthrough && parser.get()[bhttp::field::content_type].find("text/event-stream") == std::string_view::npos;
  auto& filter = *tap;
  const bool stagesRead = wayback::takes(ex, Stage::kResponseData);
  const ResponseEnd end{.pick = p, .status = a.status, .stream = true, .upstream_body = {}};
  std::string out;  // grows to the largest piece, up to kKeptPiece kept between reads
  static constexpr std::size_t kKeptPiece = 1024;
  auto& head = parser.get();
  bool begun = continuing();  // a continuation writes into the stream an earlier attempt began
  auto& active = metrics::registry().active_streams;
  active.fetch_add(1, std::memory_order_relaxed);
  struct Dec {
    std::atomic<std::int64_t>& g;
    ~Dec() { g.fetch_sub(1, std::memory_order_relaxed); }
  } dec{active};

  // A held stream's first piece was read by open(): the held events and the one that committed.
  bool preread = o.held_stream;
  // After the first byte: routing.stall_timeout when it is set and shorter, else the idle timeout.
  const Millis stall = snap.cfg->routing.stall_timeout;
  const bool stallBound = stall.count() > 0 && stall <= t.idle;
  const Millis midStream = stallBound ? stall : t.idle;

  for (;;) {
    // Until a byte reaches the client the first-byte timeout applies and failure is retryable.
    bool sent = r.bytesSent() > 0;
    Millis wait = sent ? midStream : t.first_byte;
    boost::system::error_code ec;
    std::string_view got;
    if (preread) {
      preread = false;
      ec = o.held_ec;
      got = o.held;
    } else {
      // The held events went out with the first piece: their copy is not kept for the stream.
      if (o.held.capacity() != 0) std::string().swap(o.held);
      // `got` is valid until this loop's first suspension (Connection::readBody): everything
      // that reads it (the filter, the log, the stages) runs before anything is written.
      // readBody's parts, inline: no coroutine frame a chunk.
      std::optional<upstream::Connection::BodyPiece> piece = conn->bufferedBody(parser);
      if (!piece) {
        const auto scope = conn->deadline(deadline.cap(wait));
        while (!piece) {
          auto [rec_ec, n] = co_await conn->readSome();
          piece = conn->afterRead(parser, rec_ec, n);
        }
      }
      std::tie(ec, got) = *piece;
    }
    out.clear();
    // One allocation for a read that found several events, not a doubling per event appended
    // (the filter's output is about its input's size: the usage nulls it drops are the difference).
    if (out.capacity() < got.size()) out.reserve(got.size() + 64);
    if (!filter.feed(got, out)) ec = boost::beast::errc::make_error_code(boost::beast::errc::message_size);
    // An error event after the answer began, held by the splice: a break like a cut one.
    std::optional<providers::ApiError> inband = sp ? sp->takeHeldError() : std::nullopt;
    if (inband) ec = boost::asio::error::connection_aborted;
    // The usual last read carries the final events and the upstream's end: send both in one write.
    bool last = parser.is_done() && !ec;
    if (last) filter.finish(out);
    // The log keeps the answer before any stage rewrites it: tokens sealed.
    ex.keepBody(rh.log_upstream_bytes ? got : std::string_view(out));
    if (stagesRead) {
      ResponseData piece{.upstream = got, .out = out, .end_of_stream = last};
      if (wayback::data(ex, piece) == DataStep::Abort) {
        ec = boost::beast::errc::make_error_code(boost::beast::errc::message_size);
        last = false;
      }
    }
    if (last) {
      if (const auto u = sp ? fromCanonical(sp->usage()) : filter.usage(); u.known()) recordUsage(rec, u);
      // Settled (and recorded) before the last bytes go out: the client's next request finds it.
      if (wayback::takes(ex, Stage::kResponseCommit)) co_await wayback::commit(ex, end);
    }
    if (!out.empty() || last) {
      if (!begun) {
        std::string lines = responseFieldLines(head, p, attemptNo, decode && ex.geminiJsonArray());
        co_await r.beginStream(static_cast<int>(head.result_int()), head.reason(), lines);
        begun = true;
      }
      if (!out.empty() && rec.ttfb_ms < 0) rec.ttfb_ms = msSince(ctx.start);
      if (a.first_byte_ms < 0) a.first_byte_ms = msSince(a.started);
      const std::optional<bool> now = r.writeChunkNow(out, last);
      bool written = now ? *now : co_await r.writeChunkLater(out, last);
      // A large piece (reads that found several events waiting) is not kept between reads: a
      // thousand open streams would each hold their largest one.
      if (out.capacity() > kKeptPiece) std::string().swap(out);
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
      std::string why = brokenWhy(ec, inband, stallBound, stall);
      if (r.bytesSent() == 0) {
        a.outcome = Outcome::ChannelFailure;
        a.timeout = timedOut;
        a.why = why;
        co_return a;  // nothing reached the client: another attempt is still invisible
      }
      const bool stalled = timedOut && stallBound && !deadline.passed();
      // routing.on_stall: continue: a stall (stall_timeout, or the idle timeout when that is off),
      // a cut or an error event while the answer is text is resumed on the next candidate (the
      // failover loop makes it); the total timeout and an event past the bound are not.
      if (sp && !deadline.passed() && ec != boost::beast::errc::message_size && sp->continuable()) {
        sp->broke(ex.route.est_tokens);
        a.outcome = Outcome::ChannelFailure;
        a.why = why + " (after the response started; continued on the next candidate)";
        co_return a;
      }
      // After the first byte, not continued (on_stall: error, a tool call under way, the total
      // timeout, an event past the bound): a well-formed error event ends the stream.
      a.outcome = Outcome::ChannelFailure;
      a.delivered = true;
      a.why = why;
      if (rawBytes) {
        r.abort();
        rec.status = timedOut ? 504 : 502;
        rec.error = why + " (after the response started; not retried)";
        co_return a;
      }
      co_await failBegunStream(
          timedOut ? 504 : 502,
          stalled ? "upstream_stalled" : (timedOut ? "upstream_timeout" : "upstream_stream_broken"), why,
          sp ? " (after the response started; not continued)" : " (after the response started; not retried)");
      co_return a;
    }
    if (parser.is_done()) break;
  }
  // The upstream body is whole: its connection goes back before the client's last write, so a
  // client that sends its next request the moment this one ends finds it in the pool.
  giveBack(std::move(conn), parser);
  if (!r.finished()) co_await r.endStream();
  rec.status = a.status;
  a.outcome = Outcome::Success;
  a.delivered = true;
  co_return a;
}

}  // namespace sluice::gateway::relay
