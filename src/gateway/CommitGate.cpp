#include "gateway/CommitGate.hpp"

#include <boost/json/value.hpp>

#include "core/JsonText.hpp"
#include "providers/bedrock/ConverseCodec.hpp"

namespace sluice::gateway {

namespace json = boost::json;
using Verdict = CommitGate::Verdict;

namespace {

const json::object* objectAt(const json::object& o, std::string_view key) {
  const auto* v = o.if_contains(key);
  return v && v->is_object() ? &v->as_object() : nullptr;
}

std::string_view stringAt(const json::object& o, std::string_view key) {
  const auto* v = o.if_contains(key);
  return v && v->is_string() ? std::string_view(v->as_string()) : std::string_view();
}

bool nonEmptyString(const json::object& o, std::string_view key) { return !stringAt(o, key).empty(); }

bool nonEmptyArray(const json::object& o, std::string_view key) {
  const auto* v = o.if_contains(key);
  return v && v->is_array() && !v->as_array().empty();
}

bool present(const json::object& o, std::string_view key) {
  const auto* v = o.if_contains(key);
  return v && !v->is_null();
}

// The status an error object stands for: its own numeric code when it is one, else what its
// type or code names.
int errorStatus(const json::object& e) {
  if (const auto* c = e.if_contains("code"); c && c->is_int64() && c->as_int64() >= 400 && c->as_int64() <= 599)
    return static_cast<int>(c->as_int64());
  const std::string_view type = stringAt(e, "type"), code = stringAt(e, "code");
  auto names = [&](std::string_view what) {
    return type.find(what) != std::string_view::npos || code.find(what) != std::string_view::npos;
  };
  if (type == "overloaded_error") return 529;  // Anthropic's own status for it
  if (names("rate_limit")) return 429;
  if (names("overloaded")) return 503;
  if (type == "authentication_error") return 401;
  if (type == "permission_error") return 403;
  if (type == "not_found_error") return 404;
  if (type == "request_too_large") return 413;
  if (type == "invalid_request_error") return 400;
  return 500;
}

std::string errorMessage(const json::object& e, std::string_view fallback) {
  std::string_view m = stringAt(e, "message");
  std::string out(m.empty() ? fallback : m.substr(0, 300));
  for (char& c : out)
    if (c == '\n' || c == '\r') c = ' ';
  return out;
}

}  // namespace

// An `error` member that is not null: an object says what it is; anything else is a server error.
Verdict CommitGate::errorMember(const json::value& e, std::string_view data) {
  if (e.is_object()) return fail(errorStatus(e.as_object()), data, errorMessage(e.as_object(), "error chunk"));
  std::string msg = e.is_string() ? std::string(e.as_string().subview().substr(0, 300)) : "error chunk";
  for (char& c : msg)
    if (c == '\n' || c == '\r') c = ' ';
  return fail(500, data, std::move(msg));
}

Verdict CommitGate::fail(int status, std::string_view data, std::string message) {
  status_ = status;
  error_data_.assign(data.substr(0, 64 * 1024));
  message_ = std::move(message);
  return Verdict::Fail;
}

Verdict CommitGate::feed(std::string_view bytes) {
  if (verdict_ != Verdict::Hold) return verdict_;
  held_ += bytes.size();
  if (format_ == providers::Format::BedrockConverse) return verdict_ = feedEventStream(bytes);
  const bool whole = split_.feed(bytes, [&](std::string_view name, std::string_view data) {
    if (verdict_ == Verdict::Hold) verdict_ = onEvent(name, data);
  });
  if (verdict_ == Verdict::Hold && (!whole || held_ > kMaxHeld)) verdict_ = Verdict::Commit;
  return verdict_;
}

Verdict CommitGate::feedEventStream(std::string_view bytes) {
  messages_.clear();
  // The messages completed before any malformed bytes decide first, as they would had the bytes
  // come in smaller reads: the verdict never depends on how the stream was split.
  const bool well_formed = frames_.feed(bytes, messages_);
  for (const auto& m : messages_) {
    const Verdict v = onAwsMessage(m);
    if (v != Verdict::Hold) return v;
  }
  if (!well_formed) return fail(502, {}, "the upstream event stream is malformed: " + frames_.error());
  return held_ > kMaxHeld ? Verdict::Commit : Verdict::Hold;
}

Verdict CommitGate::onAwsMessage(const cloud::EventStreamMessage& m) {
  const std::string_view type = m.header(":message-type");
  if (type == "exception" || type == "error") {
    std::string_view name = m.header(type == "exception" ? ":exception-type" : ":error-code");
    boost::system::error_code ec;
    const json::value v = parseJson(m.payload, ec);
    std::string msg(name.empty() ? std::string_view("exception") : name);
    if (!ec && v.is_object()) {
      if (const std::string_view said = stringAt(v.as_object(), "message"); !said.empty())
        msg.append(": ").append(said.substr(0, 300));
    }
    for (char& c : msg)
      if (c == '\n' || c == '\r') c = ' ';
    // For routing.rules: the exception's name and what it said, as one JSON object.
    std::string data = "{\"__type\":";
    providers::detail::appendJsonString(data, name);
    data.append(",\"payload\":");
    providers::detail::appendJsonString(data, m.payload.substr(0, 16 * 1024));
    data.push_back('}');
    // AWS answers a model's own failure (modelStreamErrorException) with 424: for the routing rules
    // it is an upstream failure, which another channel may not have.
    int status = providers::bedrock::statusForException(name);
    if (status == 424) status = 502;
    return fail(status, data, std::move(msg));
  }
  const std::string_view event = m.header(":event-type");
  if (event == "messageStart") return Verdict::Hold;
  if (event == "contentBlockStart") {
    boost::system::error_code ec;
    const json::value v = parseJson(m.payload, ec);
    const json::object* start = !ec && v.is_object() ? objectAt(v.as_object(), "start") : nullptr;
    return start && objectAt(*start, "toolUse") ? Verdict::Commit : Verdict::Hold;
  }
  if (event == "contentBlockDelta") {
    boost::system::error_code ec;
    const json::value v = parseJson(m.payload, ec);
    if (ec || !v.is_object()) return fail(502, m.payload, "the upstream sent a malformed contentBlockDelta event");
    const json::object* d = objectAt(v.as_object(), "delta");
    if (d && stringAt(*d, "text").empty() && d->size() == 1 && d->contains("text")) return Verdict::Hold;  // empty text
    return Verdict::Commit;
  }
  return Verdict::Commit;  // the message's end, its metadata, or an event this gateway does not know
}

Verdict CommitGate::onEvent(std::string_view name, std::string_view data) {
  using providers::Format;
  if (format_ == Format::AnthropicMessages) {
    if (name == "ping" || name == "message_start") return Verdict::Hold;
    if (name == "content_block_start") {
      boost::system::error_code ec;
      ScratchJson scratch;
      const json::value v = scratch.parse(data, ec);
      if (ec || !v.is_object()) return fail(502, data, "the upstream sent a malformed content_block_start event");
      const json::object* block = objectAt(v.as_object(), "content_block");
      const std::string_view type = block ? stringAt(*block, "type") : std::string_view();
      // A tool call begins here; text and thinking begin empty and come in deltas.
      return type == "text" || type == "thinking" || type == "redacted_thinking" ? Verdict::Hold : Verdict::Commit;
    }
    if (name == "error") {
      boost::system::error_code ec;
      ScratchJson scratch;
      const json::value v = scratch.parse(data, ec);
      const json::object* e = !ec && v.is_object() ? objectAt(v.as_object(), "error") : nullptr;
      if (!e) return fail(502, data, "the upstream sent an error event that is not an error object");
      return fail(errorStatus(*e), data, errorMessage(*e, "error event"));
    }
    return Verdict::Commit;  // a delta, the message's end, or an event this gateway does not know
  }
  if (format_ == Format::OpenAIChat && data == "[DONE]") return Verdict::Commit;
  boost::system::error_code ec;
  ScratchJson scratch;  // the event's tree, dropped with it
  const json::value v = scratch.parse(data, ec);
  if (ec || !v.is_object()) return fail(502, data, "the upstream sent a stream event that is not a JSON object");
  const json::object& o = v.as_object();
  switch (format_) {
    case Format::OpenAIChat: {
      if (present(o, "error")) return errorMember(o.at("error"), data);
      const auto* choices = o.if_contains("choices");
      if (!choices || !choices->is_array()) return Verdict::Commit;  // not a chunk this gate knows
      if (choices->as_array().empty()) return present(o, "usage") ? Verdict::Commit : Verdict::Hold;
      for (const auto& c : choices->as_array()) {
        if (!c.is_object()) continue;
        const json::object& choice = c.as_object();
        if (present(choice, "finish_reason")) return Verdict::Commit;
        const json::object* d = objectAt(choice, "delta");
        if (d && (nonEmptyString(*d, "content") || nonEmptyArray(*d, "tool_calls") || present(*d, "function_call") ||
                  nonEmptyString(*d, "reasoning_content") || nonEmptyString(*d, "reasoning") ||
                  nonEmptyString(*d, "refusal")))
          return Verdict::Commit;
      }
      return Verdict::Hold;
    }
    case Format::OpenAIResponses: {
      const std::string_view type = stringAt(o, "type");
      if (type == "response.failed") {
        const json::object* r = objectAt(o, "response");
        const json::object* e = r ? objectAt(*r, "error") : nullptr;
        if (!e) return fail(500, data, "response.failed");
        return fail(errorStatus(*e), data, errorMessage(*e, "response.failed"));
      }
      if (type == "error") return fail(errorStatus(o), data, errorMessage(o, "error event"));
      if (type == "response.created" || type == "response.in_progress" || type == "response.queued" ||
          type == "response.content_part.added")
        return Verdict::Hold;
      if (type == "response.output_item.added") {
        const json::object* item = objectAt(o, "item");
        const std::string_view it = item ? stringAt(*item, "type") : std::string_view();
        return it == "message" || it == "reasoning" ? Verdict::Hold : Verdict::Commit;  // a tool call
      }
      return Verdict::Commit;  // a delta, the response's end, or an event this gateway does not know
    }
    case Format::GeminiGenerate: {
      if (present(o, "error")) return errorMember(o.at("error"), data);
      if (const json::object* pf = objectAt(o, "promptFeedback"); pf && present(*pf, "blockReason"))
        return Verdict::Commit;
      const auto* cands = o.if_contains("candidates");
      if (!cands || !cands->is_array()) return Verdict::Hold;  // usage alone
      for (const auto& c : cands->as_array()) {
        if (!c.is_object()) continue;
        const json::object& cand = c.as_object();
        if (present(cand, "finishReason")) return Verdict::Commit;
        const json::object* content = objectAt(cand, "content");
        const auto* parts = content ? content->if_contains("parts") : nullptr;
        if (!parts || !parts->is_array()) continue;
        for (const auto& p : parts->as_array()) {
          if (!p.is_object()) continue;
          const json::object& part = p.as_object();
          if (nonEmptyString(part, "text") || present(part, "functionCall") || present(part, "executableCode") ||
              present(part, "inlineData"))
            return Verdict::Commit;
        }
      }
      return Verdict::Hold;
    }
    case Format::AnthropicMessages:
    case Format::BedrockConverse:
      break;
  }
  return Verdict::Commit;
}

}  // namespace sluice::gateway
