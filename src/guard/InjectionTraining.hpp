// Training and evaluation of the prompt-injection detector, used by `sluice_train_screen`
// (tools/train_screen.cpp), by the unit tests and by bench/screen.sh. Features come from
// InjectionFeatures.hpp, the same code the runtime scores with.
//
// The held-out split is deterministic and groups near-duplicates: a text's split key is the
// MinHash (minimum hash) of its word 4-grams, so two texts sharing most 4-grams (a templated
// jailbreak filled in with another goal) usually share the key and land on the same side. Texts
// whose key falls in one fifth of the hash space are held out; the committed model never sees them.
#pragma once
#include <cstdint>
#include <iosfwd>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "guard/InjectionDetector.hpp"
#include "guard/InjectionFeatures.hpp"

namespace sluice::guard {

struct LabelledText {
  std::string text;
  int label = 0;  // 1 = injection / jailbreak
  std::string source;
  std::string from;  // a synthesized text: the source its payload came from (LOSO keeps it out too)
};

// Reads JSONL lines {"text": str, "label": 0|1, "source": str (optional)}; throws
// std::runtime_error naming the file and line of the first bad one.
std::vector<LabelledText> readLabelledJsonl(const std::string& path);

std::uint64_t splitKey(std::string_view text);
bool isHeldOut(std::string_view text);  // ~20% of split keys

struct TrainOptions {
  std::uint32_t bucket_bits = 18;
  int epochs = 10;
  double learning_rate = 0.1;  // AdaGrad step
  double l2 = 1e-5;            // per update, on the features present
  std::uint64_t seed = 42;     // sample order
  int folds = 5;               // for tuning the threshold on out-of-fold scores
  double clip_quantile = 1.0;  // int8 step = this quantile of |w| / 127 (1.0: the largest weight)
  // The threshold: 0 = the best F1 on out-of-fold scores; > 0 = a false-positive budget, the
  // lowest threshold at which at most this fraction of the out-of-fold scores of benign texts of
  // `calibration_sources` (everyday requests) is flagged. With stack the folds are whole sources,
  // so this is a budget for everyday requests of sources the model never saw.
  double fpr_budget = 0.025;
  // Each row's loss is weighted by sqrt(mean group size / its (source, label) group's size), so a
  // 150-row source of attacks is not drowned by 3,000 tool outputs (the square root keeps a
  // 7-row source from weighing like a thousand).
  bool balance_sources = true;
  // > 0: a benign text longer than one scoring window is also trained on as up to this many of
  // its windows (first, last and evenly between), each a benign row of its own, so the model
  // learns that any stretch of a clean document is clean (the runtime scores the worst window).
  int benign_windows = 0;
  // Folds of whole sources, and a stage 2 (n-gram logit, dense features) fitted on their
  // out-of-fold scores; the threshold from the same scores. Off: folds by split key (near-duplicate
  // clusters), no stage 2 (the models before 2026-12-05).
  bool stack = true;
  // With stack: dense surprisal features (InjectionFeatures.hpp) over a character trigram table of
  // 2^surprisal_bits entries built from the benign texts trained on; 0 = none (a format-1 model).
  std::uint32_t surprisal_bits = 14;
  std::vector<std::string> calibration_sources = defaultCalibrationSources();
  static std::vector<std::string> defaultCalibrationSources();
  // Experiment (issue 21, off by default; --doc-channel): texts of `document_sources` are carriers
  // (e-mails, pages, tool results, retrieved passages, code), which the runtime screens as tool
  // results. With stack, leave-one-source-out also reports them scored on a document channel: a
  // threshold at `fpr_budget` of the out-of-fold scores of benign documents ("plain"), and a
  // second stage of their own over the shape of the n-gram logit along the text (worst window,
  // whole text, worst block, median window, dense features) with its own threshold ("stacked").
  bool doc_channel = false;
  double doc_fpr_budget = 0;  // the document channel's budget on benign documents (0: fpr_budget)
  // Experiment (--doc-model): documents get an n-gram model of their own (stage 1 and 2, threshold
  // at `fpr_budget` of benign documents' out-of-fold scores), trained on the document sources'
  // texts and, with doc_model_attacks, every attack of the other sources too.
  bool doc_model = false;
  bool doc_model_attacks = true;
  int doc_benign_windows = 0;       // benign_windows for the document model
  bool stage2_line_search = false;  // backtracking Newton steps in stage 2 (the doc model's)
  std::vector<std::string> document_sources = defaultDocumentSources();
  static std::vector<std::string> defaultDocumentSources();
};

struct BinaryMetrics {
  std::size_t tp = 0, fp = 0, tn = 0, fn = 0;
  void add(int label, bool predicted);
  double precision() const { return tp + fp ? double(tp) / double(tp + fp) : 0.0; }
  double recall() const { return tp + fn ? double(tp) / double(tp + fn) : 0.0; }
  double f1() const {
    const double p = precision(), r = recall();
    return p + r > 0 ? 2 * p * r / (p + r) : 0.0;
  }
};

// Logistic regression on `samples` (all of them), threshold tuned for the best F1 on out-of-fold
// scores (options.folds models trained on the rest), weights quantised to int8. Deterministic.
// Progress goes to `log` when given.
InjectionModel trainInjectionModel(const std::vector<LabelledText>& samples, const TrainOptions& options,
                                   std::ostream* log = nullptr);

// The character trigram surprisal table (-log2 P(c | two characters before), 1/16 bit, 255 for a
// trigram the texts never had) of the texts `rows` of `samples` with label 0. Deterministic.
std::vector<std::uint8_t> buildSurprisalTable(const std::vector<LabelledText>& samples,
                                              const std::vector<std::size_t>& rows, std::uint32_t bits);
// The dense features of `text` under `table` (2^bits entries), as the runtime computes them.
void denseFeaturesOf(std::string_view text, const std::vector<std::uint8_t>& table, std::uint32_t bits,
                     float out[kDenseFeatures]);

// Leave-one-source-out: for each source, a model trained (threshold included, out-of-fold on the
// training part only) on every other source, minus the texts synthesized from that source, and
// scored by the runtime detector on that source's texts. Deterministic.
struct SourceResult {
  std::string source;
  double threshold = 0.5;
  BinaryMetrics metrics;
  std::size_t trained_on = 0;
  // With TrainOptions::doc_channel: whether the source is a document source, and its figures on
  // the document channel (the same as `metrics` for a source of user turns).
  bool document = false;
  double doc_plain_threshold = 0.5, doc_threshold = 0.5;
  BinaryMetrics doc_plain, doc_stacked;
  // Each channel its own stage 2 over the logit's shape (user turns: fitted on user turns, the
  // everyday budget; documents: doc_stacked).
  BinaryMetrics split;
  double doc_model_threshold = 0.5;
  BinaryMetrics doc_model;  // TrainOptions::doc_model (a source of user turns: as `metrics`)
};
// `only` (non-empty): those sources alone (comma-separated).
std::vector<SourceResult> leaveOneSourceOut(const std::vector<LabelledText>& samples, const TrainOptions& options,
                                            std::ostream* log = nullptr, const std::string& only = {});

struct Evaluation {
  double threshold = 0.5;
  BinaryMetrics total;
  std::map<std::string, BinaryMetrics> by_source;
};
// Scores each sample with the runtime detector at `threshold`.
Evaluation evaluate(const InjectionDetector& detector, const std::vector<LabelledText>& samples, double threshold);
// {"threshold", "n", "tp", "fp", "tn", "fn", "precision", "recall", "f1", "by_source": {...}}
std::string evaluationJson(const Evaluation& e);

}  // namespace sluice::guard
