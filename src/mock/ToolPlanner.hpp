// ToolPlanner: decides whether the mock answers with tool calls, and with which arguments.
// Format-neutral: each wire format's parser extracts the offered tools, the tool choice and the
// conversation's last user turn / tool results into a ToolRequest, and renders the decision.
//
// The rules, the same in every format:
//  - a tool result after the last user turn (OpenAI role "tool", Anthropic tool_result, Gemini
//    functionResponse, Responses function_call_output) -> a text answer, "The tool returned: "
//    + the first 200 code points of the result(s), so agent loops finish;
//  - tool choice "none" (or no tools) -> the usual text;
//  - the last user turn names offered tools (case-insensitive, whole word; "get_weather" also
//    as "get weather") -> one call per named tool, in the order named (parallel calls; only the
//    first when parallel calls are disabled);
//  - else it asks "use/call/invoke/run a|the|any|your [X] tool|function" -> the tool whose name
//    contains X, else the first tool;
//  - a forced choice (OpenAI "required" / a named function, Anthropic "any" / "tool", Gemini mode
//    ANY, Responses "required") calls a tool even when not asked: the named / first allowed one;
//  - a partial answer to continue (a trailing assistant turn, Anthropic's prefill; or an assistant
//    turn followed by a user turn asking to continue it, "...cut off. Continue...") -> the rest
//    of the usual sentence after it when it is a start of that sentence (as a model resumes its
//    own answer), else the usual sentence.
// A custom (Responses free-form) tool's input is customInput(), and so is the one argument of a
// function whose schema is {"input": string}, required (a free-form tool offered as a function).
// Other arguments fit the tool's JSON schema: required properties only, strings "example", numbers 1
// (or the minimum), booleans true, enums their first value, objects recursively, arrays one item.
// Pure functions; thread-safe.
#pragma once
#include "mock/MockGeneration.hpp"

#include <boost/json/fwd.hpp>

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace sluice::mock {

inline constexpr std::size_t kToolResultEcho = 200;  // code points of the result quoted back

struct ToolSpec {
  ToolSpec(std::string n, const boost::json::value* s, std::string space = {}, bool free_form = false)
      : name(std::move(n)), schema(s), ns(std::move(space)), custom(free_form) {}
  std::string name;
  const boost::json::value* schema = nullptr;  // JSON schema of the arguments; may be null
  std::string ns;                              // Responses: its namespace, if any
  bool custom = false;                         // Responses: free-form input (customInput)
};

// The input of a call of a custom (free-form) tool: the text after the first ": " of the last
// user turn ("Use the exec tool to run: text('hi')" -> "text('hi')"), else "example".
std::string customInput(std::string_view last_user_text);

enum class ToolChoiceMode { Auto, None, Required, Named };

struct ToolRequest {
  std::vector<ToolSpec> tools;
  ToolChoiceMode mode = ToolChoiceMode::Auto;
  std::string forced_name;           // Named
  std::vector<std::string> allowed;  // Gemini allowedFunctionNames; empty = all
  bool parallel = true;
  std::string last_user_text;
  std::vector<std::string> tool_results;  // after the last user turn, in order
  // The text of the assistant turn after the last user turn (a prefill), or of the one before a
  // last user turn that asks to continue; empty: none.
  std::string partial_answer;
};

// Whether a user turn asks to continue the answer before it.
bool asksToContinue(std::string_view user_text);
// The partial answer to continue in a conversation of `turns` turns whose last user turn is
// `last_user` (== turns: none) saying `last_user_text`: a trailing assistant turn, or the one
// before a last user turn that asks to continue it. assistantText(i): turn i's text when it is
// the assistant's (model's), else empty.
std::string partialAnswer(std::size_t turns, std::size_t last_user, std::string_view last_user_text,
                          const std::function<std::string(std::size_t)>& assistantText);

struct ToolDecision {
  std::vector<ToolCall> calls;        // empty: answer in text
  std::optional<std::string> reply;   // the text answer to tool results
  std::string user_text;              // the last user turn (for echo)
  std::optional<std::string> resume;  // a partial answer to continue
};

ToolDecision decideTools(const ToolRequest& req);
// x-mock-echo: every string inside the calls' arguments becomes the last user text; with no
// calls, that text is the answer (unless it answers tool results).
void echoUserText(ToolDecision& d);

// Arguments for a schema, as a JSON object text. Null or non-object schemas give "{}".
std::string exampleArguments(const boost::json::value* schema);
boost::json::value exampleValue(const boost::json::value& schema);

// The Generation for a decision: tool calls, the reply to tool results, or the usual sentence.
Generation planAnswer(const ToolDecision& d, std::size_t chunks, std::optional<std::int64_t> max_tokens,
                      const std::vector<std::string>& stop, int choices);

// Text of a message content that is a string or an array of parts with "text" (any format);
// other values are serialized as JSON.
std::string contentText(const boost::json::value& v);

}  // namespace sluice::mock
