#include "gateway/Exchange.hpp"
#include "core/Ascii.hpp"

#include <boost/beast/core/string.hpp>

#include "gateway/BodyFacts.hpp"
#include "gateway/Snapshot.hpp"
#include "telemetry/RequestTrace.hpp"

namespace sluice::gateway {

providers::Format chatFormat(Wire w) {
  switch (w) {
    case Wire::Anthropic:
      return providers::Format::AnthropicMessages;
    case Wire::Gemini:
      return providers::Format::GeminiGenerate;
    case Wire::Bedrock:
      return providers::Format::BedrockConverse;
    case Wire::OpenAI:
      break;
  }
  return providers::Format::OpenAIChat;
}

providers::Format ClientCall::format() const {
  return responses() ? providers::Format::OpenAIResponses : chatFormat(wire);
}

bool ClientCall::translatable() const {
  switch (wire) {
    case Wire::OpenAI:
      return op == "/chat/completions" || op == "/responses";
    case Wire::Anthropic:
      return op == "/v1/messages";
    case Wire::Gemini:
      return op == "generateContent" || op == "streamGenerateContent";
    case Wire::Bedrock:
      break;
  }
  return false;
}

Route::Route() = default;
Route::~Route() = default;

void AnswerPlan::apply(boost::beast::http::fields& to) const {
  for (const auto& [k, v] : rate_headers) to.set(k, v);
  for (const auto& [k, v] : headers) to.set(k, v);
}

void AnswerPlan::appendLines(std::string& out) const {
  for (const auto& [k, v] : rate_headers) out.append(k).append(": ").append(v).append("\r\n");
  for (const auto& [k, v] : headers) out.append(k).append(": ").append(v).append("\r\n");
}

bool AnswerPlan::ownRateHeader(std::string_view name) const {
  return !rate_headers.empty() && name.size() > 12 && sluice::iequals(name.substr(0, 12), "x-ratelimit-");
}

Exchange::Exchange(const Snapshot& s, Services services, http::Request& request, http::Responder& responder,
                   const RequestContext& context, ClientCall& c, RequestRecord& record)
    : snap(s), svc(services), req(request), r(responder), ctx(context), call(c), rec(record), settle(services.limiter) {
  if (snap.cfg->store.log_bodies) body_cap = snap.cfg->store.log_body_max_bytes;
}

http::Response Exchange::failure(int status, std::string_view type, std::string_view code,
                                 const std::string& msg) const {
  http::Response res = gateway::failure(call.wire, ctx, rec, status, type, code, msg);
  answer.apply(res);
  return res;
}

bool Exchange::geminiJsonArray() const {
  return call.wire == Wire::Gemini && route.facts.stream && call.query.find("alt=sse") == std::string::npos;
}

void Exchange::keepBody(std::string_view bytes) {
  if (trace != nullptr) trace->captureOutput(bytes);  // telemetry.capture_content: what the log would see
  if (body_cap == 0 || rec.response_body.size() >= body_cap) return;
  rec.response_body.append(bytes.substr(0, body_cap - rec.response_body.size()));
}

http::Response failure(Wire wire, const RequestContext& ctx, RequestRecord& rec, int status, std::string_view type,
                       std::string_view code, const std::string& msg) {
  rec.status = status;
  rec.error = msg;
  auto res = errorResponse(wire, status, type, code, msg);
  res.set("x-request-id", ctx.id);
  return res;
}

}  // namespace sluice::gateway
