// The request target sent to a provider, built in one place. Every value a client chose (the
// model, its query parameters) goes in as exactly one percent-encoded path segment or query
// value; only the gateway's own text (the channel's base path, the endpoint names of its route
// table, '?', '&', '=', ':') appears unencoded. Pure functions; any thread.
#pragma once
#include <optional>
#include <string>
#include <string_view>

#include "config/Config.hpp"

namespace sluice::providers {

// Appends `v` percent-encoded so that it is one path segment (or one query name or value):
// every byte but RFC 3986 unreserved (ALPHA DIGIT - . _ ~) becomes %XX, '/' included; a whole
// "." or ".." is encoded too, so no dot segment can appear.
void appendEncoded(std::string& out, std::string_view v);

// Percent-decodes `v` (a query part with `plus_is_space`: '+' is a space); nullopt for a '%' not
// followed by two hex digits.
std::optional<std::string> percentDecode(std::string_view v, bool plus_is_space = false);

// The model as a channel of `type` puts it in the URL path: Gemini's own "models/NAME" form
// loses its prefix; other types keep the name (openai-style channels carry it in the body).
std::string_view pathModel(config::ChannelType type, std::string_view model);

// Why `model` cannot be sent to a channel of `type`, or nullopt. Gemini, Azure and Vertex put the
// model in the path as one segment, so a '/' (past Gemini's "models/") is refused there; it travels
// in the JSON body everywhere else. Vertex also refuses ':' (the segment's method separator).
std::optional<std::string> pathModelProblem(config::ChannelType type, std::string_view model);

// Vertex AI serves a model from its publisher: Anthropic's Claude models (rawPredict, Anthropic
// Messages bodies) or Google's (generateContent, Gemini bodies). A vertex channel's wire is
// decided per model by this.
bool vertexAnthropic(std::string_view model);

// The client's query string as it may go upstream: each name and value decoded (query style:
// '+' is a space) and re-encoded, empty parts and the client's own key (`key`) dropped.
struct ForwardedQuery {
  std::string query;    // encoded; empty when nothing is forwarded
  std::string problem;  // non-empty: refuse the request with 400 (a bad escape, a control character)
};
ForwardedQuery forwardQuery(std::string_view raw);

// What decides one upstream request target.
struct TargetParts {
  std::string_view base_path;  // the channel's (from config), "" or "/v1"-like
  config::ChannelType type = config::ChannelType::OpenAI;
  std::string_view api_version;  // Azure; empty: config::kAzureApiVersion
  // The client's format differs from the channel's: the builder names the endpoint, and the
  // client's op and query are not used.
  bool translated = false;
  bool stream = false;     // translated to Gemini: streamGenerateContent?alt=sse; Bedrock: converse-stream
  std::string_view op;     // the client's endpoint from the gateway's route table:
                           // "/chat/completions", "/v1/messages", "generateContent", ...
  std::string_view model;  // the upstream model; Gemini and Azure put it in the path
  std::string_view query;  // forwardQuery(...).query: already encoded
  std::string_view project;   // Vertex (validated by the config; encoded all the same)
  std::string_view location;
  // Translated to the Responses API (a ChatGPT subscription channel): POST {base}/responses.
  bool responses = false;
};

// The request target ("/v1beta/models/gemini-2.5-flash:generateContent?alt=sse"; Vertex:
// "/v1/projects/P/locations/L/publishers/anthropic/models/claude-sonnet-4@20250514:streamRawPredict").
std::string upstreamTarget(const TargetParts& t);

}  // namespace sluice::providers
