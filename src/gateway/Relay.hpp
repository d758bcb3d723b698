// Relay: one request's attempts on the channels the failover loop (Proxy.cpp) picks: the body
// and head made for each channel, the upstream's answer read whole or as a stream, translated
// for the client with the usage read on the way, and brought back through the stages' response
// hooks (gateway/Chain.hpp, wayback: restored, recorded, reviewed, settled). One per request,
// made by the relay stage; used on its worker only.
#pragma once
#include <boost/asio/awaitable.hpp>
#include <boost/beast/http/fields.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gateway/Chain.hpp"
#include "gateway/Exchange.hpp"
#include "gateway/Snapshot.hpp"
#include "gateway/StreamSplice.hpp"
#include "providers/Translate.hpp"
#include "routing/Router.hpp"
#include "upstream/Client.hpp"

namespace sluice::gateway {
class CommitGate;
class StreamTap;
}

namespace sluice::gateway::relay {

namespace bhttp = boost::beast::http;
using Clock = std::chrono::steady_clock;
using Millis = std::chrono::milliseconds;
using routing::Outcome;

struct Deadline {
  Clock::time_point at;
  // The phase timeout, cut to what is left of the total; at least 1 ms so Beast arms a timer.
  // Rounded up: a wait cut by the total ends at or after it, so passed() is then true.
  Millis cap(Millis phase) const {
    auto left = std::chrono::ceil<Millis>(at - Clock::now());
    if (left < Millis(1)) left = Millis(1);
    return std::min(phase, left);
  }
  bool passed() const { return Clock::now() >= at; }
};

struct Attempt {
  Outcome outcome = Outcome::ChannelFailure;
  int status = 0;  // upstream status, or 0 when none was received
  bool timeout = false;
  std::int64_t retry_after_ms = 0;
  bool delivered = false;  // the client got a response (or left): stop trying
  double duration_ms = 0;  // from the pick to the end of the attempt (for the log)
  // From the attempt's start to the first byte of the answer (the response head; for a stream,
  // the first event given to the client); < 0: none came. routing.balance: latency learns it.
  double first_byte_ms = -1;
  Clock::time_point started = Clock::now();
  std::string why;  // one line for the per-attempt summary
};

inline double msSince(Clock::time_point t) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

// Whether `lines` are whole HTTP field lines ("name: value\r\n"...): a token for each name that is
// none of the framing's (Content-Length, Transfer-Encoding, Host, Connection...), no CR, LF or NUL
// in a value. A stage's lines for an upstream head are sent only when they are.
bool wellFormedFieldLines(std::string_view lines);

// One attempt up to the moment its answer may go to the client: connected, sent, its head read
// and, for a stream of a chat-like call, held until its first meaningful event (open()). Nothing
// of it has reached the client; finish() gives it. A hedge opens two and finishes the first.
struct Opening {
  Attempt a;
  bool done = false;  // `a` is the attempt's end: it failed before anything could go to the client
  std::unique_ptr<upstream::Connection> conn;
  std::optional<upstream::ResponseParser> parser;
  bool sse = false;
  bool held_stream = false;           // the commit gate held it: `held` is its first piece
  std::string held;                   // the upstream bytes up to and with the first meaningful event
  boost::system::error_code held_ec;  // the read that committed also ended the stream so
  std::optional<providers::TranslateError> untranslatable;  // the channel cannot take the request
  std::string own_body;                                     // a hedged attempt's body, its own copy
  std::optional<http::Response> client_failure;             // a streamed upload broke on the client's side: its answer
  // A hedged attempt's: set when the other won; open() then stops at its next step, closes its
  // connection and touches nothing of the relay's (the request may be over).
  const bool* cancelled = nullptr;
};

struct Relay {
  explicit Relay(Exchange& e)
      : ex(e),
        snap(e.snap),
        pool(e.svc.pool),
        req(e.req),
        r(e.r),
        ctx(e.ctx),
        call(e.call),
        rec(e.rec),
        facts(e.route.facts),
        routed_model(e.route.routed_model),
        stream(e.route.facts.stream),
        strip_usage(e.route.inject_usage),
        deadline{e.ctx.start + e.snap.cfg->routing.timeouts.total},
        upstream_model(e.route.upstream_model),
        plan(e.answer) {
    // routing.on_stall: continue: a chat-like stream can be resumed on the next candidate.
    if (stream && call.translatable() && snap.cfg->routing.on_stall == config::OnStall::Continue)
      splice = std::make_unique<StreamSplice>();
  }

  Exchange& ex;
  const Snapshot& snap;
  upstream::Pool& pool;
  http::Request& req;
  http::Responder& r;
  const RequestContext& ctx;
  const ClientCall& call;
  RequestRecord& rec;
  const BodyFacts& facts;
  // The model after aliases and CHANNEL/ pinning (ex.route's: a fallback model once the loop
  // has moved on to one).
  const std::string& routed_model;
  // A fallback model is left to try: an upstream error a `fallback` rule matches is then not
  // the client's answer but the end of this model's attempts.
  bool fallback_left = false;
  bool stream;
  bool strip_usage;
  Deadline deadline;
  // The body last made for a channel (per upstream format and model name); most requests
  // make none and send the client's bytes as they are.
  std::string body_key;
  std::string body_made;
  bool body_is_original = false;
  // A streamed upload's body has begun to go to a provider: no other attempt can send it.
  bool body_spent = false;
  std::string& upstream_model;  // for the current attempt (the limits stage prices by it)
  // The headers every answer carries and whether Responses clients are answered from a Chat
  // translation (the stages before decided).
  const AnswerPlan& plan;
  std::shared_ptr<const providers::openai::ResponsesEcho> responses_echo;
  // routing.on_stall: continue: the client's stream across the attempts that make it; set for a
  // chat-like stream. Its streams are read through the gateway's codecs (whole events, the
  // answer's text known), Responses ones through Chat Completions.
  std::unique_ptr<StreamSplice> splice;
  // The client's stream began on an earlier attempt, which broke: this one continues it.
  bool continuing() const { return splice && splice->continuing(); }
  // Ends a stream that began with its format's error event saying why + note; the log gets why.
  boost::asio::awaitable<void> failBegunStream(int status, std::string_view code, const std::string& why,
                                               std::string_view note = {});

  // A vertex channel's wire is its model's (Claude: Anthropic, else Gemini).
  Wire upWire(const routing::Pick& p) const {
    if (p.channel->cfg.type != config::ChannelType::Vertex) return channelWire(p.channel->cfg.type);
    return channelWire(p.channel->cfg.type, p.channel->upstreamModel(routed_model));
  }
  // A ChatGPT subscription channel: its upstream is ChatGPT's Codex endpoint, which speaks only the
  // Responses API and streams every answer (a client that asked for one piece gets it assembled).
  static bool codex(const routing::Pick& p) { return p.channel->cfg.subscription == "chatgpt"; }
  // Same format: relayed as it is. Responses requests go natively only to `openai` channels;
  // other OpenAI-format upstreams (vLLM, Ollama, DeepSeek...) get them as chat completions.
  bool translating(const routing::Pick& p) const;
  // A subscription channel's answer: its usage windows (rate-limit headers) noted on the key; a
  // window used up rests the key until it resets (a 429: through the attempt's retry_after_ms).
  void noteUsageWindows(const routing::Pick& p, const boost::beast::http::fields& head, Attempt& a) const;
  providers::Format upstreamFormat(const routing::Pick& p) const;
  providers::TranslateContext translateContext(const routing::Pick& p) const;
  // The head of p's answer as the stages see it, with their say in it (wayback::headers).
  ResponseHead responseHead(const routing::Pick& p, int status, bool sse);

  // The body to send to p's channel, or an error the client must fix (bad for that format).
  std::optional<providers::TranslateError> prepareBody(const routing::Pick& p, std::string_view& out);

  // The request target p's channel gets for this request (the signing stage signs it).
  std::string target(const routing::Pick& p) const;

  // The upstream request head, formatted once per attempt (no Beast fields or serializer:
  // this runs for every request).
  // `stageLines`: the field lines the stages added for this attempt (checked here).
  std::string buildUpstreamHead(const routing::Pick& p, std::string_view sendBody,
                                std::string_view stageLines = {}) const;

  // Response header lines for the client: the upstream's, less hop-by-hop ones, plus ours.
  std::string responseFieldLines(const bhttp::fields& from, const routing::Pick& p, int attempts,
                                 bool json_array = false) const;

  void copyResponseHeaders(const bhttp::fields& from, bhttp::fields& to, const routing::Pick& p, int attempts) const;

  // One attempt on one (channel, key). Never throws. `stages`: what the stages' onAttempt made
  // of it (the body and head lines to send); null: the body made for the channel as it is.
  boost::asio::awaitable<Attempt> attempt(const routing::Pick& p, int attemptNo,
                                          const UpstreamAttempt* stages = nullptr);
  // attempt() in two halves: up to the first meaningful byte, then the answer to the client.
  boost::asio::awaitable<void> open(const routing::Pick& p, const UpstreamAttempt* stages, Opening& o);
  boost::asio::awaitable<Attempt> finish(const routing::Pick& p, int attemptNo, Opening& o);

  // After a response: its connection back to the pool when the body was read whole and the
  // upstream keeps it alive, else closed.
  void giveBack(std::unique_ptr<upstream::Connection> conn, upstream::ResponseParser& parser);

  // The cold paths of attempt(), each a coroutine of its own: GCC gives every local of a
  // coroutine its own slot in the frame, which lives as long as the stream, so what only an
  // error needs (a response, its body, a read buffer) is kept out of attempt()'s frame.
  boost::asio::awaitable<Attempt> refuseUntranslatable(const providers::TranslateError& err);
  boost::asio::awaitable<Attempt> clientFailure(Opening& o);
  boost::asio::awaitable<Attempt> upstreamError(const routing::Pick& p, int attemptNo,
                                                std::unique_ptr<upstream::Connection> conn,
                                                upstream::ResponseParser& parser, Attempt a);

  boost::asio::awaitable<Attempt> relayWhole(const routing::Pick& p, int attemptNo,
                                             std::unique_ptr<upstream::Connection> conn,
                                             upstream::ResponseParser& parser, Attempt a);

  // An in-band error the commit gate caught before the first content: the failed attempt, or
  // nullopt when routing.rules say the client gets it (`return`, or `fallback` with none left).
  std::optional<Attempt> inbandFailure(const CommitGate& gate, Attempt a);

  boost::asio::awaitable<Attempt> relayStream(const routing::Pick& p, int attemptNo, Opening& o);
  std::unique_ptr<StreamTap> streamTap(const routing::Pick& p, ResponseHead& rh, bool decode);
  std::string brokenWhy(boost::system::error_code ec, const std::optional<providers::ApiError>& inband, bool stallBound,
                        Millis stall) const;
};

}  // namespace sluice::gateway::relay
