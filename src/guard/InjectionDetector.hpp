// The local prompt-injection detector: logistic regression over hashed character and word n-grams
// (InjectionFeatures.hpp) plus, in a format-2 model, three character-surprisal features whose
// weights a second stage fitted on sources held out whole (InjectionTraining.hpp); no ML runtime.
// score() runs in microseconds, allocates nothing and reads at most kScanHeadBytes +
// kScanTailBytes of the text. The model is trained by
// `sluice_train_screen` (tools/train_screen.cpp) into models/injection.model, which is embedded in
// the binary at build time (builtin()); load() reads another file of the same format.
//
// Thread-safety: immutable after construction; score() may be called from any number of threads.
// Copies are cheap (they share the weights).
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace sluice::guard {

// The parameters of a model, as stored in a model file. weight(bucket) = scale * weights[bucket];
// logit = bias + sum of the weights of every feature occurrence / sqrt(feature occurrences).
struct InjectionModel {
  std::uint32_t bucket_bits = 18;  // 2^bucket_bits hashed buckets
  float bias = 0.0f;
  float scale = 1.0f;                // int8 quantisation step
  float threshold = 0.5f;            // the tuned decision threshold on the score (0..1)
  std::vector<std::int8_t> weights;  // 2^bucket_bits entries
  // Format 2 only (empty in a format-1 file): the weights of the kDenseFeatures surprisal features
  // (InjectionFeatures.hpp), added to the logit as they are, and the character trigram table they
  // are computed with (2^surprisal_bits entries, -log2 P in 1/16 bit).
  std::vector<float> dense;
  std::uint32_t surprisal_bits = 0;
  std::vector<std::uint8_t> surprisal;
};

// The model file format (little-endian): "SLUICEPI", u32 format version (1), u32 feature version
// (kFeatureVersion), u32 bucket bits, f32 bias, f32 scale, f32 threshold, u32 count, then `count`
// non-zero weights as (LEB128 gap from the previous bucket index, int8 weight), then a u32
// FNV-1a checksum of every byte before it. Format 2 (a model with dense features) puts after the
// weights: u32 dense count, that many f32 weights, u32 surprisal bits, 2^bits u8 table entries.
std::string serializeInjectionModel(const InjectionModel& model);
// Throws std::runtime_error naming `what` (a path, or "the built-in model") and what is wrong.
InjectionModel parseInjectionModel(std::string_view bytes, std::string_view what);

// What drove a score: the features of a text with their summed contribution to the logit
// (weight x occurrences / sqrt(all occurrences)), largest magnitude first.
struct FeatureContribution {
  std::string feature;  // the normalised n-gram or word (bigram: two words and a space)
  const char* kind;     // "char3" | "char4" | "char5" | "word" (a word or a word bigram) | "dense"
  int count = 0;
  double logit = 0;  // > 0 pushes towards injection
};
struct Explanation {
  double score = 0;
  double bias = 0;
  std::vector<FeatureContribution> top;
};

class InjectionDetector {
 public:
  // The model embedded at build time from models/injection.model.
  static InjectionDetector builtin();
  // Throws std::runtime_error with the path and the reason when the file is missing, truncated,
  // corrupt or made for other features.
  static InjectionDetector load(const std::string& path);
  explicit InjectionDetector(InjectionModel model);

  // The probability (0..1) that `text` is a prompt injection or jailbreak attempt.
  double score(std::string_view text) const;
  // The decision threshold the model was tuned to: score >= threshold means injection.
  double threshold() const { return model_->threshold; }
  bool isInjection(std::string_view text) const { return score(text) >= threshold(); }
  const InjectionModel& model() const { return *model_; }
  // score() with its reasons: the `top` features with the largest contributions. Allocates; for
  // `sluice screen --explain`, not the request path.
  Explanation explain(std::string_view text, std::size_t top = 10) const;

 private:
  std::shared_ptr<const InjectionModel> model_;
  unsigned shift_ = 0;            // bucket = hash >> shift_
  unsigned surprisalShift_ = 64;  // trigram table entry = kLane3 hash >> surprisalShift_
};

}  // namespace sluice::guard
