// CommitGate: commit on the first meaningful event. Reads the first events of an upstream
// stream (in the upstream's format) and says when the client's response may begin: with the
// first event that carries content, a tool call or reasoning, or with the stream's end. An
// in-band error (OpenAI's {"error":...} chunk, Responses' response.failed or error, Anthropic's
// `error` event, Gemini's error chunk, a Bedrock exception message) or a malformed event before then fails the attempt, so the
// client never sees it and the next candidate is tried. One per attempt; not thread-safe. Once it
// says Commit it is done: the relay drops it, so committed streams pay nothing for it.
#pragma once
#include <boost/json/fwd.hpp>

#include <cstddef>
#include <string>
#include <string_view>

#include "cloud/EventStream.hpp"
#include "providers/Canonical.hpp"
#include "providers/CodecUtil.hpp"

namespace sluice::gateway {

class CommitGate {
 public:
  enum class Verdict { Hold, Commit, Fail };
  // Held past this many bytes without a meaningful event, the stream commits anyway: the hold
  // bounds memory, not what a provider may send before its answer.
  static constexpr std::size_t kMaxHeld = 1u << 20;

  explicit CommitGate(providers::Format upstream) : format_(upstream) {}

  // The upstream's bytes as read, in any split. Hold until a verdict; then the same one again.
  Verdict feed(std::string_view bytes);

  // After Fail: the HTTP status the error stands for (its code, or 429 for a rate limit, 529 for
  // an overload, 502 for a malformed event, 500 otherwise), the event's data (for routing.rules)
  // and a one-line message.
  int status() const { return status_; }
  const std::string& errorData() const { return error_data_; }
  const std::string& message() const { return message_; }

 private:
  Verdict onEvent(std::string_view name, std::string_view data);
  // Bedrock's ConverseStream: binary frames (checked CRCs), not server-sent events.
  Verdict feedEventStream(std::string_view bytes);
  Verdict onAwsMessage(const cloud::EventStreamMessage& m);
  Verdict fail(int status, std::string_view data, std::string message);
  Verdict errorMember(const boost::json::value& e, std::string_view data);

  providers::Format format_;
  providers::detail::SseSplitter split_;
  cloud::EventStreamDecoder frames_;
  std::vector<cloud::EventStreamMessage> messages_;
  Verdict verdict_ = Verdict::Hold;
  std::size_t held_ = 0;
  int status_ = 0;
  std::string error_data_;
  std::string message_;
};

}  // namespace sluice::gateway
