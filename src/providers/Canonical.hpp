// Canonical: the wire-format-neutral shape of a chat request, a response and a stream, that
// every provider codec (OpenAI Chat, Anthropic Messages, Gemini generateContent) decodes
// into and encodes from. Plain data; no I/O; safe to share read-only between threads.
//
// Shape choices (made so Gemini fits):
//  - the system prompt is separate from the turns (Anthropic `system`, Gemini systemInstruction);
//  - a turn is a role plus ordered parts (Anthropic content blocks, Gemini parts);
//  - tool calls carry arguments as JSON text and an optional id (Gemini functionCall has none);
//    tool results carry the call id and, where known, the function name (Gemini
//    functionResponse needs it; decoders fill it from the matching earlier call);
//  - reasoning parts carry an opaque signature (Anthropic thinking signature, Gemini
//    thoughtSignature); any part may carry one, since Gemini signs functionCall parts too. A
//    Reasoning part with empty text and a signature is a "carrier": the signature belongs to the
//    part after it (how an Anthropic history carries a Gemini functionCall signature; rule in
//    gemini/GenerateCodec.hpp);
//  - images are either inline base64 with a media type (Gemini inlineData) or a URL.
//
// Token usage rule: `input` counts every prompt token, cached ones included (OpenAI
// prompt_tokens semantics); `cached` is the part read from a prompt cache and `cache_creation`
// the part written to it. Anthropic reports input_tokens without either, so its codec adds them
// on decode and subtracts them on encode.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace sluice::providers {

// The wire formats the translator speaks.
// OpenAIResponses is a client format, and the upstream format of a ChatGPT subscription channel
// (openai/ResponsesUpstream.hpp); an `openai` channel gets Responses clients natively.
// BedrockConverse is an upstream format only (AWS Bedrock's Converse API): no client speaks it.
enum class Format { OpenAIChat, AnthropicMessages, GeminiGenerate, OpenAIResponses, BedrockConverse };

std::string_view formatName(Format f);

// Kinds of API error, named after Anthropic's error types, which are the finer-grained set.
enum class ErrorKind {
  InvalidRequest,   // 400
  Authentication,   // 401
  Billing,          // 402 (OpenAI insufficient_quota arrives as 429 and maps to RateLimit)
  Permission,       // 403
  NotFound,         // 404
  RequestTooLarge,  // 413
  RateLimit,        // 429
  Api,              // 500 and other 5xx
  Timeout,          // 504
  Overloaded,       // 529 / 503
};

ErrorKind errorKindForStatus(int status);
int statusForErrorKind(ErrorKind k);

// A client-format-agnostic error: the request could not be translated (status 400 with the
// offending `param`), or the upstream answered with an error. Callers render it in the client's
// format with errorBody() (Translate.hpp).
struct ApiError {
  int status = 400;
  ErrorKind kind = ErrorKind::InvalidRequest;
  std::string message;
  std::string param;  // JSON path of the offending field, e.g. messages[2].content; may be empty
  std::string code;   // OpenAI-style code when known (e.g. model_not_found); may be empty

  static ApiError invalid(std::string param, std::string message) {
    return ApiError{400, ErrorKind::InvalidRequest, std::move(message), std::move(param), {}};
  }
};

using TranslateError = ApiError;

enum class Role { User, Assistant };

struct Part {
  enum class Kind {
    Text,
    Image,              // media_type + data (base64), or url
    ToolCall,           // id, name, arguments (JSON text of an object)
    ToolResult,         // id (the call's), name (may be empty), content (Text / Image parts), is_error
    Reasoning,          // text; signature when the provider signed it
    RedactedReasoning,  // data: opaque, provider-encrypted reasoning
  };
  Kind kind = Kind::Text;
  std::string text;           // Text, Reasoning
  std::string media_type;     // Image (inline)
  std::string data;           // Image (inline, base64); RedactedReasoning
  std::string url;            // Image (by URL; media_type set when known)
  std::string id;             // ToolCall / ToolResult
  std::string name;           // ToolCall / ToolResult
  std::string arguments;      // ToolCall
  std::vector<Part> content;  // ToolResult
  bool is_error = false;      // ToolResult
  std::string signature;      // Reasoning (and, for Gemini, any part)

  static Part makeText(std::string t) {
    Part p;
    p.text = std::move(t);
    return p;
  }
};

struct Message {
  Role role = Role::User;
  std::vector<Part> parts;
};

struct Tool {
  std::string name;
  std::string description;
  std::string parameters;  // JSON Schema text of an object; "{}" style when none was given
};

struct ToolChoice {
  enum class Mode { Unset, Auto, None, Required, Named };
  Mode mode = Mode::Unset;
  std::string name;  // Named
};

struct ResponseFormat {
  enum class Kind { Unset, Text, JsonObject, JsonSchema };
  Kind kind = Kind::Unset;
  std::string name;    // JsonSchema
  std::string schema;  // JsonSchema: JSON text
  bool strict = false;
};

struct Request {
  std::string model;
  std::vector<Part> system;  // text parts, in order
  std::vector<Message> messages;
  std::vector<Tool> tools;
  ToolChoice tool_choice;
  std::optional<bool> parallel_tool_calls;
  ResponseFormat response_format;
  std::optional<double> temperature;
  std::optional<double> top_p;
  std::optional<std::int64_t> top_k;
  std::optional<std::int64_t> max_tokens;
  std::vector<std::string> stop;
  std::optional<std::int64_t> reasoning_budget;  // thinking tokens; 0 = explicitly off
  std::string user;                              // end-user id (OpenAI user, Anthropic metadata.user_id)
  int n = 1;
  bool stream = false;
  bool include_usage = false;  // the client asked for usage in the stream (OpenAI stream_options)
};

enum class FinishReason { Unset, Stop, StopSequence, Length, ToolCalls, ContentFilter, Other };

struct Usage {
  std::int64_t input = -1;  // -1: not reported
  std::int64_t output = -1;
  std::int64_t cached = -1;
  std::int64_t cache_creation = -1;
  std::int64_t reasoning = -1;  // the part of `output` spent on reasoning (Gemini thoughtsTokenCount)
  bool known() const { return input >= 0 || output >= 0; }
  // Takes every field `u` reports (stream usage is cumulative: later values win).
  void merge(const Usage& u) {
    if (u.input >= 0) input = u.input;
    if (u.output >= 0) output = u.output;
    if (u.cached >= 0) cached = u.cached;
    if (u.cache_creation >= 0) cache_creation = u.cache_creation;
    if (u.reasoning >= 0) reasoning = u.reasoning;
  }
};

struct Response {
  std::string id;
  std::string model;
  std::int64_t created = 0;
  std::vector<Part> content;  // Text, Reasoning, RedactedReasoning, ToolCall
  FinishReason finish = FinishReason::Unset;
  std::string stop_sequence;
  Usage usage;
};

// One step of a translated stream. String views point into the upstream event being decoded
// and are valid only during the StreamEventSink::onEvent call.
struct StreamEvent {
  enum class Kind {
    Start,               // id, model, usage (what the provider knows at the start)
    Text,                // text
    Reasoning,           // text
    ReasoningSignature,  // text = signature of the current reasoning
    RedactedReasoning,   // text = opaque data
    ToolCallStart,       // tool_index, id, name, signature (Gemini thoughtSignature of the call, if any)
    ToolCallArgs,        // tool_index, text = a fragment of the arguments JSON
    Finish,              // finish, stop_sequence
    Usage,               // usage (cumulative)
    Ping,                // keep-alive
    Error,               // error
    Done,                // the upstream's own end-of-stream event
  };
  Kind kind = Kind::Text;
  int tool_index = 0;  // 0-based among the tool calls of this response
  std::string_view id;
  std::string_view model;
  std::string_view name;
  std::string_view text;
  std::string_view signature;  // ToolCallStart
  FinishReason finish = FinishReason::Unset;
  std::string_view stop_sequence;
  Usage usage;
  const ApiError* error = nullptr;
};

class StreamEventSink {
 public:
  virtual ~StreamEventSink() = default;
  virtual void onEvent(const StreamEvent& ev) = 0;
};

// Upstream SSE bytes -> canonical events. One per stream; not thread-safe.
class StreamDecoder {
 public:
  virtual ~StreamDecoder() = default;
  // Feeds bytes in any split; complete events go to `sink`, an unfinished one is held back.
  // Returns false when a single event grows past kMaxEvent (the stream should be failed).
  virtual bool feed(std::string_view bytes, StreamEventSink& sink) = 0;
  // Bytes of an unfinished event still held (non-empty at end of stream means truncation).
  virtual std::size_t pending() const = 0;

  static constexpr std::size_t kMaxEvent = 4u << 20;
};

// Canonical events -> client SSE bytes. One per stream; not thread-safe.
class StreamEncoder {
 public:
  virtual ~StreamEncoder() = default;
  virtual void encode(const StreamEvent& ev, std::string& out) = 0;
  // End of the upstream stream: writes whatever the client format still needs to be complete
  // (closing events; an error event first when the upstream stopped before finishing).
  virtual void finish(std::string& out) = 0;
  // The closing events were written (by Done, Error or finish()).
  virtual bool ended() const = 0;
};

// Options that do not come from the request body.
struct EncodeOptions {
  std::string model;  // replaces the request's model when non-empty (the upstream's model name)
  // OpenAI upstream: send max_completion_tokens instead of max_tokens (OpenAI reasoning models
  // reject max_tokens; many OpenAI-compatible servers know only max_tokens).
  bool openai_max_completion_tokens = false;
  // OpenAI Responses upstream: ChatGPT's Codex endpoint, which takes streams only, keeps nothing
  // and requires instructions (openai/ResponsesUpstream.hpp).
  bool codex = false;
};

}  // namespace sluice::providers
