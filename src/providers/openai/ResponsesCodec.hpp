// ResponsesCodec: the OpenAI Responses API (`POST /v1/responses`, what coding agents such as the
// Codex CLI send) as a CLIENT format: request decoding into the canonical form (Canonical.hpp),
// and response, stream and error encoding from it. Pure functions and per-stream objects; no I/O.
// Upstreams are reached through the other codecs (OpenAI Chat, Anthropic Messages, Gemini).
//
// Rules where the Responses API and the canonical form differ (the translation contract):
//  - `instructions` and system/developer message items are hoisted, in order, into
//    Request::system (text only).
//  - input items: message (user / assistant / system / developer; content a string or
//    input_text / output_text / refusal / input_image parts), function_call,
//    function_call_output, custom_tool_call, custom_tool_call_output, reasoning. Consecutive
//    items of one side (assistant: message, reasoning, calls; user: message, call outputs) make
//    one canonical turn, as Anthropic and Gemini need alternating turns.
//  - custom tools (Codex's freeform `apply_patch`): a {"type":"custom", name, description,
//    format} tool becomes a function tool of the same name taking one string argument
//    (kCustomToolInputKey): {"type":"object","properties":{"input":{"type":"string"}},
//    "required":["input"]}. A grammar format is appended to the description as text (the
//    upstream cannot enforce it). custom_tool_call items become tool calls with arguments
//    {"input": <input>}; their outputs become tool results. On the way back, calls of a tool the
//    request declared custom are returned as custom_tool_call items (input = the `input`
//    argument, or the raw arguments text when the model did not produce that shape), streamed as
//    response.custom_tool_call_input.delta/done with the JSON string decoded incrementally.
//  - namespaces and additional_tools (Codex's default "responses-lite" shape): tools may sit in
//    {"type":"namespace", name, tools:[...]} groups, and in `additional_tools` input items
//    ({"type":"additional_tools", tools:[...]}, anywhere in `input`) as well as in `tools`. All
//    are offered upstream as one flat list, in order: top-level `tools` first, then each
//    additional_tools item's. A namespaced tool keeps its own name unless an earlier tool took
//    it, then it is offered as "<namespace>__<name>". Call items in the history that carry a
//    `namespace` map back to that offered name; calls the upstream makes come back as items
//    with the tool's own name and `namespace`.
//  - reasoning: a reasoning item becomes a Reasoning part holding its summary text (or its
//    reasoning_text content when the summary is empty). Its encrypted_content is OpenAI's
//    and no other provider can read it: it is dropped, except the values this codec itself
//    wrote: a provider's reasoning signature is returned to the client as encrypted_content
//    kSignaturePrefix + signature (redacted reasoning as kRedactedPrefix + data), so a client that
//    replays reasoning items (Codex with store:false and include reasoning.encrypted_content)
//    gives Anthropic back its signed thinking. A reasoning item with neither text nor our
//    encrypted_content is dropped.
//  - reasoning.effort none/minimal/low/medium/high/xhigh maps to a thinking budget (0 or
//    ChatCodec's kReasoningBudget*); reasoning.summary only shapes OpenAI's own summaries and is
//    dropped (reasoning the upstream returns is always surfaced as a summary).
//  - dropped: store (echoed: true only when the request says so, as the gateway's responses
//    stage does for an answer it keeps), metadata (echoed only),
//    prompt_cache_key, include, service_tier, truncation, max_tool_calls, stream_options,
//    text.verbosity, function tools' `strict`, input_image `detail`, item ids and statuses, any
//    unknown field. `user` (or `safety_identifier`) is kept as the canonical end-user id.
//  - rejected with 400 naming the field: previous_response_id and conversation (the codec keeps
//    no conversation state; the gateway's responses stage expands previous_response_id into
//    `input` before a request gets here), background, prompt
//    (stored prompt templates), item_reference items, built-in tools (web_search, file_search,
//    computer_use_preview, code_interpreter, image_generation, mcp, local_shell, ...) and their
//    call items, tool_choice naming a built-in tool or allowed_tools, input_image file_id,
//    input_file / input_audio parts, top_logprobs.
//  - responses: id "resp_<upstream id>", items "rs_" / "msg_" / "fc_" / "ctc_" + that id + index;
//    status "completed", or "incomplete" with incomplete_details.reason "max_output_tokens"
//    (finish Length) or "content_filter". usage as Chat's (ChatCodec.hpp): input_tokens and
//    output_tokens with input_tokens_details.cached_tokens (and cache_write_tokens when > 0)
//    and output_tokens_details.reasoning_tokens (0 when the upstream did not tell). The request's instructions,
//    tools, tool_choice, parallel_tool_calls, temperature, top_p, max_output_tokens, text,
//    reasoning, truncation, user and metadata are echoed (ResponsesEcho).
//  - streams: every event is `event: <type>` + `data: {"type":<type>,"sequence_number":N,...}`,
//    N consecutive from 0, and the stream always ends with response.completed,
//    response.incomplete or (after an `error` event) response.failed, usage or not.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "providers/Canonical.hpp"

namespace sluice::providers::openai {

inline constexpr std::string_view kCustomToolInputKey = "input";
inline constexpr std::string_view kSignaturePrefix = "sluice-sig:";
inline constexpr std::string_view kRedactedPrefix = "sluice-redacted:";

// What the response encoders need from the client's request: the fields a Responses object
// echoes, and which tools were declared custom. Filled by decodeResponsesRequest; immutable after.
struct ResponsesEcho {
  std::string model;                      // as the client named it; used when the upstream names none
  std::string fields;                     // pre-rendered JSON members ("instructions":...,"metadata":{}),
                                          // no leading comma; empty: the defaults
  std::vector<std::string> custom_tools;  // names (as offered upstream) of the {"type":"custom"} tools
  // Tools declared inside a {"type":"namespace"} group, by the name they were offered upstream
  // under: the call items sent back name them as the client declared them, with the namespace.
  struct NamespacedTool {
    std::string offered;  // the name the upstream knows
    std::string ns;       // the namespace
    std::string name;     // the name inside it
  };
  std::vector<NamespacedTool> namespaced;

  bool isCustomTool(std::string_view name) const;
  // The namespaced tool offered upstream as `offered`; null for a top-level tool.
  const NamespacedTool* namespacedTool(std::string_view offered) const;
};

// Client request body -> canonical. A 400 ApiError names the offending field. `echo` (optional)
// receives what the response encoders need.
std::optional<ApiError> decodeResponsesRequest(std::string_view body, Request& out, ResponsesEcho* echo = nullptr);

// Canonical -> client response body (a Responses `response` object). `echo` may be null.
void encodeResponsesResponse(const Response& res, std::string& out, const ResponsesEcho* echo = nullptr);

// Error bodies: the OpenAI shape {"error":{"message","type","param","code"}}.
void encodeResponsesError(const ApiError& err, std::string& out);
ApiError decodeResponsesError(int status, std::string_view body);

struct ResponsesStreamOptions {
  std::int64_t created = 0;                   // created_at; 0: the current time
  std::shared_ptr<const ResponsesEcho> echo;  // may be null
};
std::unique_ptr<StreamEncoder> makeResponsesStreamEncoder(ResponsesStreamOptions opts);

}  // namespace sluice::providers::openai
