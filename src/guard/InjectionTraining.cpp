#include "guard/InjectionTraining.hpp"

#include <boost/json.hpp>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
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

// AdaGrad logistic regression with L2 applied to the features present in each update.
FloatModel fit(const std::vector<SparseVec>& X, const std::vector<float>& y, std::vector<std::size_t> rows,
               const TrainOptions& o) {
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
      const double g = sigmoid(logit(m, x)) - y[r];
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

InjectionModel trainInjectionModel(const std::vector<LabelledText>& samples, const TrainOptions& o, std::ostream* log) {
  if (o.bucket_bits < 8 || o.bucket_bits > 24) throw std::invalid_argument("bucket_bits must be 8..24");
  if (samples.empty()) throw std::invalid_argument("no training samples");
  std::vector<SparseVec> X;
  std::vector<float> y;
  std::vector<int> fold;
  std::vector<std::uint32_t> scratch;
  X.reserve(samples.size());
  for (const auto& s : samples) {
    X.push_back(featurize(s.text, o.bucket_bits, scratch));
    y.push_back(static_cast<float>(s.label));
    fold.push_back(o.folds > 1 ? static_cast<int>(fmix64(splitKey(s.text) ^ kFoldSeed) % o.folds) : 0);
  }

  // Out-of-fold scores for the threshold.
  double threshold = 0.5;
  if (o.folds > 1) {
    std::vector<std::pair<double, int>> oof;
    for (int f = 0; f < o.folds; ++f) {
      std::vector<std::size_t> rows;
      for (std::size_t i = 0; i < X.size(); ++i)
        if (fold[i] != f) rows.push_back(i);
      const FloatModel m = fit(X, y, rows, o);
      for (std::size_t i = 0; i < X.size(); ++i)
        if (fold[i] == f) oof.emplace_back(sigmoid(logit(m, X[i])), samples[i].label);
    }
    threshold = bestThreshold(oof);
    if (log) {
      BinaryMetrics bm;
      for (const auto& [s, l] : oof) bm.add(l, s >= threshold);
      *log << "out-of-fold (" << o.folds << " folds): threshold " << threshold << " precision " << bm.precision()
           << " recall " << bm.recall() << " f1 " << bm.f1() << "\n";
    }
  }

  std::vector<std::size_t> rows(X.size());
  for (std::size_t i = 0; i < rows.size(); ++i) rows[i] = i;
  const FloatModel m = fit(X, y, rows, o);

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
  std::size_t nonzero = 0;
  for (std::size_t i = 0; i < m.w.size(); ++i) {
    const float r = std::round(m.w[i] / q.scale);
    q.weights[i] = static_cast<std::int8_t>(std::clamp(r, -127.0f, 127.0f));
    nonzero += q.weights[i] != 0;
  }
  if (log)
    *log << "trained on " << samples.size() << " texts, " << o.epochs << " epochs, 2^" << o.bucket_bits << " buckets, "
         << nonzero << " non-zero int8 weights (step " << q.scale << ")\n";
  return q;
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
