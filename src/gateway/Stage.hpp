// Stage: one step of the request path, in the way Envoy's HTTP filters and Pingora's phases
// work. A StageConfig is built once with the snapshot (gateway/Chain.cpp, where the order is
// written down); for each request it starts a Stage, which holds only that stage's own state
// for that request. The runner (runChain) calls each started stage's onRequest in order until one
// answers, then the started stages' onComplete in reverse order, however the request ended.
//
// Between the two, the relay (the last stage) makes the upstream attempts and brings the answer
// back through the stages before it, in reverse order (gateway/Chain.hpp's `wayBack`): each
// attempt (onAttempt, onAttemptFailed), the answer's head (onResponseHeaders), each piece of its
// data (onResponseData: bytes and end_of_stream), its end (onResponseEnd: a whole answer may be
// replaced) and the moment it stands, right before its last bytes go out (onResponseCommit). A
// stage says which of these (and whether onComplete) it takes with hooks(); no other is called,
// so a stage that takes none costs no coroutine past its onRequest.
//
// What stages share is the Exchange (gateway/Exchange.hpp): the request, the caller, the route,
// the limits held and the plan for the answer's way back. A stage reads what the stages before it
// wrote there and writes only its own part.
#pragma once
#include <boost/asio/awaitable.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <memory_resource>
#include <new>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "providers/Translate.hpp"

namespace sluice::routing {
struct Pick;
}

namespace sluice::gateway {

struct Exchange;

// What a stage's request hook decided.
enum class Step {
  Continue,  // the next stage takes the request
  Answered,  // the client got its answer (in its own format) from this stage: the chain stops
};

// One upstream attempt, before its first byte goes (onAttempt): a stage may pass the pick over
// (a channel or key at its own quota), saying why and when it may be tried again, or rewrite
// what this attempt sends: its body, and header lines added to its head.
struct UpstreamAttempt {
  UpstreamAttempt(const routing::Pick& p, std::int64_t est, std::string_view made = {})
      : pick(p), est_tokens(est), body(made) {}
  UpstreamAttempt(routing::Pick&&, std::int64_t, std::string_view = {}) = delete;  // the pick outlives it
  const routing::Pick& pick;
  std::int64_t est_tokens = 0;           // what the request is estimated to use
  std::string_view body;                 // what the relay made for this channel (its format, its model name)
  std::string target;                    // the request target it goes to ("/model/a%3A0/converse"), for signing
  std::optional<std::string> rewritten;  // set by a stage: the body this attempt sends instead
  // "Name: value\r\n" lines this attempt adds to its head (after the client's and the channel's);
  // lines that are not well-formed field lines are dropped whole, never sent.
  std::string header_lines;
  // The cached access token a stage put in header_lines as "Authorization: Bearer ..." (a vertex,
  // Entra or subscription key): a 401 to it has the relay fetch a fresh one and resend once.
  std::string bearer;
  std::string_view sendBody() const { return rewritten ? std::string_view(*rewritten) : body; }
  enum class Skip { None, Channel, Key };
  Skip skip = Skip::None;           // Channel: none of its keys; Key: this key only
  std::string why;                  // for the answer when every pick was passed over
  std::int64_t retry_after_ms = 0;  // when the passed-over pick may be tried again (0: unknown)
  // Set by a stage: the attempt fails unsent, as if the upstream had answered this status (a
  // cloud key whose access token could not be had): it counts as an attempt, its key's health
  // takes `why`, and the next candidate is tried. fail_disables: the key is disabled (its
  // credential was refused), else it cools down (the token endpoint was unreachable).
  int fail_status = 0;
  bool fail_disables = true;
};

// The head of the answer the client will get from this attempt (onResponseHeaders). The relay
// has read the upstream's head and will translate `upstream_format` into `client_format`
// (translated) or pass the bytes on as they are.
struct ResponseHead {
  ResponseHead(const routing::Pick& p, int st, bool sse, providers::Format up, providers::Format client, bool tr)
      : pick(p), status(st), stream(sse), upstream_format(up), client_format(client), translated(tr) {}
  ResponseHead(routing::Pick&&, int, bool, providers::Format, providers::Format, bool) = delete;
  const routing::Pick& pick;
  int status = 0;
  bool stream = false;  // server-sent events, read piece by piece; else one whole body
  providers::Format upstream_format;
  providers::Format client_format;
  bool translated = false;
  // A stage that must see a stream as events rather than bytes (redaction's restore of a
  // stream in any format but OpenAI Chat) wraps the relay's encoder: the relay then decodes the
  // stream (also when the formats are the same) and runs its events through this.
  std::function<std::unique_ptr<providers::StreamEncoder>(std::unique_ptr<providers::StreamEncoder>)> wrap_encoder;
  // The request log keeps the upstream's bytes, not the client's (set with wrap_encoder when
  // what the client reads holds restored text, which the log must never see).
  bool log_upstream_bytes = false;
};

// One piece of the answer (onResponseData): a read of a stream, or a whole answer in one piece.
struct ResponseData {
  std::string_view upstream;  // the bytes as the upstream sent them (for recording)
  std::string& out;           // what the client gets: whole events (streams) or the whole body;
                              // a stage may rewrite it in place or hold part of it back (bounded),
                              // giving it out at a later piece or at end_of_stream
  bool end_of_stream = false;
};

// What a stage's data hook decided.
enum class DataStep {
  Continue,  // the piece goes on
  Abort,     // a bound was passed: the relay ends the answer with an error
};

// The answer is complete (onResponseEnd, onResponseCommit); its last bytes have not gone out.
struct ResponseEnd {
  const routing::Pick& pick;
  int status = 0;
  bool stream = false;
  std::string_view upstream_body;  // a whole answer: its body as the upstream sent it
};

class Stage {
 public:
  // The hooks past onRequest and onComplete a stage takes (hooks()); the relay calls only these.
  enum Hook : unsigned {
    kAttempt = 1u << 0,          // onAttempt and onAttemptFailed
    kResponseHeaders = 1u << 1,  // onResponseHeaders
    kResponseData = 1u << 2,     // onResponseData
    kResponseEnd = 1u << 3,      // onResponseEnd
    kResponseCommit = 1u << 4,   // onResponseCommit
    kComplete = 1u << 5,         // onComplete
  };

  virtual ~Stage() = default;
  // The request on its way out. Never throws on bad input: a refusal is an answer.
  virtual boost::asio::awaitable<Step> onRequest(Exchange& ex) = 0;
  // Which of the hooks below this stage takes, for this request (asked once its onRequest ran).
  virtual unsigned hooks() const { return 0; }

  // Each upstream attempt, before its first byte goes: take what it needs, or pass the pick over.
  virtual boost::asio::awaitable<void> onAttempt(Exchange&, UpstreamAttempt&) { co_return; }
  // The attempt failed and another may follow: give back what onAttempt took for it.
  virtual boost::asio::awaitable<void> onAttemptFailed(Exchange&, const routing::Pick&) { co_return; }
  // The answer's head, before anything of it reaches the client (and before its data).
  virtual void onResponseHeaders(Exchange&, ResponseHead&) {}
  // Each piece of the answer's data, in order; the last has end_of_stream.
  virtual DataStep onResponseData(Exchange&, ResponseData&) { return DataStep::Continue; }
  // A whole answer (not a stream) is in: Answered when this stage sent the client another
  // answer instead (a refusal in the caller's format); the later stages then see nothing more.
  virtual boost::asio::awaitable<Step> onResponseEnd(Exchange&, const ResponseEnd&) { co_return Step::Continue; }
  // A successful answer stands: its last bytes go out right after (so a client's next request
  // finds what this one settled or stored).
  virtual boost::asio::awaitable<void> onResponseCommit(Exchange&, const ResponseEnd&) { co_return; }

  // The request is over (answered by any stage, or thrown past): give back what this stage
  // holds. Runs for every stage whose onRequest ran and whose hooks() name kComplete.
  virtual boost::asio::awaitable<void> onComplete(Exchange&) { co_return; }
};

// The stages started for one request, in chain order (runChain fills it; the relay walks it
// backwards for the answer's way back).
struct StartedStages {
  static constexpr std::size_t kMax = 16;
  std::array<Stage*, kMax> at{};
  std::size_t count = 0;
  unsigned hooks = 0;  // the union of the started stages' hooks()
};

// A request's stages live in one small arena with the request (no allocation per stage unless a
// stage's state outgrows it).
class StageArena {
 public:
  static constexpr std::size_t kMaxStages = StartedStages::kMax;
  StageArena() = default;
  StageArena(const StageArena&) = delete;
  StageArena& operator=(const StageArena&) = delete;
  ~StageArena() {
    for (std::size_t i = count_; i-- > 0;) made_[i]->~Stage();
  }

  template <class T, class... Args>
  T* make(Args&&... args) {
    void* p = mr_.allocate(sizeof(T), alignof(T));
    T* t = new (p) T(std::forward<Args>(args)...);
    made_[count_++] = t;  // chains have at most kMaxStages stages (Chain.cpp checks at build)
    return t;
  }

 private:
  alignas(std::max_align_t) std::byte inline_[512];
  std::pmr::monotonic_buffer_resource mr_{inline_, sizeof inline_};
  std::array<Stage*, kMaxStages> made_{};
  std::size_t count_ = 0;
};

class StageConfig {
 public:
  virtual ~StageConfig() = default;
  // The stage's name, for docs/architecture.md, logs and tests.
  virtual std::string_view name() const = 0;
  // The stage for this request, made in `arena`, or nullptr when the stage has nothing to do for
  // it. Called right before the stage's turn: it sees what the stages before it decided.
  virtual Stage* start(const Exchange& ex, StageArena& arena) const = 0;
};

}  // namespace sluice::gateway
