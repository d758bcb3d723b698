// CacheKey: the exact-match response cache's key for one request: SHA-256 over the namespace,
// the client format and a canonical rendering of the request fields that change the answer.
// Pure functions; thread-safe.
//
// What is in the key (every body field not listed below as left out, so an unknown field that
// might change the answer keeps two requests apart; the conservative direction):
//  - the client format (OpenAI Chat, Responses, Anthropic Messages, Gemini: the endpoint
//    family; entries are not shared across formats), the model as the client named it (Gemini:
//    from the URL path), messages / input / contents, system prompts, tools, tool_choice,
//    response formats, temperature, top_p, top_k, max_tokens (every spelling), stop, seed,
//    penalties, reasoning settings, safetySettings ... and the namespace (see namespaceFor()).
//  - canonical JSON: object members sorted by key bytes, no whitespace, numbers normalized
//    (1, 1.0 and 1e0 are one number: integral values within +-2^53 print as integers, other
//    doubles in shortest round-trip form), strings re-escaped one way. Member order, spacing
//    and number spelling therefore do not change the key.
//
// What is left out, and why (none of these changes what the model answers):
//  - stream, stream_options (and Gemini's :streamGenerateContent / alt=sse, which live in the
//    URL): a streamed and a whole request share one entry; Replay renders either.
//  - user, safety_identifier, metadata (Anthropic metadata.user_id, OpenAI metadata): end-user
//    and bookkeeping tags. They are per caller; isolation between callers is the namespace's
//    job, not the key's.
//  - store, service_tier, prompt_cache_key, prompt_cache_retention: storage, billing tier and
//    provider-side prompt caching.
//  - Anthropic cache_control on system blocks, message content blocks and tools (prompt
//    caching breakpoints); Gemini `labels` (billing labels).
//  - n / candidateCount equal to 1 (the default) are dropped so that "n":1 and no n match.
//
// Uncacheable (reported with a reason; the request is relayed as usual, nothing is stored):
//  - not a JSON object; n or candidateCount above 1 (an entry holds one answer);
//  - asks for what an entry cannot replay: logprobs / top_logprobs, responseLogprobs, audio
//    output (modalities / responseModalities other than text);
//  - depends on state kept elsewhere: Responses previous_response_id, conversation, background,
//    prompt (stored templates); Gemini cachedContent;
//  - server-side tools whose answers are not in the canonical form (OpenAI tools other than
//    "function" (Responses: also "custom"), Anthropic tools with a type other than "custom",
//    Gemini tools other than functionDeclarations).
// Sampling: requests are cached whatever their temperature. A caller who enabled the cache asked
// for repeat answers; temperature is in the key, so different settings do not share entries.
// Callers who want fresh samples send Cache-Control: no-cache (Controls.hpp).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "providers/Canonical.hpp"

namespace sluice::cache {

struct CacheKey {
  std::string hex;  // 64 lowercase hex digits of the SHA-256; what backends index by
  bool operator==(const CacheKey&) const = default;
};

struct KeyResult {
  std::optional<CacheKey> key;  // empty: uncacheable
  std::string uncacheable;      // why, when `key` is empty (for the log)
};

// `ns` is the namespace (namespaceFor()); `path_model` is the model from the URL (Gemini;
// ignored for other formats, whose body names the model).
KeyResult makeCacheKey(providers::Format client, std::string_view body, std::string_view ns,
                       std::string_view path_model = {});

// The default namespace: one per virtual key ("vk:<id>"), "master" for the master key, so no
// caller is served another caller's answers; "shared" when the key's settings opt into a cache
// shared by every caller that also opts in.
std::string namespaceFor(std::optional<std::int64_t> virtual_key_id, bool shared = false);

// The canonical JSON text the key hashes (without namespace and format); for tests and
// debugging. Empty with `why` set when uncacheable.
std::string canonicalRequestText(providers::Format client, std::string_view body, std::string_view path_model,
                                 std::string* why);

}  // namespace sluice::cache
