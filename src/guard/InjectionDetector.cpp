#include "guard/InjectionDetector.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>

#include "guard/InjectionFeatures.hpp"

namespace sluice::guard {
namespace {

constexpr std::string_view kMagic = "SLUICEPI";
constexpr std::uint32_t kFormatVersion = 1;       // hashed weights only
constexpr std::uint32_t kDenseFormatVersion = 2;  // + dense features and their trigram table
constexpr std::uint32_t kMinSurprisalBits = 8;
constexpr std::uint32_t kMaxSurprisalBits = 20;
constexpr std::size_t kHeaderBytes = 8 + 4 * 7;
constexpr std::uint32_t kMinBucketBits = 8;
constexpr std::uint32_t kMaxBucketBits = 24;

std::uint32_t fnv1a32(std::string_view bytes) {
  std::uint32_t h = 0x811c9dc5u;
  for (char c : bytes) h = (h ^ static_cast<unsigned char>(c)) * 0x01000193u;
  return h;
}

void putU32(std::string& out, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
}
std::uint32_t getU32(std::string_view b, std::size_t at) {
  std::uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= static_cast<std::uint32_t>(static_cast<unsigned char>(b[at + i])) << (8 * i);
  return v;
}

[[noreturn]] void fail(std::string_view what, const std::string& why) {
  throw std::runtime_error("injection model " + std::string(what) + ": " + why);
}

}  // namespace

std::string serializeInjectionModel(const InjectionModel& m) {
  if (m.bucket_bits < kMinBucketBits || m.bucket_bits > kMaxBucketBits ||
      m.weights.size() != (std::size_t{1} << m.bucket_bits))
    throw std::invalid_argument("serializeInjectionModel: weights do not match bucket_bits");
  const bool dense = !m.dense.empty();
  if (dense && (m.dense.size() != kDenseFeatures || m.surprisal_bits < kMinSurprisalBits ||
                m.surprisal_bits > kMaxSurprisalBits || m.surprisal.size() != (std::size_t{1} << m.surprisal_bits)))
    throw std::invalid_argument("serializeInjectionModel: dense weights or surprisal table malformed");
  std::string out(kMagic);
  putU32(out, dense ? kDenseFormatVersion : kFormatVersion);
  putU32(out, kFeatureVersion);
  putU32(out, m.bucket_bits);
  putU32(out, std::bit_cast<std::uint32_t>(m.bias));
  putU32(out, std::bit_cast<std::uint32_t>(m.scale));
  putU32(out, std::bit_cast<std::uint32_t>(m.threshold));
  std::uint32_t count = 0;
  for (auto w : m.weights) count += w != 0;
  putU32(out, count);
  std::size_t prev = 0;
  bool first = true;
  for (std::size_t i = 0; i < m.weights.size(); ++i) {
    if (m.weights[i] == 0) continue;
    std::size_t gap = first ? i : i - prev;
    first = false;
    prev = i;
    do {
      unsigned char byte = gap & 0x7F;
      gap >>= 7;
      if (gap) byte |= 0x80;
      out.push_back(static_cast<char>(byte));
    } while (gap);
    out.push_back(static_cast<char>(m.weights[i]));
  }
  if (dense) {
    putU32(out, static_cast<std::uint32_t>(m.dense.size()));
    for (float w : m.dense) putU32(out, std::bit_cast<std::uint32_t>(w));
    putU32(out, m.surprisal_bits);
    out.append(reinterpret_cast<const char*>(m.surprisal.data()), m.surprisal.size());
  }
  putU32(out, fnv1a32(out));
  return out;
}

InjectionModel parseInjectionModel(std::string_view b, std::string_view what) {
  if (b.size() < kHeaderBytes + 4)
    fail(what, "truncated: " + std::to_string(b.size()) + " bytes, a model file has at least " +
                   std::to_string(kHeaderBytes + 4));
  if (b.substr(0, kMagic.size()) != kMagic) fail(what, "not a Sluice injection model (bad magic bytes)");
  const std::uint32_t format = getU32(b, 8);
  if (format != kFormatVersion && format != kDenseFormatVersion)
    fail(what, "format version " + std::to_string(format) + ", this build reads versions " +
                   std::to_string(kFormatVersion) + " and " + std::to_string(kDenseFormatVersion));
  const std::size_t body = b.size() - 4;
  if (getU32(b, body) != fnv1a32(b.substr(0, body)))
    fail(what, "checksum mismatch: the file is corrupt or truncated (" + std::to_string(b.size()) + " bytes)");
  if (auto v = getU32(b, 12); v != kFeatureVersion)
    fail(what, "trained for feature version " + std::to_string(v) + ", this build computes version " +
                   std::to_string(kFeatureVersion) + ": retrain it with sluice_train_screen");
  InjectionModel m;
  m.bucket_bits = getU32(b, 16);
  if (m.bucket_bits < kMinBucketBits || m.bucket_bits > kMaxBucketBits)
    fail(what, "bucket bits " + std::to_string(m.bucket_bits) + " outside " + std::to_string(kMinBucketBits) + ".." +
                   std::to_string(kMaxBucketBits));
  m.bias = std::bit_cast<float>(getU32(b, 20));
  m.scale = std::bit_cast<float>(getU32(b, 24));
  m.threshold = std::bit_cast<float>(getU32(b, 28));
  if (!std::isfinite(m.bias) || !std::isfinite(m.scale) || !(m.threshold >= 0.0f && m.threshold <= 1.0f))
    fail(what, "bias, scale or threshold out of range");
  const std::uint32_t count = getU32(b, 32);
  const std::size_t buckets = std::size_t{1} << m.bucket_bits;
  if (count > buckets) fail(what, std::to_string(count) + " weights for " + std::to_string(buckets) + " buckets");
  m.weights.assign(buckets, 0);
  std::size_t at = kHeaderBytes;
  std::size_t index = 0;
  for (std::uint32_t k = 0; k < count; ++k) {
    std::size_t gap = 0;
    for (int shift = 0;; shift += 7) {
      if (at >= body || shift > 28)
        fail(what, "weight " + std::to_string(k) + " of " + std::to_string(count) + " is cut short");
      const auto byte = static_cast<unsigned char>(b[at++]);
      gap |= static_cast<std::size_t>(byte & 0x7F) << shift;
      if (!(byte & 0x80)) break;
    }
    index = k == 0 ? gap : index + gap;
    if ((k > 0 && gap == 0) || index >= buckets)
      fail(what, "weight " + std::to_string(k) + " has a bad bucket index " + std::to_string(index));
    if (at >= body) fail(what, "weight " + std::to_string(k) + " of " + std::to_string(count) + " is cut short");
    m.weights[index] = static_cast<std::int8_t>(b[at++]);
  }
  if (format == kDenseFormatVersion) {
    if (body - at < 4 || getU32(b, at) != kDenseFeatures)
      fail(what, "dense section: expected " + std::to_string(kDenseFeatures) + " dense weights");
    at += 4;
    if (body - at < 4 * (kDenseFeatures + 1)) fail(what, "dense section is cut short");
    for (std::uint32_t k = 0; k < kDenseFeatures; ++k, at += 4) {
      m.dense.push_back(std::bit_cast<float>(getU32(b, at)));
      if (!std::isfinite(m.dense.back())) fail(what, "dense weight " + std::to_string(k) + " is not finite");
    }
    m.surprisal_bits = getU32(b, at);
    at += 4;
    if (m.surprisal_bits < kMinSurprisalBits || m.surprisal_bits > kMaxSurprisalBits)
      fail(what, "surprisal bits " + std::to_string(m.surprisal_bits) + " outside " +
                     std::to_string(kMinSurprisalBits) + ".." + std::to_string(kMaxSurprisalBits));
    const std::size_t entries = std::size_t{1} << m.surprisal_bits;
    if (body - at < entries) fail(what, "surprisal table is cut short");
    m.surprisal.assign(reinterpret_cast<const std::uint8_t*>(b.data() + at),
                       reinterpret_cast<const std::uint8_t*>(b.data() + at + entries));
    at += entries;
  }
  if (at != body) fail(what, std::to_string(body - at) + " unexpected bytes after the weights");
  return m;
}

InjectionDetector::InjectionDetector(InjectionModel model) {
  if (model.weights.size() != (std::size_t{1} << model.bucket_bits))
    throw std::invalid_argument("InjectionDetector: weights do not match bucket_bits");
  if (!model.dense.empty() &&
      (model.dense.size() != kDenseFeatures || model.surprisal.size() != (std::size_t{1} << model.surprisal_bits)))
    throw std::invalid_argument("InjectionDetector: dense weights or surprisal table malformed");
  shift_ = 64 - model.bucket_bits;
  if (!model.dense.empty()) surprisalShift_ = 64 - model.surprisal_bits;
  model_ = std::make_shared<const InjectionModel>(std::move(model));
}

InjectionDetector InjectionDetector::load(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(path, std::string("cannot open: ") + std::strerror(errno));
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) fail(path, "read error");
  return InjectionDetector(parseInjectionModel(ss.str(), path));
}

double InjectionDetector::score(std::string_view text) const {
  const std::int8_t* w = model_->weights.data();
  const unsigned shift = shift_;
  WindowedSum<std::int64_t> sum;
  if (model_->dense.empty() || text.size() > kSurprisalMaxBytes) {
    forEachFeatureHash(text, [&](std::uint64_t h) { sum.add(w[h >> shift]); });
    const double z = model_->bias + static_cast<double>(model_->scale) * sum.result();
    return 1.0 / (1.0 + std::exp(-z));
  }
  const std::uint8_t* table = model_->surprisal.data();
  const unsigned tableShift = surprisalShift_;
  SurprisalStats stats;
  forEachFeatureHash(text, [&](std::uint64_t h, Lane lane, std::uint32_t trigram) {
    sum.add(w[h >> shift]);
    if (lane == kLane3 && SurprisalStats::counts(trigram)) stats.add(table[h >> tableShift]);
  });
  float f[kDenseFeatures];
  stats.features(f);
  double z = model_->bias + static_cast<double>(model_->scale) * sum.result();
  for (std::uint32_t k = 0; k < kDenseFeatures; ++k) z += static_cast<double>(model_->dense[k]) * f[k];
  return 1.0 / (1.0 + std::exp(-z));
}

Explanation InjectionDetector::explain(std::string_view text, std::size_t top) const {
  const std::int8_t* w = model_->weights.data();
  std::map<std::pair<std::string, int>, std::pair<int, std::int64_t>> byFeature;  // (text, lane) -> (count, sum)
  std::uint32_t n = 0;
  SurprisalStats stats;
  const bool dense = !model_->dense.empty() && text.size() <= kSurprisalMaxBytes;
  forEachFeatureHash(text, [&](std::uint64_t h, Lane lane, std::string_view feature) {
    const std::int8_t wi = w[h >> shift_];
    ++n;
    if (dense && lane == kLane3 && feature.size() == 3) {
      const std::uint32_t trigram = (std::uint32_t{static_cast<unsigned char>(feature[0])} << 16) |
                                    (std::uint32_t{static_cast<unsigned char>(feature[1])} << 8) |
                                    static_cast<unsigned char>(feature[2]);
      if (SurprisalStats::counts(trigram)) stats.add(model_->surprisal[h >> surprisalShift_]);
    }
    auto& slot = byFeature[{std::string(feature), static_cast<int>(lane)}];
    ++slot.first;
    slot.second += wi;
  });
  Explanation e;
  e.bias = model_->bias;
  // Contributions are shown on the whole text's scale; the score is score()'s (a long text is
  // scored by its most suspicious window, where the same features weigh more).
  const double step = n > 0 ? static_cast<double>(model_->scale) / std::sqrt(static_cast<double>(n)) : 0.0;
  e.score = score(text);
  static constexpr const char* kKinds[] = {"char3", "char4", "char5", "word"};
  for (const auto& [key, v] : byFeature) {
    if (v.second == 0) continue;
    e.top.push_back({key.first, kKinds[key.second], v.first, step * static_cast<double>(v.second)});
  }
  std::sort(e.top.begin(), e.top.end(), [](const auto& a, const auto& b) {
    if (std::fabs(a.logit) != std::fabs(b.logit)) return std::fabs(a.logit) > std::fabs(b.logit);
    return a.feature < b.feature;
  });
  if (dense) {
    static constexpr const char* kDenseNames[kDenseFeatures] = {"surprisal (mean)", "surprisal (peak)",
                                                                "surprisal (rare trigrams)"};
    float f[kDenseFeatures];
    stats.features(f);
    for (std::uint32_t k = 0; k < kDenseFeatures; ++k) {
      const double c = static_cast<double>(model_->dense[k]) * f[k];
      if (c != 0) e.top.push_back({kDenseNames[k], "dense", 1, c});
    }
    std::sort(e.top.begin(), e.top.end(), [](const auto& a, const auto& b) {
      if (std::fabs(a.logit) != std::fabs(b.logit)) return std::fabs(a.logit) > std::fabs(b.logit);
      return a.feature < b.feature;
    });
  }
  if (e.top.size() > top) e.top.resize(top);
  return e;
}

}  // namespace sluice::guard
