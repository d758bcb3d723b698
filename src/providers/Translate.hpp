// Translate: the one entry point the gateway calls to serve a client of one wire format from an
// upstream of another (OpenAI Chat, Anthropic Messages, Gemini generateContent: any to any; the
// Responses API and Bedrock Converse as upstreams too).
// Requests, whole responses, errors
// and streams. Pure code, no I/O. Functions are thread-safe; a StreamTranslator is one per
// stream and not thread-safe.
//
// Rules (details in openai/ChatCodec.hpp, anthropic/MessagesCodec.hpp, gemini/GenerateCodec.hpp):
//  - unknown request fields are dropped when translating (native passthrough keeps them);
//    fields with no equivalent are either dropped by a documented rule or rejected with a 400
//    naming the field;
//  - reasoning stays reasoning: Anthropic thinking <-> OpenAI `reasoning_content` <-> Gemini
//    thought parts; signatures round-trip where the client format can carry them;
//  - errors keep the upstream status and are re-shaped into the client's format;
//  - a non-streaming request gets a JSON body; a stream always ends with the client format's
//    closing events (OpenAI `data: [DONE]`; Anthropic message_delta + message_stop; Gemini a
//    chunk with finishReason and usageMetadata), preceded by an error event when the upstream
//    stopped before finishing.
//
// Gemini and the URL: a Gemini body holds neither the model nor the stream flag.
//  - Gemini client: the gateway fills TranslateContext::client_model (the {model} of
//    /v1beta/models/{model}:method) and client_stream (method == streamGenerateContent), and
//    gemini_json_array when that stream was called without alt=sse.
//  - Gemini upstream: the body carries no model; the gateway POSTs it to
//    /v1beta/models/{TranslateContext::upstream_model}:generateContent, or
//    :streamGenerateContent?alt=sse when RequestInfo::stream (the decoded request) is true.
#pragma once
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "providers/Canonical.hpp"

namespace sluice::providers {

namespace openai {
struct ResponsesEcho;
}

// routing.on_stall: continue: a request made again to finish an answer that broke after the
// client began to read it. The answer so far becomes the assistant's turn at the end of the
// conversation (appended to the client's own partial turn when it ended with one); an upstream
// that continues such a turn (`prefill`: Anthropic) is given it as it is, less trailing white
// space (which Anthropic refuses), and with reasoning off (a prefill excludes it); any other is
// asked to go on by a user turn holding kResumeInstruction. max_tokens is lowered by what the
// answer has used.
struct Resume {
  std::string_view text;
  bool prefill = false;
  std::int64_t output_so_far = 0;
};
// What of the answer so far a prefill carries: Anthropic refuses one that ends in white space.
std::string_view prefillText(std::string_view text);
inline constexpr std::string_view kResumeInstruction =
    "Your previous answer was cut off. Continue it exactly where it stopped: do not repeat any of it, "
    "and write nothing before the continuation.";

struct TranslateContext {
  std::string upstream_model;                 // model name to send upstream; empty keeps the client's
  bool openai_max_completion_tokens = false;  // see EncodeOptions
  bool codex = false;                         // see EncodeOptions (a ChatGPT subscription channel)
  bool include_usage = false;                 // OpenAI clients: the client asked for the usage chunk
  std::int64_t created = 0;                   // OpenAI `created`; 0: now (tests pin it)
  // Gemini clients (the body has neither): the model from the URL path, and whether the method
  // was streamGenerateContent. Ignored for other client formats.
  std::string client_model;
  bool client_stream = false;
  // Gemini clients of streamGenerateContent without alt=sse: the stream is one JSON array
  // written incrementally instead of SSE events.
  bool gemini_json_array = false;
  // Responses clients: the request fields a Responses answer echoes (from RequestInfo).
  std::shared_ptr<const openai::ResponsesEcho> responses_echo;
  // Streams: when set, makeStreamTranslator passes the client-format encoder through it and
  // uses the encoder it returns (never null), e.g. one that restores redacted values
  // (pipeline::makeRestoringEncoder). Unset: the encoder is used as is.
  std::function<std::unique_ptr<StreamEncoder>(std::unique_ptr<StreamEncoder>)> wrap_encoder;
  // Answers whose upstream names no id (Bedrock Converse): the id they get is built from this
  // (the gateway's request id).
  std::string answer_id;
  // Requests: the answer to resume (see Resume); null for a request as the client sent it.
  const Resume* resume = nullptr;
};

// The id given to an answer whose upstream names none (Bedrock Converse), made from the gateway's
// request id (TranslateContext::answer_id). The cache names the entries of such answers with it.
std::string unnamedAnswerId(std::string_view request_id);

// What the gateway needs to know about a translated request.
struct RequestInfo {
  std::shared_ptr<const openai::ResponsesEcho> responses_echo;  // Responses clients only
  std::string model;  // as the client named it (Gemini clients: TranslateContext::client_model)
  bool stream = false;
  bool include_usage = false;  // copy into TranslateContext::include_usage for the stream
};

// Client request body -> upstream request body. On error the request must not be sent; answer
// with errorBody(client, err) and err.status.
std::optional<TranslateError> translateRequest(Format client, Format upstream, std::string_view body,
                                               std::string& upstream_body, const TranslateContext& ctx,
                                               RequestInfo* info = nullptr);

// Upstream non-stream success body -> client body. `usage` (optional) receives the token counts.
// On error (the upstream body is not a response of its format) answer with errorBody(), 502.
std::optional<TranslateError> translateResponse(Format client, Format upstream, std::string_view upstream_body,
                                                std::string& client_body, const TranslateContext& ctx,
                                                Usage* usage = nullptr);

// Upstream error (status + body in the upstream's format, or anything) -> client-format body.
// The client should get the same status as the upstream (`status_out` = that status).
// Bedrock names its error in a header (x-amzn-ErrorType): `error_type` is that header's value.
std::string translateError(Format client, Format upstream, int status, std::string_view upstream_body,
                           int* status_out = nullptr, std::string_view error_type = {});

// A gateway- or translation-made error in the client's format.
std::string errorBody(Format client, const ApiError& err);

class StreamTranslator final : private StreamEventSink {
 public:
  StreamTranslator(std::unique_ptr<StreamDecoder> decoder, std::unique_ptr<StreamEncoder> encoder);

  // Upstream bytes in any split -> client bytes appended to `client_out`. Holds back at most one
  // unfinished upstream event. Returns false when an event exceeds StreamDecoder::kMaxEvent;
  // the caller should then call finish() (which writes an error event) and stop.
  bool feed(std::string_view upstream_bytes, std::string& client_out);
  // The upstream is done (or broke): writes the closing events the client still needs.
  void finish(std::string& client_out);

  // Token usage seen so far (input includes cached; see Canonical.hpp).
  const Usage& usage() const { return usage_; }
  // The upstream sent its own end-of-stream event.
  bool sawUpstreamEnd() const { return saw_done_; }
  // The client stream is complete (closing or error events written).
  bool ended() const { return encoder_->ended(); }
  // A Start event that names no answer id is given these (upstreams whose streams name neither).
  void nameStart(std::string id, std::string model);

 private:
  void onEvent(const StreamEvent& ev) override;

  std::unique_ptr<StreamDecoder> decoder_;
  std::unique_ptr<StreamEncoder> encoder_;
  std::string* out_ = nullptr;
  Usage usage_;
  bool saw_done_ = false;
  bool overflow_ = false;
  std::string start_id_;
  std::string start_model_;
};

std::unique_ptr<StreamTranslator> makeStreamTranslator(Format client, Format upstream, const TranslateContext& ctx);

}  // namespace sluice::providers
