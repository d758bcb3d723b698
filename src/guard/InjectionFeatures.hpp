// The features of the prompt-injection detector: hashed character 3/4/5-grams and word uni/bigrams
// of the normalised text. This is the one implementation: the trainer (InjectionTraining) and the
// runtime (InjectionDetector::score) both call forEachFeatureHash, so a model never sees features
// computed differently from the ones it was trained on. Changing anything here changes the
// features: bump kFeatureVersion and retrain (a model file records the version it was trained with).
//
// Normalisation, one pass, no allocation: ASCII A-Z is lowercased; ASCII whitespace runs become one
// space; every other byte (punctuation, UTF-8 lead and continuation bytes) is kept as it is, so the
// work is byte-wise and any input is safe, valid UTF-8 or not. Words are runs of [a-z0-9] and bytes
// >= 0x80 (so a non-ASCII word is one token). The text is read as if a space stood before and after it.
//
// Bounded work: a text longer than kScanHeadBytes + kScanTailBytes is scored on its first
// kScanHeadBytes and its last kScanTailBytes (cut at UTF-8 character boundaries, joined by a space);
// the middle of a huge document is not looked at. Injections sit at the start or the end of what a
// user sends in practice; a document pasted in the middle of a long prompt needs the window raised.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>

namespace sluice::guard {

// 2: character n-grams hashed with one multiply (mixNgram) instead of fmix64 (1.6 -> 1.0 us for
//    a 300-byte prompt; held-out quality in bench/BENCHMARKS.md).
// 3: zero-width and bidi control characters, soft hyphens and byte-order marks are skipped, and
//    fullwidth ASCII (U+FF01..U+FF5E) is read as ASCII; a text is scored as its most suspicious
//    window (WindowedSum), so an instruction planted in a long document is not averaged away.
// The surprisal features (SurprisalStats, below) read the same stream; a model that has them is
// file format 2 (InjectionDetector.hpp), which carries their trigram table.
inline constexpr std::uint32_t kFeatureVersion = 3;
inline constexpr std::size_t kScanHeadBytes = 8 * 1024;
inline constexpr std::size_t kScanTailBytes = 8 * 1024;

// Which kind a feature is: emitters that take (hash, lane) can keep one sum per lane, so the
// three n-gram lookups of a byte do not wait on each other's additions (~30% of the detector).
enum Lane : int { kLane3 = 0, kLane4 = 1, kLane5 = 2, kLaneWord = 3 };

namespace features_detail {

// MurmurHash3's 64-bit finaliser: a fixed, well-mixed hash of a word hash (and the held-out split's key).
constexpr std::uint64_t fmix64(std::uint64_t k) {
  k ^= k >> 33;
  k *= 0xff51afd7ed558ccdULL;
  k ^= k >> 33;
  k *= 0xc4ceb9fe1a85ec53ULL;
  k ^= k >> 33;
  return k;
}

// Fibonacci hashing for a packed character n-gram (up to 5 bytes and its length): one multiply,
// and the top bits, which pick the bucket, depend on every bit of the key. Three of these run per
// input byte, so this is most of the detector's time.
constexpr std::uint64_t mixNgram(std::uint64_t k) {
  return k * 0x9E3779B97F4A7C15ULL;
}

inline constexpr std::uint64_t kFnvOffset = 0xcbf29ce484222325ULL;
inline constexpr std::uint64_t kFnvPrime = 0x100000001b3ULL;
inline constexpr std::uint64_t kUnigramTag = 0x7573000000000001ULL;
inline constexpr std::uint64_t kBigramTag = 0x6269000000000002ULL;

constexpr unsigned char normalize(unsigned char c) {
  if (c >= 'A' && c <= 'Z') return static_cast<unsigned char>(c + 32);
  if (c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r') return ' ';
  return c;
}
constexpr bool isWordByte(unsigned char c) {
  return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c >= 0x80;
}
constexpr bool isContinuation(unsigned char c) {
  return (c & 0xC0) == 0x80;
}

// normalize() and isWordByte() as tables: a load per byte instead of a chain of compares.
struct ByteTables {
  unsigned char norm[256];
  bool word[256];
};
constexpr ByteTables makeByteTables() {
  ByteTables t{};
  for (int c = 0; c < 256; ++c) {
    t.norm[c] = normalize(static_cast<unsigned char>(c));
    t.word[c] = isWordByte(static_cast<unsigned char>(c));
  }
  return t;
}
inline constexpr ByteTables kByteTables = makeByteTables();

struct NoText {};

template <class Emit>
class Extractor {
  // An emitter taking (hash, lane, text) is also told each feature as text (--explain); the
  // scoring path does not pay for it.
  static constexpr bool kDescribe = std::is_invocable_v<Emit&, std::uint64_t, Lane, std::string_view>;
  // An emitter taking (hash, lane, std::uint32_t) is also given the last three normalised bytes
  // (the trigram of a kLane3 feature), for the surprisal features.
  static constexpr bool kTrigram = std::is_invocable_v<Emit&, std::uint64_t, Lane, std::uint32_t>;
  using Text = std::conditional_t<kDescribe, std::string, NoText>;

 public:
  explicit Extractor(Emit& emit) : emit_(emit) {}

  void feed(std::string_view s) {
    const auto* p = reinterpret_cast<const unsigned char*>(s.data());
    const std::size_t n = s.size();
    for (std::size_t i = 0; i < n; ++i) {
      const unsigned char c = p[i];
      if ((c == 0xC2 || c == 0xE2 || c == 0xEF) && i + 1 < n) [[unlikely]] {
        const unsigned char c1 = p[i + 1];
        if (c == 0xC2) {
          if (c1 == 0xAD) {  // soft hyphen
            ++i;
            continue;
          }
        } else if (i + 2 < n) {
          const unsigned char c2 = p[i + 2];
          // U+200B..U+200F (zero-width space/joiners, LRM/RLM), U+202A..U+202E (bidi embeddings),
          // U+2060..U+2064 (word joiner, invisible operators), U+FEFF (BOM).
          if ((c == 0xE2 && c1 == 0x80 && ((c2 >= 0x8B && c2 <= 0x8F) || (c2 >= 0xAA && c2 <= 0xAE))) ||
              (c == 0xE2 && c1 == 0x81 && c2 >= 0xA0 && c2 <= 0xA4) || (c == 0xEF && c1 == 0xBB && c2 == 0xBF)) {
            i += 2;
            continue;
          }
          // Fullwidth ASCII: U+FF01..U+FF3F = EF BC 81..BF, U+FF40..U+FF5E = EF BD 80..9E.
          if (c == 0xEF && ((c1 == 0xBC && c2 >= 0x81 && c2 <= 0xBF) || (c1 == 0xBD && c2 >= 0x80 && c2 <= 0x9E))) {
            const unsigned ascii = (c1 == 0xBC ? 0x20u : 0x60u) + (c2 & 0x3Fu);
            push(kByteTables.norm[ascii]);
            i += 2;
            continue;
          }
        }
      }
      push(kByteTables.norm[c]);
    }
  }
  void finish() {
    push(' ');
    if (inWord_) endWord();
  }
  // Called between the head and the tail of a long text.
  void gap() { push(' '); }

 private:
  void emit(std::uint64_t h, Lane lane) {
    if constexpr (kDescribe) {
      if (lane == kLaneWord) return;  // words are emitted with their text by endWord()
      const int n = lane == kLane3 ? 3 : lane == kLane4 ? 4 : 5;
      char gram[5];
      for (int i = 0; i < n; ++i) gram[i] = static_cast<char>((window_ >> (8 * (n - 1 - i))) & 0xFF);
      emit_(h, lane, std::string_view(gram, static_cast<std::size_t>(n)));
    } else if constexpr (kTrigram) {
      emit_(h, lane, static_cast<std::uint32_t>(window_ & 0xFFFFFFu));
    } else if constexpr (std::is_invocable_v<Emit&, std::uint64_t, Lane>) {
      emit_(h, lane);
    } else {
      emit_(h);
    }
  }
  void push(unsigned char c) {
    // One test, rarely true (a second space), rather than a branch on every space.
    if (static_cast<int>(c == ' ') & static_cast<int>(last_ == ' ')) return;
    last_ = c;
    window_ = (window_ << 8) | c;
    ++seen_;
    if (seen_ >= 5) [[likely]] {
      emit(mixNgram((window_ & 0xFFFFFFULL) | (3ULL << 56)), kLane3);
      emit(mixNgram((window_ & 0xFFFFFFFFULL) | (4ULL << 56)), kLane4);
      emit(mixNgram((window_ & 0xFFFFFFFFFFULL) | (5ULL << 56)), kLane5);
    } else {
      if (seen_ >= 3) emit(mixNgram((window_ & 0xFFFFFFULL) | (3ULL << 56)), kLane3);
      if (seen_ >= 4) emit(mixNgram((window_ & 0xFFFFFFFFULL) | (4ULL << 56)), kLane4);
    }
    if (kByteTables.word[c]) {
      word_ = (word_ ^ c) * kFnvPrime;
      if constexpr (kDescribe) wordText_.push_back(static_cast<char>(c));
      inWord_ = true;
    } else if (inWord_) {
      endWord();
    }
  }
  void endWord() {
    if constexpr (kDescribe) {
      emit_(fmix64(word_ ^ kUnigramTag), kLaneWord, std::string_view(wordText_));
      if (havePrev_)
        emit_(fmix64((prevWord_ * 0x9E3779B97F4A7C15ULL + word_) ^ kBigramTag), kLaneWord,
              std::string_view(prevWordText_ + " " + wordText_));
      prevWordText_ = std::move(wordText_);
      wordText_.clear();
    } else if constexpr (kTrigram) {
      emit_(fmix64(word_ ^ kUnigramTag), kLaneWord, std::uint32_t{0});
      if (havePrev_)
        emit_(fmix64((prevWord_ * 0x9E3779B97F4A7C15ULL + word_) ^ kBigramTag), kLaneWord, std::uint32_t{0});
    } else {
      emit(fmix64(word_ ^ kUnigramTag), kLaneWord);
      if (havePrev_) emit(fmix64((prevWord_ * 0x9E3779B97F4A7C15ULL + word_) ^ kBigramTag), kLaneWord);
    }
    prevWord_ = word_;
    havePrev_ = true;
    word_ = kFnvOffset;
    inWord_ = false;
  }

  Emit& emit_;
  std::uint64_t window_ = ' ';
  std::uint64_t seen_ = 1;
  unsigned char last_ = ' ';
  std::uint64_t word_ = kFnvOffset;
  std::uint64_t prevWord_ = 0;
  bool inWord_ = false;
  bool havePrev_ = false;
  [[no_unique_address]] Text wordText_;
  [[no_unique_address]] Text prevWordText_;
};

}  // namespace features_detail

// Scoring by windows: the feature stream is cut into blocks of kBlockFeatures occurrences, and a
// text's value is the largest of sum/sqrt(count) over the whole text and over every run of
// kWindowBlocks consecutive blocks (~1,000 occurrences, about 300 bytes of text), the last run
// ending at the text's end. A short text is its one window. T is int64 (int8 weights at run
// time) or double (the trainer's float model); both go through this, so the threshold the trainer
// calibrates means the same at run time.
inline constexpr std::uint32_t kBlockFeatures = 256;
inline constexpr std::uint32_t kWindowBlocks = 4;

template <class T>
class WindowedSum {
 public:
  void add(T w) {
    block_ += w;
    if (++inBlock_ == kBlockFeatures) [[unlikely]]
      closeBlock();
  }
  // The largest normalised sum (0 for no features).
  double result() const {
    const std::uint64_t n = std::uint64_t{blocks_} * kBlockFeatures + inBlock_;
    if (n == 0) return 0.0;
    const T total = total_ + block_;
    double best = static_cast<double>(total) / std::sqrt(static_cast<double>(n));
    if (blocks_ >= kWindowBlocks) {
      best = std::max(best, best_);
      if (inBlock_ > 0) {  // the window ending at the text's end
        T s = block_;
        for (std::uint32_t k = 1; k < kWindowBlocks; ++k) s += ring_[(blocks_ - k) % kWindowBlocks];
        const double c = double(kBlockFeatures) * double(kWindowBlocks - 1) + double(inBlock_);
        best = std::max(best, static_cast<double>(s) / std::sqrt(c));
      }
    }
    return best;
  }

 private:
  void closeBlock() {
    ring_[blocks_ % kWindowBlocks] = block_;
    total_ += block_;
    ++blocks_;
    block_ = 0;
    inBlock_ = 0;
    if (blocks_ >= kWindowBlocks) {
      T s = 0;
      for (T r : ring_) s += r;
      best_ = std::max(best_, static_cast<double>(s) / std::sqrt(double(kBlockFeatures) * kWindowBlocks));
    }
  }

  T total_ = 0;  // of the closed blocks
  T block_ = 0;
  std::uint32_t inBlock_ = 0;
  std::uint32_t blocks_ = 0;
  T ring_[kWindowBlocks] = {};
  double best_ = -1e300;
};

// Dense features: how surprising the text's characters are to a character trigram model of
// benign text (a table of -log2 P(c | the two characters before), indexed by the top bits of the
// kLane3 hash, in 1/16 bit, 0..255). Optimised adversarial suffixes (GCG, DSN, random search) are
// runs of rare character sequences in otherwise fluent text; the n-gram weights only know the
// suffixes they saw, a surprisal measure carries over to suffixes never seen. Fed one trigram at a
// time (no allocation); the same code for the trainer and the runtime. Only ASCII trigrams count:
// byte trigrams of CJK or Cyrillic text are sparse and would read as noise to any table.
inline constexpr std::uint32_t kDenseFeatures = 3;
// Texts longer than this get no surprisal features (all 0) and the plain scorer: optimised suffixes
// ride on short requests, and a long text would pay ~1.5x per byte for them.
inline constexpr std::size_t kSurprisalMaxBytes = 2048;
inline constexpr std::uint32_t kSurprisalChunk = 32;     // trigrams per chunk for the peak (~32 bytes)
inline constexpr std::uint8_t kSurprisalHigh = 12 * 16;  // 12 bits: a trigram benign text (nearly) never has

class SurprisalStats {
 public:
  static constexpr bool counts(std::uint32_t trigram) { return (trigram & 0x808080u) == 0; }
  void add(std::uint8_t s) {
    total_ += s;
    high_ += s >= kSurprisalHigh;
    chunk_ += s;
    if (++inChunk_ == kSurprisalChunk) [[unlikely]] {
      peak_ = std::max(peak_, chunk_);
      chunk_ = 0;
      inChunk_ = 0;
    }
    ++n_;
  }
  // How far the text is past what benign text reaches (each 0 for most benign texts, so they do
  // not act as a second bias): [0] mean surprisal above 3.5 bits, per 0.5 bit; [1] the largest mean
  // over one chunk (a shorter text: its mean) above 4.5 bits, per bit; [2] the fraction of
  // trigrams at or above kSurprisalHigh, x20. Each capped at 4; all 0 for no trigrams.
  void features(float out[kDenseFeatures]) const {
    if (n_ == 0) {
      for (std::uint32_t k = 0; k < kDenseFeatures; ++k) out[k] = 0.0f;
      return;
    }
    const double mean = double(total_) / double(n_) / 16.0;
    const double peak = n_ < kSurprisalChunk ? mean : double(peak_) / double(kSurprisalChunk) / 16.0;
    out[0] = static_cast<float>(std::clamp((mean - 3.5) / 0.5, 0.0, 4.0));
    out[1] = static_cast<float>(std::clamp(peak - 4.5, 0.0, 4.0));
    out[2] = static_cast<float>(std::min(4.0, 20.0 * double(high_) / double(n_)));
  }

 private:
  std::uint64_t total_ = 0;
  std::uint32_t high_ = 0;
  std::uint32_t chunk_ = 0;
  std::uint32_t inChunk_ = 0;
  std::uint32_t peak_ = 0;
  std::uint32_t n_ = 0;
};

// Calls emit(std::uint64_t hash) -- or emit(hash, Lane), or emit(hash, Lane, std::string_view
// feature text) if it takes that -- once per feature occurrence in `text` (a feature seen twice is
// emitted twice), in the same order either way (with text: a word's bigram right after its unigram,
// as the hashes come too).
// The hash is uniformly mixed: take its top bits as the bucket.
template <class Emit>
void forEachFeatureHash(std::string_view text, Emit&& emit) {
  features_detail::Extractor<Emit> x(emit);
  if (text.size() <= kScanHeadBytes + kScanTailBytes) {
    x.feed(text);
  } else {
    std::size_t headEnd = kScanHeadBytes;
    while (headEnd > 0 && features_detail::isContinuation(static_cast<unsigned char>(text[headEnd]))) --headEnd;
    std::size_t tailBegin = text.size() - kScanTailBytes;
    while (tailBegin < text.size() && features_detail::isContinuation(static_cast<unsigned char>(text[tailBegin])))
      ++tailBegin;
    x.feed(text.substr(0, headEnd));
    x.gap();
    x.feed(text.substr(tailBegin));
  }
  x.finish();
}

}  // namespace sluice::guard
