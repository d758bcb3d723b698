#include "gateway/Wire.hpp"

#include <boost/beast/http/field.hpp>

#include "core/JsonText.hpp"
#include "providers/UpstreamPath.hpp"

namespace sluice::gateway {

namespace bhttp = boost::beast::http;

namespace {

const char* anthropicType(int status) {
  switch (status) {
    case 400: return "invalid_request_error";
    case 401: return "authentication_error";
    case 403: return "permission_error";
    case 404: return "not_found_error";
    case 413: return "request_too_large";
    case 429: return "rate_limit_error";
    case 529: return "overloaded_error";
    default: return status >= 500 ? "api_error" : "invalid_request_error";
  }
}

const char* googleStatus(int status) {
  switch (status) {
    case 400: return "INVALID_ARGUMENT";
    case 401: return "UNAUTHENTICATED";
    case 403: return "PERMISSION_DENIED";
    case 404: return "NOT_FOUND";
    case 405: return "INVALID_ARGUMENT";
    case 409: return "ABORTED";
    case 413: return "INVALID_ARGUMENT";
    case 429: return "RESOURCE_EXHAUSTED";
    case 499: return "CANCELLED";
    case 501: return "UNIMPLEMENTED";
    case 503: return "UNAVAILABLE";
    case 504: return "DEADLINE_EXCEEDED";
    default: return status >= 500 ? "INTERNAL" : "FAILED_PRECONDITION";
  }
}

std::string errorBody(Wire w, int status, std::string_view type, std::string_view code, std::string_view message) {
  std::string b;
  b.reserve(message.size() + 96);
  switch (w) {
    case Wire::OpenAI:
    case Wire::Bedrock:  // never a client's wire
      b.append("{\"error\":{\"message\":");
      appendJsonString(b, message);
      b.append(",\"type\":");
      appendJsonString(b, type);
      b.append(",\"param\":null,\"code\":");
      if (code.empty()) b.append("null"); else appendJsonString(b, code);
      b.append("}}");
      break;
    case Wire::Anthropic:
      b.append("{\"type\":\"error\",\"error\":{\"type\":");
      appendJsonString(b, anthropicType(status));
      b.append(",\"message\":");
      appendJsonString(b, message);
      b.append("}}");
      break;
    case Wire::Gemini:
      b.append("{\"error\":{\"code\":").append(std::to_string(status)).append(",\"message\":");
      appendJsonString(b, message);
      b.append(",\"status\":");
      appendJsonString(b, googleStatus(status));
      b.append("}}");
      break;
  }
  return b;
}

}  // namespace

const char* wireName(Wire w) {
  switch (w) {
    case Wire::OpenAI: return "OpenAI";
    case Wire::Anthropic: return "Anthropic";
    case Wire::Gemini: return "Gemini";
    case Wire::Bedrock: return "Bedrock";
  }
  return "?";
}

Wire channelWire(config::ChannelType t, std::string_view upstream_model) {
  switch (t) {
    case config::ChannelType::Vertex:
      return providers::vertexAnthropic(upstream_model) ? Wire::Anthropic : Wire::Gemini;
    case config::ChannelType::Anthropic: return Wire::Anthropic;
    case config::ChannelType::Gemini: return Wire::Gemini;
    case config::ChannelType::Bedrock: return Wire::Bedrock;
    default: return Wire::OpenAI;
  }
}

http::Response errorResponse(Wire w, int status, std::string_view type, std::string_view code,
                             std::string_view message) {
  http::Response res{static_cast<bhttp::status>(status), 11};
  res.set(bhttp::field::content_type, "application/json");
  res.body() = errorBody(w, status, type, code, message);
  return res;
}

std::string streamErrorEvent(Wire w, int status, std::string_view code, std::string_view message, bool responses) {
  if (responses) {
    std::string e = "event: error\ndata: {\"type\":\"error\",\"code\":";
    appendJsonString(e, code);
    e.append(",\"message\":");
    appendJsonString(e, message);
    e.append(",\"param\":null}\n\n");
    return e;
  }
  switch (w) {
    case Wire::Anthropic:
      return "event: error\ndata: " + errorBody(w, status, "", code, message) + "\n\n";
    case Wire::OpenAI:
    case Wire::Bedrock:
      return "data: " + errorBody(w, status, "server_error", code, message) + "\n\n";
    case Wire::Gemini:
      return "data: " + errorBody(w, status, "", code, message) + "\n\n";
  }
  return {};
}

}  // namespace sluice::gateway
