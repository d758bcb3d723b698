#include "guard/InjectionTraining.hpp"

#include <boost/json.hpp>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <functional>
#include <limits>
#include <optional>
#include <ostream>
#include <random>
#include <stdexcept>

#include "guard/InjectionFeatures.hpp"

namespace sluice::guard {
namespace {

using features_detail::fmix64;

constexpr std::uint64_t kHeldOutSeed = 0x5eed5eed00000001ULL;
constexpr std::uint64_t kFoldSeed = 0x5eed5eed00000002ULL;

// A text as the model sees it: distinct buckets and their values count / sqrt(occurrences).
struct SparseVec {
  std::vector<std::uint32_t> index;
  std::vector<float> value;
};

SparseVec featurize(std::string_view text, unsigned bits, std::vector<std::uint32_t>& scratch) {
  scratch.clear();
  const unsigned shift = 64 - bits;
  forEachFeatureHash(text, [&](std::uint64_t h) { scratch.push_back(static_cast<std::uint32_t>(h >> shift)); });
  std::sort(scratch.begin(), scratch.end());
  SparseVec v;
  if (scratch.empty()) return v;
  const float norm = 1.0f / std::sqrt(static_cast<float>(scratch.size()));
  for (std::size_t i = 0; i < scratch.size();) {
    std::size_t j = i;
    while (j < scratch.size() && scratch[j] == scratch[i]) ++j;
    v.index.push_back(scratch[i]);
    v.value.push_back(static_cast<float>(j - i) * norm);
    i = j;
  }
  return v;
}

struct FloatModel {
  std::vector<float> w;
  double b = 0;
};

double logit(const FloatModel& m, const SparseVec& x) {
  double z = m.b;
  for (std::size_t k = 0; k < x.index.size(); ++k) z += m.w[x.index[k]] * x.value[k];
  return z;
}
double sigmoid(double z) {
  return 1.0 / (1.0 + std::exp(-z));
}

// A stage-2 row's logit under coefficients b (the row ends with its constant 1).
double linear(const std::vector<double>& b, const std::vector<double>& row) {
  double z = 0;
  for (std::size_t a = 0; a < b.size(); ++a) z += b[a] * row[a];
  return z;
}

// Logs the 10th, 50th, 90th and 99th percentiles of `v` (sorted here) under `what`.
void logQuantiles(std::ostream& log, const std::string& what, std::vector<double>& v) {
  if (v.empty()) return;
  std::sort(v.begin(), v.end());
  log << "  " << what << " quantiles 10/50/90/99: " << v[v.size() / 10] << " " << v[v.size() / 2] << " "
      << v[v.size() * 9 / 10] << " " << v[v.size() * 99 / 100] << "\n";
}

// The logit the runtime computes (windowed, InjectionFeatures.hpp), with the float weights.
double windowedLogit(const FloatModel& m, std::string_view text, unsigned bits) {
  const unsigned shift = 64 - bits;
  WindowedSum<double> sum;
  forEachFeatureHash(text, [&](std::uint64_t h) { sum.add(m.w[h >> shift]); });
  return m.b + sum.result();
}

// AdaGrad logistic regression with L2 applied to the features present in each update.
FloatModel fit(const std::vector<SparseVec>& X, const std::vector<float>& y, const std::vector<float>& weight,
               std::vector<std::size_t> rows, const TrainOptions& o) {
  FloatModel m;
  m.w.assign(std::size_t{1} << o.bucket_bits, 0.0f);
  std::vector<float> g2(m.w.size(), 0.0f);
  double gb2 = 0;
  std::mt19937_64 rng(o.seed);
  for (int epoch = 0; epoch < o.epochs; ++epoch) {
    // Fisher-Yates with the raw engine (std::shuffle's algorithm is not pinned by the standard).
    for (std::size_t i = rows.size(); i > 1; --i) std::swap(rows[i - 1], rows[rng() % i]);
    for (std::size_t r : rows) {
      const SparseVec& x = X[r];
      const double g = (sigmoid(logit(m, x)) - y[r]) * weight[r];
      for (std::size_t k = 0; k < x.index.size(); ++k) {
        const std::uint32_t j = x.index[k];
        const double gj = g * x.value[k] + o.l2 * m.w[j];
        g2[j] += static_cast<float>(gj * gj);
        m.w[j] -= static_cast<float>(o.learning_rate * gj / std::sqrt(g2[j] + 1e-8));
      }
      gb2 += g * g;
      m.b -= o.learning_rate * g / std::sqrt(gb2 + 1e-8);
    }
  }
  return m;
}

// The threshold with the best F1 over (score, label) pairs: midway between two adjacent scores.
double bestThreshold(std::vector<std::pair<double, int>> scored) {
  std::sort(scored.begin(), scored.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  std::size_t positives = 0;
  for (const auto& s : scored) positives += s.second == 1;
  double best = -1, bestT = 0.5;
  std::size_t tp = 0, fp = 0;
  for (std::size_t i = 0; i < scored.size(); ++i) {
    (scored[i].second == 1 ? tp : fp) += 1;
    if (i + 1 < scored.size() && scored[i + 1].first == scored[i].first) continue;
    const double f1 = 2.0 * double(tp) / double(tp + fp + positives);
    if (f1 > best) {
      best = f1;
      bestT = i + 1 < scored.size() ? (scored[i].first + scored[i + 1].first) / 2 : scored[i].first;
    }
  }
  return bestT;
}

}  // namespace

std::vector<LabelledText> readLabelledJsonl(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(path + ": cannot open");
  std::vector<LabelledText> out;
  std::string line;
  for (std::size_t n = 1; std::getline(in, line); ++n) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    boost::system::error_code ec;
    auto v = boost::json::parse(line, ec);
    const auto* o = ec ? nullptr : v.if_object();
    const auto* text = o ? o->if_contains("text") : nullptr;
    const auto* label = o ? o->if_contains("label") : nullptr;
    if (!text || !text->is_string() || !label || !label->is_int64() ||
        (label->as_int64() != 0 && label->as_int64() != 1))
      throw std::runtime_error(path + ":" + std::to_string(n) + ": expected {\"text\": string, \"label\": 0 or 1}");
    LabelledText t;
    t.text = std::string(text->as_string());
    t.label = static_cast<int>(label->as_int64());
    if (const auto* s = o->if_contains("source"); s && s->is_string()) t.source = std::string(s->as_string());
    if (const auto* s = o->if_contains("from"); s && s->is_string()) t.from = std::string(s->as_string());
    out.push_back(std::move(t));
  }
  return out;
}

std::uint64_t splitKey(std::string_view text) {
  // Word hashes over the same normalisation as the features (ASCII lowercased, [a-z0-9] and
  // non-ASCII bytes form words), then the minimum hash over word 4-grams.
  std::uint64_t words[4] = {0, 0, 0, 0};
  std::size_t count = 0;
  std::uint64_t minHash = std::numeric_limits<std::uint64_t>::max();
  std::uint64_t all = features_detail::kFnvOffset;
  std::uint64_t w = features_detail::kFnvOffset;
  bool in = false;
  auto endWord = [&] {
    words[count % 4] = w;
    ++count;
    all = fmix64(all ^ w);
    if (count >= 4) {
      std::uint64_t h = 0;
      for (std::size_t k = count - 4; k < count; ++k) h = fmix64(h ^ words[k % 4]);
      minHash = std::min(minHash, h);
    }
    w = features_detail::kFnvOffset;
    in = false;
  };
  for (char ch : text) {
    const unsigned char c = features_detail::normalize(static_cast<unsigned char>(ch));
    if (features_detail::isWordByte(c)) {
      w = (w ^ c) * features_detail::kFnvPrime;
      in = true;
    } else if (in) {
      endWord();
    }
  }
  if (in) endWord();
  return count >= 4 ? minHash : fmix64(all);
}

bool isHeldOut(std::string_view text) {
  return fmix64(splitKey(text) ^ kHeldOutSeed) % 5 == 0;
}

void BinaryMetrics::add(int label, bool predicted) {
  if (label == 1) {
    (predicted ? tp : fn) += 1;
  } else {
    (predicted ? fp : tn) += 1;
  }
}

std::vector<std::uint8_t> buildSurprisalTable(const std::vector<LabelledText>& samples,
                                              const std::vector<std::size_t>& rows, std::uint32_t bits) {
  // Exact counts of trigrams (24-bit keys) and of their two-character contexts, then per table
  // entry the lowest surprisal of the trigrams that hash to it (add-alpha smoothing over an
  // alphabet of kAlphabet). Entries no trigram reached stay at 255.
  constexpr double kAlpha = 0.5;
  constexpr double kAlphabet = 96;
  std::vector<std::uint32_t> tri(std::size_t{1} << 24, 0);
  std::vector<std::uint32_t> ctx(std::size_t{1} << 16, 0);
  for (std::size_t r : rows) {
    if (samples[r].label != 0) continue;
    forEachFeatureHash(samples[r].text, [&](std::uint64_t, Lane lane, std::string_view gram) {
      if (lane != kLane3 || gram.size() != 3) return;
      const std::uint32_t key = (std::uint32_t{static_cast<unsigned char>(gram[0])} << 16) |
                                (std::uint32_t{static_cast<unsigned char>(gram[1])} << 8) |
                                static_cast<unsigned char>(gram[2]);
      if (!SurprisalStats::counts(key)) return;
      ++tri[key];
      ++ctx[key >> 8];
    });
  }
  std::vector<std::uint8_t> table(std::size_t{1} << bits, 255);
  const unsigned shift = 64 - bits;
  for (std::uint32_t key = 0; key < tri.size(); ++key) {
    if (tri[key] == 0) continue;
    const double bitsOf = -std::log2((tri[key] + kAlpha) / (ctx[key >> 8] + kAlpha * kAlphabet));
    const auto q = static_cast<std::uint8_t>(std::clamp(std::round(bitsOf * 16.0), 0.0, 255.0));
    const std::size_t at = features_detail::mixNgram(std::uint64_t{key} | (3ULL << 56)) >> shift;
    table[at] = std::min(table[at], q);
  }
  return table;
}

void denseFeaturesOf(std::string_view text, const std::vector<std::uint8_t>& table, std::uint32_t bits,
                     float out[kDenseFeatures]) {
  if (text.size() > kSurprisalMaxBytes) {
    for (std::uint32_t k = 0; k < kDenseFeatures; ++k) out[k] = 0.0f;
    return;
  }
  const unsigned shift = 64 - bits;
  SurprisalStats stats;
  forEachFeatureHash(text, [&](std::uint64_t h, Lane lane, std::uint32_t trigram) {
    if (lane == kLane3 && SurprisalStats::counts(trigram)) stats.add(table[h >> shift]);
  });
  stats.features(out);
}

std::vector<std::string> TrainOptions::defaultCalibrationSources() {
  // Everyday requests people send an assistant: code, writing, questions, agent tasks, several languages.
  return {"arena_hard",        "bfcl_queries", "clinc150",      "fastchat_bench",
          "gpteacher_codegen", "m_ifeval",     "oasst_prompts", "xstest_safe"};
}

std::vector<std::string> TrainOptions::defaultDocumentSources() {
  // Carriers: what the runtime screens as tool results (e-mails, web pages, tool outputs,
  // retrieved passages, code), as opposed to a user's own turn.
  return {"agentdojo_docs", "agentdyn_toolout", "bipia_email", "synth_code",
          "synth_email",    "synth_rag",        "synth_tool",  "synth_web"};
}

namespace {

// The document channel (TrainOptions::doc_channel): the shape of the stage-1 logit along a text,
// each feature occurrence weighing weightOf(hash): the worst window (as the runtime scores it),
// the whole text, the worst block (~75 bytes, about a sentence) and the median window, each plus
// `bias`. A planted instruction is a peak over otherwise descriptive text.
constexpr std::size_t kDocShape = 4;
template <class WeightOf>
void docShape(std::string_view text, double bias, WeightOf weightOf, double out[kDocShape]) {
  std::vector<double> v;
  WindowedSum<double> windowed;
  forEachFeatureHash(text, [&](std::uint64_t h) {
    const double w = weightOf(h);
    v.push_back(w);
    windowed.add(w);
  });
  const std::size_t n = v.size();
  if (n == 0) {
    for (std::size_t k = 0; k < kDocShape; ++k) out[k] = bias;
    return;
  }
  double total = 0;
  std::vector<double> blocks, counts;
  for (std::size_t i = 0; i < n; i += kBlockFeatures) {
    const std::size_t end = std::min(n, i + kBlockFeatures);
    double b = 0;
    for (std::size_t k = i; k < end; ++k) b += v[k];
    blocks.push_back(b);
    counts.push_back(double(end - i));
    total += b;
  }
  double bestBlock = -1e300;
  for (std::size_t b = 0; b < blocks.size(); ++b)
    bestBlock = std::max(bestBlock, blocks[b] / std::sqrt(std::max(counts[b], double(kBlockFeatures) / 2)));
  std::vector<double> windows;
  if (blocks.size() <= kWindowBlocks) {
    windows.push_back(total / std::sqrt(double(n)));
  } else {
    for (std::size_t b = 0; b + kWindowBlocks <= blocks.size(); ++b) {
      double s = 0, c = 0;
      for (std::size_t k = b; k < b + kWindowBlocks; ++k) s += blocks[k], c += counts[k];
      windows.push_back(s / std::sqrt(c));
    }
  }
  std::nth_element(windows.begin(), windows.begin() + static_cast<std::ptrdiff_t>(windows.size() / 2), windows.end());
  out[0] = bias + windowed.result();
  out[1] = bias + total / std::sqrt(double(n));
  out[2] = bias + bestBlock;
  out[3] = bias + windows[windows.size() / 2];
}

// What leave-one-source-out needs to score a document on the document channel.
struct DocChannel {
  std::vector<double> beta;      // stage 2 over docRow
  double threshold = 0.5;        // on its score
  double plain_threshold = 0.5;  // on the model's own score, calibrated on benign documents
  double bias1 = 0, scale1 = 1;  // the int8 model's stage 1, before stage 2 is folded in
  // The same for user turns: a stage 2 over docRow fitted on user turns only, its threshold at the
  // everyday-request budget (the "split" variant: each channel its own stage 2).
  std::vector<double> user_beta;
  double user_threshold = 0.5;
};

std::vector<double> docRow(const double shape[kDocShape], const float dense[kDenseFeatures]) {
  std::vector<double> row(shape, shape + kDocShape);
  for (std::uint32_t k = 0; k < kDenseFeatures; ++k) row.push_back(dense[k]);
  row.push_back(1.0);
  return row;
}

bool isDocument(const TrainOptions& o, const std::string& source) {
  return std::find(o.document_sources.begin(), o.document_sources.end(), source) != o.document_sources.end();
}

struct Featurized {
  std::vector<SparseVec> X;  // one row per sample, then the extra window rows
  std::vector<float> y;
  std::vector<float> weight;
  std::vector<int> fold;
  std::vector<std::vector<std::size_t>> extra;  // per sample: its window rows in X (benign_windows)
};

SparseVec sparseOf(std::vector<std::uint32_t> buckets) {
  std::sort(buckets.begin(), buckets.end());
  SparseVec v;
  if (buckets.empty()) return v;
  const float norm = 1.0f / std::sqrt(static_cast<float>(buckets.size()));
  for (std::size_t i = 0; i < buckets.size();) {
    std::size_t j = i;
    while (j < buckets.size() && buckets[j] == buckets[i]) ++j;
    v.index.push_back(buckets[i]);
    v.value.push_back(static_cast<float>(j - i) * norm);
    i = j;
  }
  return v;
}

// Rows for trainRows' fits: `rows` (sample indices) and their window rows.
std::vector<std::size_t> withWindows(const Featurized& f, std::vector<std::size_t> rows) {
  const std::size_t n = rows.size();
  for (std::size_t k = 0; k < n; ++k)
    for (std::size_t e : f.extra[rows[k]]) rows.push_back(e);
  return rows;
}

Featurized featurizeAll(const std::vector<LabelledText>& samples, const TrainOptions& o) {
  Featurized f;
  std::vector<std::uint32_t> scratch;
  f.X.reserve(samples.size());
  for (const auto& s : samples) {
    f.X.push_back(featurize(s.text, o.bucket_bits, scratch));
    f.y.push_back(static_cast<float>(s.label));
    f.fold.push_back(o.folds > 1 ? static_cast<int>(fmix64(splitKey(s.text) ^ kFoldSeed) % o.folds) : 0);
  }
  f.weight.assign(samples.size(), 1.0f);
  if (o.balance_sources) {
    std::map<std::pair<std::string, int>, std::size_t> groups;
    for (const auto& s : samples) ++groups[{s.source, s.label}];
    const double mean = double(samples.size()) / double(groups.size());
    for (std::size_t i = 0; i < samples.size(); ++i)
      f.weight[i] = static_cast<float>(std::sqrt(mean / double(groups[{samples[i].source, samples[i].label}])));
  }
  f.extra.resize(samples.size());
  if (o.benign_windows > 0) {
    constexpr std::size_t kWindow = std::size_t{kBlockFeatures} * kWindowBlocks;
    const unsigned shift = 64 - o.bucket_bits;
    std::vector<std::uint32_t> all;
    for (std::size_t i = 0; i < samples.size(); ++i) {
      if (samples[i].label != 0) continue;
      all.clear();
      forEachFeatureHash(samples[i].text,
                         [&](std::uint64_t h) { all.push_back(static_cast<std::uint32_t>(h >> shift)); });
      if (all.size() < 2 * kWindow) continue;
      const std::size_t starts = all.size() - kWindow;  // the last window starts here
      const auto count = static_cast<std::size_t>(o.benign_windows);
      for (std::size_t k = 0; k < count; ++k) {
        const std::size_t at = count == 1 ? 0 : starts * k / (count - 1);
        f.extra[i].push_back(f.X.size());
        f.X.push_back(sparseOf(
            {all.begin() + static_cast<std::ptrdiff_t>(at), all.begin() + static_cast<std::ptrdiff_t>(at + kWindow)}));
        f.y.push_back(0.0f);
        f.weight.push_back(f.weight[i]);
        f.fold.push_back(f.fold[i]);
      }
    }
  }
  return f;
}

// The lowest threshold that flags at most `budget` of `benign` (midway between two scores).
double budgetThreshold(std::vector<double> benign, double budget) {
  std::sort(benign.begin(), benign.end(), std::greater<>());
  const auto k = static_cast<std::size_t>(std::floor(budget * static_cast<double>(benign.size())));
  if (k >= benign.size()) return 0.0;
  if (k == 0) return std::min(1.0, benign[0] + 1e-6);
  return benign[k] == benign[k - 1] ? std::min(1.0, benign[k - 1] + 1e-6) : (benign[k] + benign[k - 1]) / 2;
}

InjectionModel quantize(const FloatModel& m, const TrainOptions& o, double threshold, std::size_t* nonzero) {
  std::vector<float> mags;
  for (float w : m.w)
    if (w != 0.0f) mags.push_back(std::fabs(w));
  float clip = 1.0f;
  if (!mags.empty()) {
    const std::size_t k =
        std::min(mags.size() - 1, static_cast<std::size_t>(o.clip_quantile * double(mags.size() - 1)));
    std::nth_element(mags.begin(), mags.begin() + static_cast<std::ptrdiff_t>(k), mags.end());
    clip = std::max(mags[k], 1e-6f);
  }
  InjectionModel q;
  q.bucket_bits = o.bucket_bits;
  q.bias = static_cast<float>(m.b);
  q.scale = clip / 127.0f;
  q.threshold = static_cast<float>(threshold);
  q.weights.resize(m.w.size());
  *nonzero = 0;
  for (std::size_t i = 0; i < m.w.size(); ++i) {
    const float r = std::round(m.w[i] / q.scale);
    q.weights[i] = static_cast<std::int8_t>(std::clamp(r, -127.0f, 127.0f));
    *nonzero += q.weights[i] != 0;
  }
  return q;
}

// Stage 2 of a stacked model: logistic regression of the label on (the n-gram model's windowed
// logit, the dense features, 1) by Newton's method with a small ridge. Few parameters, so
// deterministic and exact. Returns the coefficients in that order.
std::vector<double> fitStage2(const std::vector<std::vector<double>>& x, const std::vector<int>& y,
                              const std::vector<float>& weight, bool lineSearch = false) {
  // The penalised loss, for the line search (off: full Newton steps, as the committed model was fitted).
  auto loss = [&](const std::vector<double>& b) {
    double l = 0;
    for (std::size_t i = 0; i < x.size(); ++i) {
      const double z = linear(b, x[i]);
      l += weight[i] * (z > 0 ? std::log1p(std::exp(-z)) + (1 - y[i]) * z : std::log1p(std::exp(z)) - y[i] * z);
    }
    for (double v : b) l += 0.5e-2 * v * v;
    return l;
  };
  const std::size_t p = x.empty() ? 0 : x[0].size();
  std::vector<double> beta(p, 0.0);
  if (p == 0) return beta;
  beta[0] = 1.0;
  for (int iter = 0; iter < 30; ++iter) {
    std::vector<double> g(p, 0.0), h(p * p, 0.0);
    for (std::size_t i = 0; i < x.size(); ++i) {
      const double z = linear(beta, x[i]);
      const double q = 1.0 / (1.0 + std::exp(-z));
      const double wi = weight[i];
      for (std::size_t a = 0; a < p; ++a) {
        g[a] += wi * (q - y[i]) * x[i][a];
        for (std::size_t b = 0; b < p; ++b) h[a * p + b] += wi * q * (1 - q) * x[i][a] * x[i][b];
      }
    }
    for (std::size_t a = 0; a < p; ++a) {
      g[a] += 1e-2 * beta[a];
      h[a * p + a] += 1e-2;
    }
    // Solve h d = g (Gaussian elimination with partial pivoting).
    std::vector<double> d = g;
    for (std::size_t c = 0; c < p; ++c) {
      std::size_t piv = c;
      for (std::size_t r = c + 1; r < p; ++r)
        if (std::fabs(h[r * p + c]) > std::fabs(h[piv * p + c])) piv = r;
      for (std::size_t k = 0; k < p; ++k) std::swap(h[c * p + k], h[piv * p + k]);
      std::swap(d[c], d[piv]);
      for (std::size_t r = c + 1; r < p; ++r) {
        const double f = h[r * p + c] / h[c * p + c];
        for (std::size_t k = c; k < p; ++k) h[r * p + k] -= f * h[c * p + k];
        d[r] -= f * d[c];
      }
    }
    for (std::size_t c = p; c-- > 0;) {
      for (std::size_t k = c + 1; k < p; ++k) d[c] -= h[c * p + k] * d[k];
      d[c] /= h[c * p + c];
    }
    if (lineSearch) {
      const double before = loss(beta);
      for (int halvings = 0; halvings < 30; ++halvings) {
        std::vector<double> tried = beta;
        for (std::size_t a = 0; a < p; ++a) tried[a] -= d[a];
        if (loss(tried) <= before) break;
        for (double& v : d) v /= 2;
      }
    }
    double step = 0;
    for (std::size_t a = 0; a < p; ++a) {
      beta[a] -= d[a];
      step = std::max(step, std::fabs(d[a]));
    }
    if (step < 1e-9) break;
  }
  return beta;
}

// Stacked training (TrainOptions::stack): the folds are whole sources (round robin over the
// sorted source names), so each out-of-fold score is a score on sources the fold's model never
// saw; stage 2 learns from those scores how far to trust the n-gram logit and how much the dense
// features add on an unseen source, and the threshold is calibrated on the same stage-2 scores.
InjectionModel trainStacked(const std::vector<LabelledText>& samples, const Featurized& f,
                            const std::vector<std::size_t>& rows, const TrainOptions& o, std::ostream* log,
                            DocChannel* doc) {
  std::map<std::string, int> foldOfSource;
  for (std::size_t r : rows) foldOfSource.emplace(samples[r].source, 0);
  int next = 0;
  for (auto& [source, fold] : foldOfSource) fold = next++ % o.folds;
  const bool dense = o.surprisal_bits > 0;
  std::vector<std::vector<double>> x;
  std::vector<int> y;
  std::vector<float> w;
  std::vector<char> calibration;
  std::vector<std::vector<double>> docX;
  std::vector<int> docY;
  std::vector<float> docW;
  std::vector<std::size_t> docAt;  // the document rows' index in x
  std::vector<std::vector<double>> userX;
  std::vector<int> userY;
  std::vector<float> userW;
  std::vector<char> userCal;
  for (int k = 0; k < o.folds; ++k) {
    std::vector<std::size_t> in, out;
    for (std::size_t r : rows) (foldOfSource[samples[r].source] == k ? out : in).push_back(r);
    if (out.empty()) continue;
    const std::vector<std::uint8_t> table =
        dense ? buildSurprisalTable(samples, in, o.surprisal_bits) : std::vector<std::uint8_t>{};
    const FloatModel m = fit(f.X, f.y, f.weight, withWindows(f, std::move(in)), o);
    for (std::size_t r : out) {
      std::vector<double> row{windowedLogit(m, samples[r].text, o.bucket_bits)};
      float d[kDenseFeatures] = {};
      if (dense) {
        denseFeaturesOf(samples[r].text, table, o.surprisal_bits, d);
        for (float v : d) row.push_back(v);
      }
      if (doc) {
        const unsigned shift = 64 - o.bucket_bits;
        double shape[kDocShape];
        docShape(
            samples[r].text, m.b, [&](std::uint64_t h) { return double(m.w[h >> shift]); }, shape);
        if (isDocument(o, samples[r].source)) {
          docX.push_back(docRow(shape, d));
          docY.push_back(samples[r].label);
          docW.push_back(f.weight[r]);
          docAt.push_back(x.size());
        } else {
          userX.push_back(docRow(shape, d));
          userY.push_back(samples[r].label);
          userW.push_back(f.weight[r]);
          userCal.push_back(samples[r].label == 0 &&
                            std::find(o.calibration_sources.begin(), o.calibration_sources.end(), samples[r].source) !=
                                o.calibration_sources.end());
        }
      }
      row.push_back(1.0);
      x.push_back(std::move(row));
      y.push_back(samples[r].label);
      w.push_back(f.weight[r]);
      calibration.push_back(samples[r].label == 0 &&
                            std::find(o.calibration_sources.begin(), o.calibration_sources.end(), samples[r].source) !=
                                o.calibration_sources.end());
    }
  }
  const std::vector<double> beta = fitStage2(x, y, w, o.stage2_line_search);
  std::vector<std::pair<double, int>> oof;
  std::vector<double> cal;
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double p = sigmoid(linear(beta, x[i]));
    oof.emplace_back(p, y[i]);
    if (calibration[i]) cal.push_back(p);
  }
  const double threshold = o.fpr_budget > 0 && !cal.empty() ? budgetThreshold(cal, o.fpr_budget) : bestThreshold(oof);
  if (doc) {
    std::vector<double> plain, stacked;
    std::vector<std::pair<double, int>> docOof;
    doc->beta = fitStage2(docX, docY, docW, true);
    for (std::size_t i = 0; i < docX.size(); ++i) {
      const double z = linear(doc->beta, docX[i]);
      docOof.emplace_back(sigmoid(z), docY[i]);
      if (docY[i] == 0) plain.push_back(oof[docAt[i]].first), stacked.push_back(sigmoid(z));
    }
    const double budget = o.doc_fpr_budget > 0 ? o.doc_fpr_budget : o.fpr_budget > 0 ? o.fpr_budget : 0.025;
    doc->plain_threshold = plain.empty() ? threshold : budgetThreshold(plain, budget);
    doc->threshold = stacked.empty() ? 0.5 : budgetThreshold(stacked, budget);
    doc->user_beta = fitStage2(userX, userY, userW, true);
    std::vector<double> everyday;
    for (std::size_t i = 0; i < userX.size(); ++i) {
      if (userCal[i]) everyday.push_back(sigmoid(linear(doc->user_beta, userX[i])));
    }
    doc->user_threshold = everyday.empty() ? 0.5 : budgetThreshold(everyday, o.fpr_budget > 0 ? o.fpr_budget : 0.025);
    if (log) {
      BinaryMetrics bm;
      for (const auto& [p, l] : docOof) bm.add(l, p >= doc->threshold);
      *log << "document channel: " << docX.size() << " documents (" << plain.size() << " benign), plain threshold "
           << doc->plain_threshold << "; stage 2";
      for (double b : doc->beta) *log << " " << b;
      *log << "; threshold " << doc->threshold << ", out-of-fold precision " << bm.precision() << " recall "
           << bm.recall() << " f1 " << bm.f1() << "\n";
      *log << "user channel stage 2";
      for (double b : doc->user_beta) *log << " " << b;
      *log << "; threshold " << doc->user_threshold << "\n";
    }
  }
  const FloatModel m = fit(f.X, f.y, f.weight, withWindows(f, rows), o);
  std::size_t nonzero = 0;
  InjectionModel q = quantize(m, o, threshold, &nonzero);
  if (doc) doc->bias1 = q.bias, doc->scale1 = q.scale;
  // z = a * (bias + scale * sum) + dense . f + c
  const double a = beta[0];
  q.bias = static_cast<float>(a * q.bias + beta.back());
  q.scale = static_cast<float>(a * q.scale);
  if (dense) {
    q.dense.assign(beta.begin() + 1, beta.begin() + 1 + kDenseFeatures);
    q.surprisal_bits = o.surprisal_bits;
    q.surprisal = buildSurprisalTable(samples, rows, o.surprisal_bits);
  }
  if (log) {
    BinaryMetrics bm;
    for (const auto& [p, l] : oof) bm.add(l, p >= threshold);
    *log << "stacked, " << o.folds << " folds of whole sources: stage 2";
    for (double b : beta) *log << " " << b;
    *log << "; threshold " << threshold << " (" << cal.size() << " everyday requests), out-of-fold precision "
         << bm.precision() << " recall " << bm.recall() << " f1 " << bm.f1() << "\n"
         << "trained on " << rows.size() << " texts, " << nonzero << " non-zero int8 weights\n";
  }
  return q;
}

// Trains on `rows` of `f` (threshold from out-of-fold scores of those rows only).
InjectionModel trainRows(const std::vector<LabelledText>& samples, const Featurized& f,
                         const std::vector<std::size_t>& rows, const TrainOptions& o, std::ostream* log,
                         DocChannel* doc = nullptr) {
  if (o.stack && o.folds > 1) return trainStacked(samples, f, rows, o, log, doc);
  double threshold = 0.5;
  if (o.folds > 1) {
    std::vector<std::pair<double, int>> oof;
    std::vector<double> calibration;
    for (int k = 0; k < o.folds; ++k) {
      std::vector<std::size_t> in;
      for (std::size_t r : rows)
        if (f.fold[r] != k) in.push_back(r);
      const FloatModel m = fit(f.X, f.y, f.weight, withWindows(f, std::move(in)), o);
      for (std::size_t r : rows) {
        if (f.fold[r] != k) continue;
        const double p = sigmoid(windowedLogit(m, samples[r].text, o.bucket_bits));
        oof.emplace_back(p, samples[r].label);
        if (samples[r].label == 0 && std::find(o.calibration_sources.begin(), o.calibration_sources.end(),
                                               samples[r].source) != o.calibration_sources.end())
          calibration.push_back(p);
      }
    }
    threshold =
        o.fpr_budget > 0 && !calibration.empty() ? budgetThreshold(calibration, o.fpr_budget) : bestThreshold(oof);
    if (log) {
      BinaryMetrics bm;
      for (const auto& [p, l] : oof) bm.add(l, p >= threshold);
      *log << "out-of-fold (" << o.folds << " folds): threshold " << threshold
           << (o.fpr_budget > 0 && !calibration.empty() ? " (" + std::to_string(o.fpr_budget * 100) + "% of " +
                                                              std::to_string(calibration.size()) + " everyday requests)"
                                                        : std::string(" (best F1)"))
           << " precision " << bm.precision() << " recall " << bm.recall() << " f1 " << bm.f1() << "\n";
    }
  }
  const FloatModel m = fit(f.X, f.y, f.weight, withWindows(f, rows), o);
  std::size_t nonzero = 0;
  InjectionModel q = quantize(m, o, threshold, &nonzero);
  if (log)
    *log << "trained on " << rows.size() << " texts, " << o.epochs << " epochs, 2^" << o.bucket_bits << " buckets, "
         << nonzero << " non-zero int8 weights (step " << q.scale << ")\n";
  return q;
}

}  // namespace

InjectionModel trainInjectionModel(const std::vector<LabelledText>& samples, const TrainOptions& o, std::ostream* log) {
  if (o.bucket_bits < 8 || o.bucket_bits > 24) throw std::invalid_argument("bucket_bits must be 8..24");
  if (samples.empty()) throw std::invalid_argument("no training samples");
  const Featurized f = featurizeAll(samples, o);
  std::vector<std::size_t> rows(samples.size());
  for (std::size_t i = 0; i < rows.size(); ++i) rows[i] = i;
  return trainRows(samples, f, rows, o, log);
}

std::vector<SourceResult> leaveOneSourceOut(const std::vector<LabelledText>& samples, const TrainOptions& o,
                                            std::ostream* log, const std::string& only) {
  if (o.bucket_bits < 8 || o.bucket_bits > 24) throw std::invalid_argument("bucket_bits must be 8..24");
  const Featurized f = featurizeAll(samples, o);
  // The document model's rows: with doc_benign_windows, long benign texts also as windows of their own.
  std::optional<Featurized> fDocWindows;
  if (o.doc_model && o.doc_benign_windows != o.benign_windows) {
    TrainOptions ow = o;
    ow.benign_windows = o.doc_benign_windows;
    fDocWindows = featurizeAll(samples, ow);
  }
  const Featurized& fDoc = fDocWindows ? *fDocWindows : f;
  std::map<std::string, std::vector<std::size_t>> bySource;
  for (std::size_t i = 0; i < samples.size(); ++i) bySource[samples[i].source].push_back(i);
  std::vector<SourceResult> out;
  std::vector<std::string> onlyList;  // `only`: comma-separated
  for (std::size_t at = 0; at < only.size();) {
    const std::size_t comma = std::min(only.find(',', at), only.size());
    onlyList.push_back(only.substr(at, comma - at));
    if (!bySource.count(onlyList.back())) throw std::invalid_argument("no texts of source " + onlyList.back());
    at = comma + 1;
  }
  for (const auto& [source, test] : bySource) {
    if (!onlyList.empty() && std::find(onlyList.begin(), onlyList.end(), source) == onlyList.end()) continue;
    std::vector<std::size_t> rows;
    for (std::size_t i = 0; i < samples.size(); ++i)
      if (samples[i].source != source && samples[i].from != source) rows.push_back(i);
    DocChannel dc;
    const bool docs = o.doc_channel && o.stack && o.folds > 1;
    const InjectionModel q = trainRows(samples, f, rows, o, docs ? log : nullptr, docs ? &dc : nullptr);
    const InjectionDetector d(q);
    SourceResult r;
    r.source = source;
    r.threshold = d.threshold();
    r.trained_on = rows.size();
    r.document = (docs || o.doc_model) && isDocument(o, source);
    r.doc_plain_threshold = dc.plain_threshold;
    r.doc_threshold = r.document ? dc.threshold : dc.user_threshold;
    const unsigned shift = 64 - q.bucket_bits;
    std::vector<double> quant[2][2];  // [plain, stacked][label]
    for (std::size_t i : test) {
      const double score = d.score(samples[i].text);
      r.metrics.add(samples[i].label, score >= d.threshold());
      if (!docs) continue;
      double shape[kDocShape];
      docShape(
          samples[i].text, dc.bias1, [&](std::uint64_t h) { return dc.scale1 * q.weights[h >> shift]; }, shape);
      float dense[kDenseFeatures] = {};
      if (q.surprisal_bits > 0) denseFeaturesOf(samples[i].text, q.surprisal, q.surprisal_bits, dense);
      const std::vector<double> row = docRow(shape, dense);
      if (!r.document) {
        r.doc_plain.add(samples[i].label, score >= d.threshold());
        r.doc_stacked.add(samples[i].label, score >= d.threshold());
        r.split.add(samples[i].label, sigmoid(linear(dc.user_beta, row)) >= dc.user_threshold);
        continue;
      }
      r.doc_plain.add(samples[i].label, score >= dc.plain_threshold);
      const double stacked = sigmoid(linear(dc.beta, row));
      r.doc_stacked.add(samples[i].label, stacked >= dc.threshold);
      r.split.add(samples[i].label, stacked >= dc.threshold);
      quant[0][samples[i].label].push_back(score);
      quant[1][samples[i].label].push_back(stacked);
    }
    r.doc_model = r.metrics;
    r.doc_model_threshold = r.threshold;
    if (o.doc_model && isDocument(o, source)) {
      std::vector<std::size_t> docRows;
      for (std::size_t i : rows)
        if (isDocument(o, samples[i].source) || (o.doc_model_attacks && samples[i].label == 1)) docRows.push_back(i);
      TrainOptions od = o;
      od.calibration_sources = o.document_sources;
      if (o.doc_fpr_budget > 0) od.fpr_budget = o.doc_fpr_budget;
      // No surprisal features: a table of benign documents alone tells documents from attacks of any
      // other kind, and stage 2 learnt that (and diverged without the line search).
      od.surprisal_bits = 0;
      od.stage2_line_search = true;
      const InjectionDetector dd(trainRows(samples, fDoc, docRows, od, log, nullptr));
      r.doc_model = {};
      r.doc_model_threshold = dd.threshold();
      std::vector<double> v[2];
      for (std::size_t i : test) {
        const double p = dd.score(samples[i].text);
        r.doc_model.add(samples[i].label, p >= dd.threshold());
        v[samples[i].label].push_back(p);
      }
      for (int l = 0; l < 2 && log; ++l) logQuantiles(*log, l ? "doc model attacks" : "doc model benign", v[l]);
      if (log)
        *log << "loso " << source << " doc model: trained on " << docRows.size() << ", threshold "
             << r.doc_model_threshold << ", tp " << r.doc_model.tp << " fp " << r.doc_model.fp << " tn "
             << r.doc_model.tn << " fn " << r.doc_model.fn << "\n";
    }
    if (log && r.document)
      for (int k = 0; k < 2; ++k)
        for (int l = 0; l < 2; ++l)
          logQuantiles(*log, std::string(k ? "stacked" : "plain") + (l ? " attacks" : " benign"), quant[k][l]);
    if (log)
      *log << "loso " << source << ": " << test.size() << " texts, trained on " << rows.size() << ", threshold "
           << r.threshold << ", tp " << r.metrics.tp << " fp " << r.metrics.fp << " tn " << r.metrics.tn << " fn "
           << r.metrics.fn << "\n";
    out.push_back(std::move(r));
  }
  return out;
}

Evaluation evaluate(const InjectionDetector& detector, const std::vector<LabelledText>& samples, double threshold) {
  Evaluation e;
  e.threshold = threshold;
  for (const auto& s : samples) {
    const bool predicted = detector.score(s.text) >= threshold;
    e.total.add(s.label, predicted);
    e.by_source[s.source].add(s.label, predicted);
  }
  return e;
}

std::string evaluationJson(const Evaluation& e) {
  auto metrics = [](const BinaryMetrics& m) {
    return boost::json::object{
        {"n", m.tp + m.fp + m.tn + m.fn}, {"tp", m.tp},           {"fp", m.fp},  {"tn", m.tn}, {"fn", m.fn},
        {"precision", m.precision()},     {"recall", m.recall()}, {"f1", m.f1()}};
  };
  boost::json::object o = metrics(e.total);
  o["threshold"] = e.threshold;
  boost::json::object by;
  for (const auto& [source, m] : e.by_source) by[source] = metrics(m);
  o["by_source"] = std::move(by);
  return boost::json::serialize(o);
}

}  // namespace sluice::guard
