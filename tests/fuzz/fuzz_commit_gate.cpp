// The commit gate (gateway/CommitGate.hpp): an upstream stream's first events in any format,
// in fuzzer-chosen splits. Input: [format] [split] [payload]. Checks: no crash; the verdict,
// the status and the message do not depend on how the bytes were split; a failure's status is
// an HTTP error status and its message one line.
#include <string>

#include "FuzzUtil.hpp"
#include "gateway/CommitGate.hpp"

using namespace sluice;

namespace {

struct Run {
  gateway::CommitGate::Verdict verdict = gateway::CommitGate::Verdict::Hold;
  int status = 0;
  std::string message;
};

Run run(providers::Format f, std::string_view payload, std::uint8_t split) {
  gateway::CommitGate g(f);
  Run r;
  fuzz::feedSplit(payload, split, [&](std::string_view chunk) {
    r.verdict = g.feed(chunk);
    return true;
  });
  r.status = g.status();
  r.message = g.message();
  return r;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 2) return 0;
  const auto f = fuzz::formatAt(data[0]);
  const std::string_view payload(reinterpret_cast<const char*>(data) + 2, size - 2);
  const Run split = run(f, payload, data[1]);
  const Run whole = run(f, payload, 0xFF);
  // Past the hold's bound the cut decides when it commits; below it nothing may.
  if (payload.size() <= gateway::CommitGate::kMaxHeld &&
      (split.verdict != whole.verdict || split.status != whole.status || split.message != whole.message))
    fuzz::fail("the commit gate's verdict depends on how the stream is split");
  if (whole.verdict == gateway::CommitGate::Verdict::Fail) {
    if (whole.status < 400 || whole.status > 599) fuzz::fail("a failure's status is not an HTTP error status");
    if (whole.message.find_first_of("\r\n") != std::string::npos) fuzz::fail("a failure's message spans lines");
  }
  return 0;
}
