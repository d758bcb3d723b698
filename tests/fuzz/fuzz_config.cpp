// Config loader (config/Config.hpp parseConfig) on arbitrary YAML text. A ConfigError (or any
// std::exception) is the loader doing its job; a crash, a hang or a sanitizer report is a
// finding. A config that loads is also described (secrets masked), as `sluice check` does.
#include <exception>
#include <string>

#include "FuzzUtil.hpp"
#include "config/Config.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    auto cfg = sluice::config::parseConfig(text, "fuzz.yaml");
    std::string described = sluice::config::describeConfig(*cfg);
    for (const auto& ch : cfg->channels) {
      if (ch.name.empty()) sluice::fuzz::fail("a channel without a name was accepted");
      for (const auto& k : ch.keys) {
        // A key whose text also stands in a value that is not secret (base_url, a model, the
        // listen address...) is shown there legitimately.
        auto inPlainValue = [&](const std::string& v) { return v.find(k) != std::string::npos; };
        bool plain = inPlainValue(ch.base_url) || inPlainValue(ch.name) || inPlainValue(cfg->server.listen) ||
                     inPlainValue(cfg->store.url) || inPlainValue(cfg->redis.url);
        for (const auto& m : ch.models) plain = plain || inPlainValue(m);
        for (const auto& [from, to] : ch.model_map) plain = plain || inPlainValue(from) || inPlainValue(to);
        for (const auto& [name, v] : ch.headers) plain = plain || inPlainValue(name);
        for (const auto& c2 : cfg->channels) plain = plain || inPlainValue(c2.name) || inPlainValue(c2.base_url);
        if (k.size() >= 8 && !plain && described.find(k) != std::string::npos)
          sluice::fuzz::fail("describeConfig shows a channel key", described);
      }
    }
  } catch (const sluice::config::ConfigError& e) {
    if (std::string_view(e.what()).empty()) sluice::fuzz::fail("ConfigError without a message");
  } catch (const std::exception&) {
  }
  return 0;
}
