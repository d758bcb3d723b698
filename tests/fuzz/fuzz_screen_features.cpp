// The prompt-injection detector on arbitrary bytes (src/guard/InjectionFeatures.hpp): the UTF-8
// lookahead of the normalisation (invisible characters, fullwidth ASCII), the head-and-tail cut
// of long texts and the windowed score. Input: any bytes. Checks: no crash or read past the
// text; the score is a probability; explain() gives the same score; the feature stream with
// feature texts (--explain) or trigrams (the dense surprisal features) is the same as without,
// and every feature has a text. The model has dense features, so the format-2 scoring path runs.
#include <cstdint>
#include <string_view>
#include <vector>

#include "FuzzUtil.hpp"
#include "guard/InjectionDetector.hpp"
#include "guard/InjectionFeatures.hpp"

using namespace sluice;

namespace {

// A fixed model with weights of both signs in every bucket and dense surprisal features (the
// built-in one is not linked here).
const guard::InjectionDetector& detector() {
  static const guard::InjectionDetector d = [] {
    guard::InjectionModel m;
    m.bucket_bits = 12;
    m.weights.resize(std::size_t{1} << m.bucket_bits);
    for (std::size_t i = 0; i < m.weights.size(); ++i)
      m.weights[i] = static_cast<std::int8_t>(static_cast<int>((i * 2654435761u >> 13) % 255) - 127);
    m.bias = -1.0f;
    m.scale = 0.01f;
    m.threshold = 0.5f;
    m.dense = {0.5f, -0.25f, 0.75f};
    m.surprisal_bits = 10;
    m.surprisal.resize(std::size_t{1} << m.surprisal_bits);
    for (std::size_t i = 0; i < m.surprisal.size(); ++i) m.surprisal[i] = static_cast<std::uint8_t>(i * 40503u >> 7);
    return guard::InjectionDetector(std::move(m));
  }();
  return d;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const double s = detector().score(text);
  if (!(s >= 0.0 && s <= 1.0)) fuzz::fail("score is not a probability");
  const guard::Explanation e = detector().explain(text, 8);
  if (e.score != s) fuzz::fail("explain() and score() disagree");
  if (e.top.size() > 8) fuzz::fail("explain() returned more features than asked for");
  std::vector<std::uint64_t> plain, described, withTrigram;
  guard::forEachFeatureHash(text, [&](std::uint64_t h) { plain.push_back(h); });
  guard::forEachFeatureHash(text, [&](std::uint64_t h, guard::Lane, std::string_view f) {
    if (f.empty()) fuzz::fail("a feature without text");
    described.push_back(h);
  });
  if (plain != described) fuzz::fail("describing the features changed the feature stream");
  guard::forEachFeatureHash(text, [&](std::uint64_t h, guard::Lane, std::uint32_t) { withTrigram.push_back(h); });
  if (plain != withTrigram) fuzz::fail("passing the trigrams changed the feature stream");
  return 0;
}
