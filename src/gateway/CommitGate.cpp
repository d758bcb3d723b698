#include "gateway/CommitGate.hpp"

#include <boost/json/value.hpp>

#include "core/JsonOutline.hpp"
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

// The first events are read as outlines (core/JsonOutline.hpp): the few members the verdict
// depends on, without building a tree, which cost more than the rest of the relay's work on a
// chunk. An error event, which ends the attempt, is read as a tree for its status and message.
Verdict CommitGate::onEvent(std::string_view name, std::string_view data) {
  using providers::Format;
  using K = JsonOutline::Kind;
  constexpr JsonOutline::Node kRoot = JsonOutline::kRoot;
  JsonOutline& o = JsonOutline::scratch();
  boost::system::error_code ec;
  auto isString = [&](JsonOutline::Node n, std::string_view what) {
    return o.is(n, K::String) && o.size(n) == what.size() && o.text(n) == what;
  };
  auto nonEmptyString = [&](JsonOutline::Node obj, std::string_view key) {
    const auto n = o.member(obj, key);
    return o.is(n, K::String) && o.size(n) > 0;
  };
  auto nonEmptyArray = [&](JsonOutline::Node obj, std::string_view key) {
    const auto n = o.member(obj, key);
    return o.is(n, K::Array) && o.size(n) > 0;
  };
  auto present = [&](JsonOutline::Node obj, std::string_view key) { return o.present(o.member(obj, key)); };
  auto objectAt = [&](JsonOutline::Node obj, std::string_view key) {
    const auto n = o.member(obj, key);
    return o.is(n, K::Object) ? n : JsonOutline::kNone;
  };
  if (format_ == Format::AnthropicMessages) {
    if (name == "ping" || name == "message_start") return Verdict::Hold;
    if (name == "content_block_start") {
      if (!o.parse(data, 2, ec) || !o.is(kRoot, K::Object))
        return fail(502, data, "the upstream sent a malformed content_block_start event");
      const auto block = objectAt(kRoot, "content_block");
      const auto type = o.member(block, "type");
      // A tool call begins here; text and thinking begin empty and come in deltas.
      return isString(type, "text") || isString(type, "thinking") || isString(type, "redacted_thinking")
                 ? Verdict::Hold
                 : Verdict::Commit;
    }
    if (name == "error") {
      ScratchJson scratch;
      const json::value v = scratch.parse(data, ec);
      const json::object* e = !ec && v.is_object() ? ::sluice::gateway::objectAt(v.as_object(), "error") : nullptr;
      if (!e) return fail(502, data, "the upstream sent an error event that is not an error object");
      return fail(errorStatus(*e), data, errorMessage(*e, "error event"));
    }
    return Verdict::Commit;  // a delta, the message's end, or an event this gateway does not know
  }
  if (format_ == Format::OpenAIChat && data == "[DONE]") return Verdict::Commit;
  // Deep enough for every member read below: Gemini's candidates[].content.parts[].text is 6.
  const int depth = format_ == Format::GeminiGenerate ? 6 : format_ == Format::OpenAIChat ? 4 : 2;
  if (!o.parse(data, depth, ec) || !o.is(kRoot, K::Object))
    return fail(502, data, "the upstream sent a stream event that is not a JSON object");
  // An error ends the attempt: read it as a tree, for errorMember's status and message.
  auto treeError = [&](auto&& judge) {
    ScratchJson scratch;
    boost::system::error_code tree_ec;
    const json::value v = scratch.parse(data, tree_ec);
    return judge(v.as_object());
  };
  switch (format_) {
    case Format::OpenAIChat: {
      if (present(kRoot, "error"))
        return treeError([&](const json::object& t) { return errorMember(t.at("error"), data); });
      const auto choices = o.member(kRoot, "choices");
      if (!o.is(choices, K::Array)) return Verdict::Commit;  // not a chunk this gate knows
      if (o.size(choices) == 0) return present(kRoot, "usage") ? Verdict::Commit : Verdict::Hold;
      for (auto c = o.first(choices); o.has(c); c = o.next(c)) {
        if (!o.is(c, K::Object)) continue;
        if (present(c, "finish_reason")) return Verdict::Commit;
        const auto d = objectAt(c, "delta");
        if (o.has(d) && (nonEmptyString(d, "content") || nonEmptyArray(d, "tool_calls") || present(d, "function_call") ||
                         nonEmptyString(d, "reasoning_content") || nonEmptyString(d, "reasoning") ||
                         nonEmptyString(d, "refusal")))
          return Verdict::Commit;
      }
      return Verdict::Hold;
    }
    case Format::OpenAIResponses: {
      const auto type = o.member(kRoot, "type");
      if (isString(type, "response.failed")) {
        return treeError([&](const json::object& t) {
          const json::object* r = ::sluice::gateway::objectAt(t, "response");
          const json::object* e = r ? ::sluice::gateway::objectAt(*r, "error") : nullptr;
          if (!e) return fail(500, data, "response.failed");
          return fail(errorStatus(*e), data, errorMessage(*e, "response.failed"));
        });
      }
      if (isString(type, "error"))
        return treeError([&](const json::object& t) { return fail(errorStatus(t), data, errorMessage(t, "error event")); });
      if (isString(type, "response.created") || isString(type, "response.in_progress") ||
          isString(type, "response.queued") || isString(type, "response.content_part.added"))
        return Verdict::Hold;
      if (isString(type, "response.output_item.added")) {
        const auto it = o.member(objectAt(kRoot, "item"), "type");
        return isString(it, "message") || isString(it, "reasoning") ? Verdict::Hold : Verdict::Commit;  // a tool call
      }
      return Verdict::Commit;  // a delta, the response's end, or an event this gateway does not know
    }
    case Format::GeminiGenerate: {
      if (present(kRoot, "error"))
        return treeError([&](const json::object& t) { return errorMember(t.at("error"), data); });
      if (const auto pf = objectAt(kRoot, "promptFeedback"); o.has(pf) && present(pf, "blockReason"))
        return Verdict::Commit;
      const auto cands = o.member(kRoot, "candidates");
      if (!o.is(cands, K::Array)) return Verdict::Hold;  // usage alone
      for (auto c = o.first(cands); o.has(c); c = o.next(c)) {
        if (!o.is(c, K::Object)) continue;
        if (present(c, "finishReason")) return Verdict::Commit;
        const auto parts = o.member(objectAt(c, "content"), "parts");
        if (!o.is(parts, K::Array)) continue;
        for (auto p = o.first(parts); o.has(p); p = o.next(p)) {
          if (!o.is(p, K::Object)) continue;
          if (nonEmptyString(p, "text") || present(p, "functionCall") || present(p, "executableCode") ||
              present(p, "inlineData"))
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
