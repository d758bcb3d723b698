// The request path's spans (OpenTelemetry, telemetry/): what the trace stage (stages/
// TraceStage.cpp) and the relay record, with the GenAI semantic conventions' names
// (gen_ai.operation.name, gen_ai.provider.name, gen_ai.request.model, gen_ai.usage.*) beside
// Sluice's own (sluice.*). Every function here is a no-op when the request is not traced.
#pragma once
#include <string_view>

#include "config/Config.hpp"

namespace sluice::routing {
struct Pick;
}

namespace sluice::gateway {

struct Exchange;
struct ClientCall;
namespace relay {
struct Attempt;
}

// "chat", "text_completion", "embeddings", "generate_content", ... for what the client called.
std::string_view genAiOperation(const ClientCall& call);
// "openai", "anthropic", "gcp.gemini", "azure.ai.openai", ... for a channel's type.
std::string_view genAiProvider(config::ChannelType t);

// An upstream attempt's CLIENT span, a child of the request's; it parents the attempt's connect
// and first byte and names the parent an upstream is sent in its traceparent. It is named, at
// its end, for the model the attempt asked its channel for (ex.route.upstream_model).
void beginAttemptSpan(Exchange& ex, const routing::Pick& p, int n);
void endAttemptSpan(Exchange& ex, const relay::Attempt& a);

}  // namespace sluice::gateway
