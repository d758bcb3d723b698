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
  if (o.doc_channel || o.doc_model) {
    // The document sources scored on the document channel (their own threshold: "plain"; their
    // own stage 2 and threshold: "stacked"); the sources of user turns as above.
    std::cout << "\nDocument channel (document sources: their benign documents' budget; user turns as above):\n\n"
              << "| source | channel | texts (attack / benign) | plain threshold | plain F1 | plain FPR | stacked "
                 "threshold | stacked precision | stacked recall | stacked F1 | stacked FPR | split F1 | split FPR | "
                 "doc model threshold | doc model F1 | doc model FPR |\n"
              << "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n";
    struct Sum {
      double f1 = 0, min = 1;
      std::size_t n = 0, good = 0;
      BinaryMetrics docs, everyday;
    } base, plain, stacked, split, docModel;
    auto account = [&o](Sum& s, const SourceResult& r, const BinaryMetrics& m) {
      if (m.tp + m.fn > 0) {
        s.f1 += m.f1();
        ++s.n;
        s.min = std::min(s.min, m.f1());
        s.good += m.f1() >= 0.75;
      }
      if (r.document) s.docs.fp += m.fp, s.docs.tn += m.tn;
      const auto& cal = o.calibration_sources;
      if (std::find(cal.begin(), cal.end(), r.source) != cal.end()) s.everyday.fp += m.fp, s.everyday.tn += m.tn;
    };
    for (const auto& r : results) {
      account(base, r, r.metrics);
      account(plain, r, r.doc_plain);
      account(stacked, r, r.doc_stacked);
      account(split, r, r.split);
      account(docModel, r, r.doc_model);
      const auto& p = r.doc_plain;
      const auto& m = r.doc_stacked;
      const bool hasAttacks = m.tp + m.fn > 0;
      std::cout << "| " << r.source << " | " << (r.document ? "document" : "user") << " | " << (m.tp + m.fn) << " / "
                << (m.fp + m.tn) << " | " << (r.document ? fixed(r.doc_plain_threshold) : "-") << " | "
                << (hasAttacks ? fixed(p.f1()) : "-") << " | " << (p.fp + p.tn ? fixed(fpr(p)) : "-") << " | "
                << (r.document ? fixed(r.doc_threshold) : "-") << " | " << (hasAttacks ? fixed(m.precision()) : "-")
                << " | " << (hasAttacks ? fixed(m.recall()) : "-") << " | " << (hasAttacks ? fixed(m.f1()) : "-")
                << " | " << (m.fp + m.tn ? fixed(fpr(m)) : "-") << " | " << (hasAttacks ? fixed(r.split.f1()) : "-")
                << " | " << (r.split.fp + r.split.tn ? fixed(fpr(r.split)) : "-") << " | "
                << (r.document && o.doc_model ? fixed(r.doc_model_threshold) : "-") << " | "
                << (hasAttacks ? fixed(r.doc_model.f1()) : "-") << " | "
                << (r.doc_model.fp + r.doc_model.tn ? fixed(fpr(r.doc_model)) : "-") << " |\n";
      json[r.source].as_object()["document"] = r.document;
      json[r.source].as_object()["doc_plain"] = {
          {"threshold", r.doc_plain_threshold}, {"tp", p.tp}, {"fp", p.fp}, {"tn", p.tn}, {"fn", p.fn}, {"f1", p.f1()}};
      json[r.source].as_object()["doc_stacked"] = {
          {"threshold", r.doc_threshold}, {"tp", m.tp}, {"fp", m.fp}, {"tn", m.tn}, {"fn", m.fn}, {"f1", m.f1()}};
      const auto& sp = r.split;
      json[r.source].as_object()["doc_model"] = {{"threshold", r.doc_model_threshold},
                                                 {"tp", r.doc_model.tp},
                                                 {"fp", r.doc_model.fp},
                                                 {"tn", r.doc_model.tn},
                                                 {"fn", r.doc_model.fn},
                                                 {"f1", r.doc_model.f1()}};
      json[r.source].as_object()["split"] = {
          {"tp", sp.tp}, {"fp", sp.fp}, {"tn", sp.tn}, {"fn", sp.fn}, {"f1", sp.f1()}};
    }
    for (const auto& [name, s] : {std::pair<const char*, const Sum&>{"one threshold (as above)", base},
                                  {"document channel, plain", plain},
                                  {"document channel, stacked", stacked},
                                  {"each channel its own stage 2 (split)", split},
                                  {"documents scored by a model of their own (--doc-model)", docModel}})
      std::cout << "\n"
                << name << ": mean F1 " << fixed(s.n ? s.f1 / double(s.n) : 0) << ", lowest " << fixed(s.min) << ", "
                << s.good << " of " << s.n << " sources >= 0.75, benign documents FPR " << fixed(fpr(s.docs)) << " ("
                << s.docs.fp << " of " << (s.docs.fp + s.docs.tn) << "), everyday FPR " << fixed(fpr(s.everyday))
                << " (" << s.everyday.fp << " of " << (s.everyday.fp + s.everyday.tn) << ")";
    std::cout << "\n";
  }
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
  app.add_option("--loso-source", losoSource, "--loso for this source only (or these, comma-separated)");
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
  app.add_flag("--doc-channel", o.doc_channel,
               "with --loso: also score the document sources (e-mails, pages, tool results, passages, code) on a "
               "document channel: a threshold of their own, and a second stage of their own (experiment; the "
               "model written does not change)");
  app.add_flag("--doc-model", o.doc_model,
               "with --loso: also score the document sources with a model of their own (trained on the document "
               "sources and every attack; threshold on benign documents)");
  app.add_option("--doc-fpr-budget", o.doc_fpr_budget,
                 "the document channel's threshold: this fraction of benign documents' out-of-fold scores (0: "
                 "--fpr-budget)")
      ->capture_default_str();
  app.add_option("--doc-benign-windows", o.doc_benign_windows, "--benign-windows for the --doc-model only")
      ->capture_default_str();
  bool noDocAttacks = false;
  app.add_flag("--doc-model-no-user-attacks", noDocAttacks, "--doc-model trains on the document sources only");
  app.add_option("--doc-sources", o.document_sources, "the document sources (comma-separated)")->delimiter(',');
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
  if (noDocAttacks) o.doc_model_attacks = false;

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
