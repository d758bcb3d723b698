// sluice_train_screen: trains the prompt-injection detector (src/guard) on labelled JSONL and
// writes the model file that the build embeds in `sluice`; or evaluates a model file on the
// held-out split.
//
//   build/sluice_train_screen                        # train on the 80% split -> models/injection.model
//   build/sluice_train_screen --eval models/injection.model --json out.json
//   build/sluice_train_screen --loso                 # leave-one-source-out table (Markdown), no model written
//
// Only texts outside the held-out split (isHeldOut, ~20%, near-duplicates grouped) are trained
// on; after training, the written file is loaded back and scored on the held-out texts by the
// runtime code, and those figures are printed (and written as JSON with --json).
#include <CLI/CLI.hpp>
#include <boost/json.hpp>

#include <algorithm>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>

#include "guard/InjectionDetector.hpp"
#include "guard/InjectionTraining.hpp"

#ifndef SLUICE_SOURCE_DIR
#define SLUICE_SOURCE_DIR "."
#endif

namespace {

using namespace sluice::guard;

std::string fixed(double v, int digits = 3) {
  std::ostringstream ss;
  ss.setf(std::ios::fixed);
  ss.precision(digits);
  ss << v;
  return ss.str();
}

double fpr(const BinaryMetrics& m) {
  return m.fp + m.tn ? double(m.fp) / double(m.fp + m.tn) : 0.0;
}

int runLoso(const std::vector<LabelledText>& rows, const TrainOptions& o, const std::string& jsonOut,
            const std::string& only) {
  std::cerr << "leave-one-source-out over " << rows.size() << " texts\n";
  const auto results = leaveOneSourceOut(rows, o, &std::cerr, only);
  std::cout << "| source | texts (attack / benign) | threshold | precision | recall | F1 | FPR |\n"
            << "| --- | --- | --- | --- | --- | --- | --- |\n";
  double f1Sum = 0, f1Min = 1;
  std::size_t f1N = 0;
  std::string f1MinSource;
  BinaryMetrics everyday, benignOnly;
  boost::json::object json;
  for (const auto& r : results) {
    const auto& m = r.metrics;
    const bool hasAttacks = m.tp + m.fn > 0;
    std::cout << "| " << r.source << " | " << (m.tp + m.fn) << " / " << (m.fp + m.tn) << " | " << fixed(r.threshold)
              << " | " << (hasAttacks ? fixed(m.precision()) : "-") << " | " << (hasAttacks ? fixed(m.recall()) : "-")
              << " | " << (hasAttacks ? fixed(m.f1()) : "- (all benign)") << " | "
              << (m.fp + m.tn ? fixed(fpr(m)) : "-") << " |\n";
    if (hasAttacks) {
      f1Sum += m.f1();
      ++f1N;
      if (m.f1() < f1Min) f1Min = m.f1(), f1MinSource = r.source;
    }
    const auto& cal = o.calibration_sources;
    if (std::find(cal.begin(), cal.end(), r.source) != cal.end()) {
      everyday.fp += m.fp;
      everyday.tn += m.tn;
    }
    if (!hasAttacks) {
      benignOnly.fp += m.fp;
      benignOnly.tn += m.tn;
    }
    json[r.source] = {{"threshold", r.threshold},
                      {"tp", m.tp},
                      {"fp", m.fp},
                      {"tn", m.tn},
                      {"fn", m.fn},
                      {"precision", m.precision()},
                      {"recall", m.recall()},
                      {"f1", m.f1()},
                      {"fpr", fpr(m)},
                      {"trained_on", r.trained_on}};
  }
  std::cout << "\nMean F1 over the " << f1N << " sources with attacks: " << fixed(f1N ? f1Sum / double(f1N) : 0)
            << "; lowest " << fixed(f1Min) << " (" << f1MinSource << ").\n"
            << "FPR on everyday requests (the calibration sources, each scored by a model that never saw it): "
            << fixed(fpr(everyday)) << " (" << everyday.fp << " of " << (everyday.fp + everyday.tn)
            << "); on all all-benign sources: " << fixed(fpr(benignOnly)) << " (" << benignOnly.fp << " of "
            << (benignOnly.fp + benignOnly.tn) << ").\n";
  if (!jsonOut.empty()) {
    std::ofstream f(jsonOut);
    f << boost::json::serialize(json) << "\n";
    if (!f.flush()) throw std::runtime_error(jsonOut + ": cannot write");
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace sluice::guard;
  CLI::App app{"Train (or evaluate) the Sluice prompt-injection detector"};
  std::string data = std::string(SLUICE_SOURCE_DIR) + "/models/prompt-injection/train.jsonl";
  std::string out = std::string(SLUICE_SOURCE_DIR) + "/models/injection.model";
  std::string evalModel, jsonOut, heldOutOut;
  bool all = false, loso = false;
  std::string losoSource;
  TrainOptions o;
  app.add_option("--data", data, "labelled JSONL ({text, label, source})")->capture_default_str();
  app.add_option("--out", out, "model file to write")->capture_default_str();
  app.add_option("--eval", evalModel, "evaluate this model file on the held-out split instead of training");
  app.add_option("--json", jsonOut, "also write the held-out figures as JSON to this file");
  app.add_option("--write-held-out", heldOutOut, "write the held-out texts (JSONL) to this file, for `sluice screen`");
  app.add_flag("--loso", loso,
               "leave-one-source-out: per source, train on all the others (and nothing synthesized from it), "
               "print precision / recall / F1 / FPR on it as a Markdown table; writes no model");
  app.add_option("--loso-source", losoSource, "--loso for this one source only");
  app.add_option("--fpr-budget", o.fpr_budget,
                 "threshold = the lowest at which at most this fraction of everyday requests (out-of-fold) is "
                 "flagged; 0 = the threshold with the best out-of-fold F1")
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
  app.add_option("--benign-windows", o.benign_windows,
                 "also train on up to N windows of each long benign text (0: off)")
      ->capture_default_str();
  app.add_option("--surprisal-bits", o.surprisal_bits,
                 "dense character-surprisal features over a 2^N-entry trigram table, with stacking (0: none)")
      ->capture_default_str();
  bool noStack = false;
  app.add_flag("--no-stack", noStack,
               "folds by near-duplicate cluster and no stage 2 (default: folds of whole sources; stage 2 over the "
               "n-gram logit and the surprisal features, and the threshold, from their out-of-fold scores)");
  bool noBalance = false;
  app.add_flag("--no-balance", noBalance,
               "weigh every text alike (default: by the square root of mean group size / its (source, label) "
               "group's size)");
  app.add_flag("--all", all, "train on every text, the held-out split too (no honest figures then)");
  app.add_option("--bits", o.bucket_bits, "log2 of the hashed buckets")
      ->check(CLI::Range(8, 24))
      ->capture_default_str();
  app.add_option("--epochs", o.epochs, "passes over the data")->capture_default_str();
  app.add_option("--lr", o.learning_rate, "AdaGrad learning rate")->capture_default_str();
  app.add_option("--l2", o.l2, "L2 regularisation")->capture_default_str();
  app.add_option("--seed", o.seed, "sample order seed")->capture_default_str();
  app.add_option("--folds", o.folds, "folds for tuning the threshold (1: keep 0.5)")->capture_default_str();
  app.add_option("--clip-quantile", o.clip_quantile, "int8 range = this quantile of |w|")->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  if (noBalance) o.balance_sources = false;
  if (noStack) o.stack = false;

  try {
    const auto rows = readLabelledJsonl(data);
    if (loso || !losoSource.empty()) return runLoso(rows, o, jsonOut, losoSource);
    std::vector<LabelledText> train, heldOut;
    for (const auto& r : rows) (isHeldOut(r.text) ? heldOut : train).push_back(r);
    if (all) train = rows;
    std::cerr << data << ": " << rows.size() << " texts, " << train.size() << " to train on, " << heldOut.size()
              << " held out\n";

    if (!heldOutOut.empty()) {
      std::ofstream f(heldOutOut, std::ios::binary | std::ios::trunc);
      for (const auto& r : heldOut)
        f << boost::json::serialize(boost::json::object{{"text", r.text}, {"label", r.label}, {"source", r.source}})
          << "\n";
      if (!f.flush()) throw std::runtime_error(heldOutOut + ": cannot write");
    }

    std::optional<InjectionDetector> detector;
    if (evalModel.empty()) {
      const InjectionModel model = trainInjectionModel(train, o, &std::cerr);
      const std::string bytes = serializeInjectionModel(model);
      {
        std::ofstream f(out, std::ios::binary | std::ios::trunc);
        f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
        if (!f.flush()) throw std::runtime_error(out + ": cannot write");
      }
      std::cerr << "wrote " << out << " (" << bytes.size() << " bytes, threshold " << model.threshold << ")\n";
      detector = InjectionDetector::load(out);
    } else {
      detector = InjectionDetector::load(evalModel);
    }

    const Evaluation e = evaluate(*detector, heldOut, detector->threshold());
    std::cerr << "held-out (" << heldOut.size() << " texts" << (all ? ", TRAINED ON" : "") << "): precision "
              << e.total.precision() << " recall " << e.total.recall() << " f1 " << e.total.f1() << " (tp "
              << e.total.tp << " fp " << e.total.fp << " tn " << e.total.tn << " fn " << e.total.fn << ")\n";
    for (const auto& [source, m] : e.by_source) {
      const auto n = m.tp + m.fp + m.tn + m.fn;
      std::cerr << "  " << source << ": " << (m.fp + m.fn) << " wrong of " << n << "\n";
    }
    const std::string json = evaluationJson(e);
    std::cout << json << "\n";
    if (!jsonOut.empty()) {
      std::ofstream f(jsonOut);
      f << json << "\n";
      if (!f.flush()) throw std::runtime_error(jsonOut + ": cannot write");
    }
  } catch (const std::exception& ex) {
    std::cerr << "sluice_train_screen: " << ex.what() << "\n";
    return 1;
  }
  return 0;
}
