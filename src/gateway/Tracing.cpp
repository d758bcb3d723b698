#include "gateway/Tracing.hpp"

#include <fmt/format.h>

#include "gateway/Exchange.hpp"
#include "gateway/Relay.hpp"
#include "gateway/Snapshot.hpp"
#include "routing/Router.hpp"
#include "telemetry/RequestTrace.hpp"

namespace sluice::gateway {

std::string_view genAiOperation(const ClientCall& call) {
  if (call.models_list) return "list_models";
  const std::string_view op = call.op;
  switch (call.wire) {
    case Wire::OpenAI:
      if (op == "/chat/completions" || op == "/responses") return "chat";
      if (op == "/completions") return "text_completion";
      if (op == "/embeddings") return "embeddings";
      break;
    case Wire::Anthropic:
      if (op == "/v1/messages") return "chat";
      if (op == "/v1/messages/count_tokens") return "count_tokens";
      break;
    case Wire::Gemini:
      if (op == "generateContent" || op == "streamGenerateContent") return "generate_content";
      if (op == "embedContent" || op == "batchEmbedContents") return "embeddings";
      if (op == "countTokens") return "count_tokens";
      break;
    case Wire::Bedrock:
      break;
  }
  return op.starts_with('/') ? op.substr(1) : op;
}

std::string_view genAiProvider(config::ChannelType t) {
  switch (t) {
    case config::ChannelType::OpenAI:
      return "openai";
    case config::ChannelType::Anthropic:
      return "anthropic";
    case config::ChannelType::Gemini:
      return "gcp.gemini";
    case config::ChannelType::Azure:
      return "azure.ai.openai";
    case config::ChannelType::OpenAICompatible:
      return "openai_compatible";
    case config::ChannelType::Mock:
      return "sluice.mock";
    case config::ChannelType::Bedrock:
      return "aws.bedrock";
    case config::ChannelType::Vertex:
      return "gcp.vertex_ai";
  }
  return "unknown";
}

void beginAttemptSpan(Exchange& ex, const routing::Pick& p, int n) {
  telemetry::RequestTrace* t = ex.trace;
  if (t == nullptr) return;
  t->attempt = t->begin(genAiOperation(ex.call), telemetry::SpanKind::Client);
  telemetry::SpanRecord* s = t->at(t->attempt);
  if (s == nullptr) return;
  const auto& ch = p.channel->cfg;
  s->set("gen_ai.operation.name", genAiOperation(ex.call));
  s->set("gen_ai.provider.name", genAiProvider(ch.type));
  s->set("server.address", std::string_view(p.channel->endpoint.host));
  s->set("server.port", static_cast<int>(p.channel->endpoint.port));
  s->set("sluice.channel", std::string_view(ch.name));
  s->set("sluice.key", std::string_view(p.key->id));
  s->set("sluice.attempt", n);
}

void endAttemptSpan(Exchange& ex, const relay::Attempt& a) {
  telemetry::RequestTrace* t = ex.trace;
  if (t == nullptr) return;
  if (telemetry::SpanRecord* s = t->at(t->attempt)) {
    if (const std::string& m = ex.route.upstream_model; !m.empty()) {
      s->name.append(" ").append(m);
      s->set("gen_ai.request.model", std::string_view(m));
    }
    if (a.status > 0) s->set("http.response.status_code", a.status);
    // A CLIENT span's error: any status of 400 or more, or no answer at all.
    if (a.status >= 400 || (a.status == 0 && !a.delivered)) {
      s->status = telemetry::StatusCode::Error;
      s->status_message = a.why;
      ex.snap.scrubber.scrub(s->status_message);
      s->set("error.type", a.timeout  ? std::string("timeout")
                           : a.status ? std::to_string(a.status)
                                      : std::string("connect"));
    }
  }
  t->end(t->attempt);
  t->attempt = telemetry::RequestTrace::kNone;
}

}  // namespace sluice::gateway
