// Protect: the I/O-free halves of redaction in the request path. scanRequest() redacts the text
// fields of a client request body (every client format) before it goes upstream and collects
// the text the guards need; restoreWholeBody() and makeRestoringEncoder() put the values of
// tokens back into the answer, whole or streamed, before the client sees it.
//
// Performance: one JSON parse per request; when nothing matched, no copy of the body and no
// allocation per text field (the Redactor allocates only on a hit). Restoring parses an answer
// only when it contains "[[sluice:", and a stream event without '[' passes through untouched.
// Thread-safety: the functions are thread-safe; a restoring encoder is one per stream.
#pragma once
#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "providers/Canonical.hpp"
#include "redact/Rules.hpp"

namespace boost::json {
class value;
}

namespace sluice::redact {
class Redactor;
class TokenCipher;
class SealMemo;
struct RestoreStats;
}  // namespace sluice::redact

namespace sluice::pipeline {

struct ScanOptions {
  bool collect_user_text = true;         // RequestScan::user_text, for the prompt-injection screen
  std::size_t max_user_text = 64 * 1024;  // bytes; cut on a UTF-8 character boundary
  bool collect_outgoing = false;         // RequestScan::outgoing, for an external guardrail webhook
  bool collect_tool_text = false;        // RequestScan::tool_texts, for the prompt-injection screen
  std::size_t max_tool_parts = 32;       // the last ones are kept (an agent's newest results)
};

// One tool result / function output as the client sent it (before redaction), for screening.
struct ToolText {
  std::string path;  // JSON path of the part, e.g. "messages[3]" or "contents[2].parts[0]"
  std::string text;  // its text parts joined with '\n' (Gemini: the response object as JSON); capped
};

// One text field as it goes upstream (after redaction).
struct OutgoingText {
  std::string_view role;  // "system" | "user" | "assistant" | "tool" (static storage)
  redact::Field field;    // kToolArguments: role "assistant", text = the call's arguments JSON
  std::string text;
};

struct RequestScan {
  bool ok = false;       // false: the body is not a JSON object; nothing was done (the normal
                         // validation answers it); every other member is empty
  bool changed = false;  // `body` holds the redacted body to send instead of the client's
  std::string body;
  std::string blocked_rule;  // non-empty: a `block` rule hit; refuse the request (400)
  std::string blocked_path;  // JSON path of that field, e.g. "messages[2].content[0].text"
  std::size_t encrypted = 0;
  std::size_t masked = 0;
  std::vector<std::string> rules_hit;  // distinct rule names, in order of first hit
  std::string user_text;               // the last user turn's text, before redaction
  std::vector<ToolText> tool_texts;    // only with ScanOptions::collect_tool_text
  std::vector<OutgoingText> outgoing;  // only with ScanOptions::collect_outgoing
};

// Walks the text fields of a `client`-format request body, each in its redact::Field:
//   OpenAI Chat   messages[] by role: system/developer -> kSystem, user -> kUser, assistant ->
//                 kAssistant (content, refusal parts, reasoning_content) with
//                 tool_calls[].function.arguments -> kToolArguments, tool/function -> kTool;
//                 content a string or text parts (other parts untouched).
//   Responses     instructions -> kSystem; input string -> kUser; message items by role (text
//                 parts input_text/output_text/text/refusal); function_call.arguments and
//                 custom_tool_call.input -> kToolArguments; *_call_output.output -> kTool.
//   Anthropic     system -> kSystem; messages[] text blocks by role; tool_use.input (every
//                 string inside) -> kToolArguments; tool_result.content -> kTool; thinking and
//                 redacted_thinking untouched (signed).
//   Gemini        systemInstruction.parts[].text -> kSystem; contents[] role user/absent ->
//                 kUser, model -> kAssistant; functionCall.args -> kToolArguments and
//                 functionResponse.response (every string inside) -> kTool; thought parts
//                 untouched. Both camelCase and snake_case spellings.
// Arguments given as JSON text (OpenAI, Responses function_call) are redacted value by value,
// decoded, like an Anthropic input object, and re-serialized when one changed; text that is not
// a JSON object/array is redacted as plain text.
// redactor may be null: then only user_text / outgoing are collected.
// A block hit stops the scan (blocked_rule/blocked_path set, changed false).
// user_text: the last user turn = the last user-role message holding text (tool results are
// not user text, so an Anthropic/Gemini message of tool results only is skipped) together with
// the user-role messages right before it; its text parts joined with '\n'.
// tool_texts: every tool result in the request (Chat role tool/function messages, Responses
// *_call_output items, Anthropic tool_result blocks, Gemini functionResponse parts), one entry
// each, the last max_tool_parts of them, each capped at max_user_text bytes.
// Unexpected shapes are left alone. Never throws except std::bad_alloc.
// parsed (optional): `body` already parsed (its document is edited in place and left in an
// unspecified state), to save a second parse.
RequestScan scanRequest(providers::Format client, std::string_view body, const redact::Redactor* redactor,
                        const ScanOptions& opts = {}, boost::json::value* parsed = nullptr);

// Restores tokens in a whole answer body of any client format (a JSON object, or the JSON array
// of a Gemini stream without alt=sse). A string that is itself JSON object/array text (tool-call
// arguments, JSON-mode content) gets JSON-escaped values (Restorer depth 1), any other string the
// plain value. In a Gemini array the text parts of candidate 0 are one stream (a token split
// across chunks is restored; bytes may move to a later part). The body is re-serialized only
// when a token was restored; returns true then. Non-JSON bodies are left alone. Counts into
// `stats` (tampered tokens stay as they are). memo (optional): the tokens the request sealed, put
// back without decrypting (Restorer.hpp).
bool restoreWholeBody(std::string& body, const redact::TokenCipher& cipher, redact::RestoreStats& stats,
                      const redact::SealMemo* memo = nullptr);

// Wraps a client-format encoder so the events it encodes carry restored text: Text and
// Reasoning runs each through one Restorer (depth 0), ToolCallArgs through one Restorer (depth 1)
// per tool_index. A run ends, and what its Restorer holds is sent as one more event of its kind,
// before an event that ends it:
//   text run       Reasoning, RedactedReasoning, ToolCallStart, ToolCallArgs, Finish, Done, Error;
//   reasoning run  Text, ReasoningSignature, RedactedReasoning, ToolCallStart, ToolCallArgs,
//                  Finish, Done, Error;
//   tool-call run  Text, Reasoning, ReasoningSignature, RedactedReasoning, ToolCallStart of
//                  another index, Finish, Done, Error
// and at finish(). Start, Usage and Ping end nothing (Gemini repeats usage in every chunk).
// An event whose text is wholly held back is not passed on (the encoders open blocks/items on
// the first non-empty text). stats (may be null) is added to as tokens are seen.
// Use through providers::TranslateContext::wrap_encoder.
std::unique_ptr<providers::StreamEncoder> makeRestoringEncoder(std::unique_ptr<providers::StreamEncoder> inner,
                                                               std::shared_ptr<const redact::TokenCipher> cipher,
                                                               std::shared_ptr<redact::RestoreStats> stats,
                                                               std::shared_ptr<const redact::SealMemo> memo = nullptr);

}  // namespace sluice::pipeline
