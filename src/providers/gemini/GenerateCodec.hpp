// GenerateCodec: Gemini generateContent / streamGenerateContent <-> canonical form
// (Canonical.hpp), both directions, streaming and not, plus error bodies. Pure functions and
// per-stream objects; no I/O.
//
// The model is not in a Gemini body (it is in the URL path, /v1beta/models/{model}:method):
// decodeGenerateRequest leaves Request::model empty and the caller fills it (Translate.cpp takes
// TranslateContext::client_model); encodeGenerateRequest writes no model (the caller puts
// EncodeOptions::model / Request::model into the path). Streaming is the method too:
// streamGenerateContent?alt=sse, never a body field.
//
// Rules where Gemini and the canonical form differ (the translation contract):
//  - both JSON spellings of request fields are accepted (camelCase and the proto snake_case,
//    e.g. systemInstruction / system_instruction, inlineData / inline_data); errors name the
//    camelCase field. Roles may repeat (user, user, model ...) and are kept as separate turns;
//    a missing role is "user"; role "function" (legacy function responses) is "user".
//  - parts: text, inlineData (images only), fileData (images only, becomes an image URL),
//    functionCall, functionResponse, thought:true text. Anything else (executableCode,
//    codeExecutionResult, audio / video / PDF data) is rejected with a 400 naming the part.
//  - tool-call ids: Gemini may omit them. Decoding synthesizes "call_<n>" (n counts the calls
//    of the request, or of the response), and a functionResponse without id answers the oldest
//    unanswered call of the same name (a 400 when there is none). Encoding toward a Gemini
//    upstream sends no ids (Gemini matches by name and order); encoding a response for a Gemini
//    client writes functionCall.id, so the client echoes it back in functionResponse.id.
//  - functionResponse.response: an object whose only member is a string "output", "result" or
//    "content" becomes that text; {"error": ...} alone sets is_error; any other object becomes
//    its JSON text. Toward Gemini, tool-result text that is a JSON object is sent as the
//    response object itself, other text as {"output": text} ({"error": text} when is_error);
//    images in tool results follow the functionResponse as inlineData parts.
//  - parameters (OpenAPI subset, upper-case types such as "OBJECT") are accepted and their
//    `type` names lower-cased; parametersJsonSchema is accepted as is. Toward Gemini, tool
//    schemas are sent as parametersJsonSchema (full JSON Schema, no subset conversion).
//  - toolConfig.functionCallingConfig: AUTO/VALIDATED <-> auto, NONE <-> none, ANY <-> required,
//    ANY with one allowedFunctionNames <-> a named tool; ANY with several names keeps only those
//    tools and becomes required. parallel_tool_calls has no Gemini field and is dropped.
//  - generationConfig: temperature, topP, topK, maxOutputTokens, stopSequences,
//    responseMimeType application/json (+ responseSchema / responseJsonSchema -> json_schema,
//    name "response"), thinkingConfig.thinkingBudget (0 = off, -1 = dynamic = left unset),
//    thinkingLevel (minimal -> off, low/medium/high -> the OpenAI effort budgets). Toward Gemini,
//    a thinking budget above 0 also sets includeThoughts so reasoning comes back.
//  - dropped when translating: safetySettings, seed, presence/frequencyPenalty, mediaResolution,
//    labels, includeThoughts (thought parts are always passed on; Gemini SDKs skip them in
//    .text), functionDeclaration response schemas, user (no Gemini field), RedactedReasoning.
//  - rejected with 400: cachedContent, candidateCount / n above 1, responseLogprobs / logprobs,
//    responseModalities other than TEXT, speechConfig, responseMimeType other than
//    text/plain and application/json, non-function tools (googleSearch, codeExecution, ...).
//  - thoughtSignature (the rule): any Gemini part may carry one; it is kept on the canonical
//    part (thought text -> Reasoning.signature; text / functionCall -> Part.signature) and
//    written back on the same part toward Gemini. Other formats carry it as follows:
//      Anthropic: a thinking block's signature is the signature of that reasoning, so it maps
//        to a thought part's thoughtSignature and back. A functionCall's signature has no
//        Anthropic field: it travels in a "carrier" thinking block with empty thinking text
//        placed just before the tool_use block; a reasoning part with empty text and a
//        signature is, toward Gemini, moved onto the next part of the same turn. (Anthropic
//        signatures are only valid at Anthropic and Gemini's only at Gemini: a history is
//        replayable to the provider that signed it.)
//      OpenAI: functionCall signatures ride in tool_calls[].extra_content.google.thought_signature
//        (Google's OpenAI-compatibility convention) in responses and stream deltas, and are read
//        back from assistant tool_calls; reasoning signatures are dropped.
//    Toward Gemini, unsigned reasoning is not replayed (like Anthropic); consecutive thought
//    parts of one turn merge into one reasoning part until one carries a signature; a model turn
//    whose function calls carry no signature at all gets kSkipSignature on its first call
//    (Google's documented value for histories Gemini did not produce).
//  - finishReason: STOP -> stop (tool_calls when the candidate holds function calls),
//    MAX_TOKENS -> length, SAFETY / RECITATION / BLOCKLIST / PROHIBITED_CONTENT / SPII /
//    IMAGE_SAFETY -> content_filter, others -> other; a prompt blocked by promptFeedback is an
//    empty content_filter answer. Only the first candidate is translated.
//  - usage: input = promptTokenCount (+ toolUsePromptTokenCount; cached tokens included),
//    output = candidatesTokenCount + thoughtsTokenCount, reasoning = thoughtsTokenCount,
//    cached = cachedContentTokenCount. Stream usageMetadata repeats; the last one wins.
//    Encoding: candidatesTokenCount = output - reasoning; cache writes (which Gemini does not
//    report: its caches are made by a call of their own) stay inside promptTokenCount.
//  - streams: every Gemini chunk is a whole GenerateContentResponse with no [DONE]; function
//    calls arrive whole. The encoder writes text deltas as they come, holds a function call
//    until its arguments are complete, and ends with a chunk carrying finishReason and
//    usageMetadata. Events are framed as "data: {...}\r\n\r\n" (alt=sse), or, when the client
//    called streamGenerateContent without alt=sse, as one JSON array written incrementally.
//  - errors: {"error":{"code","message","status"}} both ways; status strings map to kinds
//    (INVALID_ARGUMENT 400, UNAUTHENTICATED 401, PERMISSION_DENIED 403, NOT_FOUND 404,
//    RESOURCE_EXHAUSTED 429, INTERNAL 500, UNAVAILABLE 503, DEADLINE_EXCEEDED 504); the HTTP
//    status is kept.
#pragma once
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "providers/Canonical.hpp"

namespace sluice::providers::gemini {

inline constexpr std::string_view kSkipSignature = "skip_thought_signature_validator";

// Client request body -> canonical (model empty, stream false: both come from the URL).
std::optional<ApiError> decodeGenerateRequest(std::string_view body, Request& out);
// Canonical -> upstream request body (no model, no stream flag).
std::optional<ApiError> encodeGenerateRequest(const Request& req, const EncodeOptions& opts, std::string& out);

// Upstream (non-stream) GenerateContentResponse -> canonical; a 502 ApiError when it is not one.
std::optional<ApiError> decodeGenerateResponse(std::string_view body, Response& out);
void encodeGenerateResponse(const Response& res, std::string& out);

// Error bodies: {"error":{"code","message","status"}}.
void encodeGenerateError(const ApiError& err, std::string& out);
ApiError decodeGenerateError(int status, std::string_view body);

std::string_view finishReasonName(FinishReason f);
std::string_view statusName(ErrorKind k);  // INVALID_ARGUMENT ...

std::unique_ptr<StreamDecoder> makeGenerateStreamDecoder();

struct GenerateStreamOptions {
  bool json_array = false;  // streamGenerateContent without alt=sse: a JSON array, not SSE
};
std::unique_ptr<StreamEncoder> makeGenerateStreamEncoder(const GenerateStreamOptions& opts);

}  // namespace sluice::providers::gemini
