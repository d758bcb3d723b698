// SseScript: a streamed answer as three parts, so one writer can pace, batch or break any
// provider's stream: `head` events, `content_count` content steps (rendered on demand, so a
// long stream needs no memory up front), and `tail` events (finish, usage, terminator).
// A value type; `content` must be safe to call from the thread that writes the stream.
#pragma once
#include <cstddef>
#include <functional>
#include <string>
#include <vector>

namespace sluice::mock {

struct SseScript {
  std::vector<std::string> head;  // complete framed events ("data: ...\n\n")
  std::size_t content_count = 0;
  std::function<void(std::size_t step, std::string& out)> content;  // appends step's framed events
  std::vector<std::string> tail;
  // The format's in-band error event, framed, for a stream that fails after `steps` content
  // steps (the mock's error-event knob); it ends the stream. Unset: the format has none.
  std::function<std::string(std::size_t steps)> error_event;

  // The whole stream; for tests and for batched writes of short streams.
  std::string all() const {
    std::string out;
    for (const auto& e : head) out += e;
    for (std::size_t i = 0; i < content_count; ++i) content(i, out);
    for (const auto& e : tail) out += e;
    return out;
  }
};

}  // namespace sluice::mock
