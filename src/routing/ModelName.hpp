// The rule for a model name a client may ask for. A name reaches upstream URLs (Gemini's
// /v1beta/models/{model}, Azure's /openai/deployments/{name}) and logs, so it is checked once,
// before routing, and a name that breaks the rule is the client's to fix (400).
//
// A model name is 1..kMaxModelNameBytes bytes of printable ASCII (0x21..0x7E): no space, tab,
// control character or non-ASCII byte, and none of '?', '#', '%' (they cut or re-read a URL) or
// '\' (some servers read it as '/'). '/' is allowed (meta-llama/Llama-3.1-8B-Instruct, the
// CHANNEL/MODEL pin, Gemini's models/NAME), but only between non-empty segments none of which
// is "." or "..". Real names all fit: gpt-4o-2024-08-06, ft:gpt-4o-mini:org::id,
// anthropic.claude-3-5-sonnet-20240620-v1:0, models/gemini-2.5-flash.
// Pure functions; any thread.
#pragma once
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace sluice::routing {

inline constexpr std::size_t kMaxModelNameBytes = 256;

// Why `name` is not a model name ("holds a space", ...), or nullopt when it is one.
std::optional<std::string> modelNameProblem(std::string_view name);
inline bool isModelName(std::string_view name) {
  return !modelNameProblem(name);
}

// `name` for an error message: at most 64 bytes, anything outside printable ASCII as \xNN.
std::string printableModelName(std::string_view name);

// The client-facing sentence for a name that breaks the rule.
std::string modelNameError(std::string_view name, std::string_view problem);

}  // namespace sluice::routing
