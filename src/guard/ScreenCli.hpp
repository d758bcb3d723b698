// `sluice screen`: scores JSONL lines with a "text" field with the prompt-injection detector, one
// JSON line out per line in: {"score":0.9731,"verdict":"injection"} or "benign", or {"error":"..."}
// for a line that is not a JSON object with a string "text" (processing goes on). With --explain
// the line also carries "bias" and "features": [{"feature","kind","count","logit"}...], the
// features with the largest contributions to the logit, largest first.
#pragma once
#include <iosfwd>
#include <optional>
#include <string>

namespace sluice::guard {

struct ScreenCliOptions {
  std::optional<double> threshold;  // default: the model's tuned threshold
  std::string model_path;           // empty: the built-in model
  std::size_t explain = 0;          // > 0: add the this many features that drove each score
};

// Exit status: 0 when every line was scored, 1 when some line was bad (each got an error line),
// 2 when the model or the options are unusable (nothing read).
int runScreen(const ScreenCliOptions& options, std::istream& in, std::ostream& out, std::ostream& err);

}  // namespace sluice::guard
