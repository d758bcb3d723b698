// sluice_train_screen: trains the prompt-injection detector (src/guard) on labelled JSONL and
// writes the model file that the build embeds in `sluice`; or evaluates a model file on the
// held-out split.
//
//   build/sluice_train_screen                        # train on the 80% split -> models/injection.model
//   build/sluice_train_screen --eval models/injection.model --json out.json
//
// Only texts outside the held-out split (isHeldOut, ~20%, near-duplicates grouped) are trained
// on; after training, the written file is loaded back and scored on the held-out texts by the
// runtime code, and those figures are printed (and written as JSON with --json).
#include <CLI/CLI.hpp>
#include <boost/json.hpp>

#include <fstream>
#include <iostream>
#include <optional>

#include "guard/InjectionDetector.hpp"
#include "guard/InjectionTraining.hpp"

#ifndef SLUICE_SOURCE_DIR
#define SLUICE_SOURCE_DIR "."
#endif

int main(int argc, char** argv) {
  using namespace sluice::guard;
  CLI::App app{"Train (or evaluate) the Sluice prompt-injection detector"};
  std::string data = std::string(SLUICE_SOURCE_DIR) + "/models/prompt-injection/train.jsonl";
  std::string out = std::string(SLUICE_SOURCE_DIR) + "/models/injection.model";
  std::string evalModel, jsonOut, heldOutOut;
  bool all = false;
  TrainOptions o;
  app.add_option("--data", data, "labelled JSONL ({text, label, source})")->capture_default_str();
  app.add_option("--out", out, "model file to write")->capture_default_str();
  app.add_option("--eval", evalModel, "evaluate this model file on the held-out split instead of training");
  app.add_option("--json", jsonOut, "also write the held-out figures as JSON to this file");
  app.add_option("--write-held-out", heldOutOut, "write the held-out texts (JSONL) to this file, for `sluice screen`");
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

  try {
    const auto rows = readLabelledJsonl(data);
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
