// Snapshot: everything a request reads of the running gateway's configuration, built at once
// (ControlPlane::makeSnapshot) and replaced whole; a request keeps the one in force when it
// arrived to its end. Its `stages` are the request path, in order (gateway/Chain.cpp).
#pragma once
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "config/Config.hpp"
#include "gateway/Stage.hpp"
#include "pipeline/KeyTable.hpp"
#include "pipeline/Pricing.hpp"
#include "pipeline/Safety.hpp"
#include "pipeline/SecretScrubber.hpp"
#include "routing/Router.hpp"

namespace sluice::gateway {

struct Snapshot {
  std::shared_ptr<const config::Config> cfg;  // the config file's channels plus the store's
  std::unique_ptr<routing::Router> router;
  std::shared_ptr<const pipeline::KeyTable> keys;  // virtual keys
  std::shared_ptr<const pipeline::PriceTable> prices;
  std::shared_ptr<const pipeline::Safety> safety;  // redaction, screening, guardrail, cache settings
  // Masks every upstream key of `cfg` (config-file and store channels) in what upstreams say.
  pipeline::SecretScrubber scrubber;
  // Switches set at run time through PATCH /admin/api/settings (unset: the config file's).
  struct Switches {
    std::optional<bool> cache;
    std::optional<bool> redaction;
    std::optional<config::ScreenAction> screening;
    std::optional<bool> guardrail;
  } switches;
  // The request path: built last, from the rest of the snapshot (buildStages).
  std::vector<std::unique_ptr<const StageConfig>> stages;

  bool cacheOn() const { return switches.cache.value_or(cfg->cache.enabled); }
  bool redactionOn() const { return switches.redaction.value_or(cfg->redaction.enabled) && safety->rules(); }
  config::ScreenAction screeningDefault() const { return switches.screening.value_or(safety->screenDefault()); }
  bool guardrailOn() const { return switches.guardrail.value_or(true) && safety->webhook(); }
};

// Reads the switches from the store's gateway_settings rows ("cache.enabled" -> "true", ...).
Snapshot::Switches switchesFrom(const std::map<std::string, std::string>& rows);

}  // namespace sluice::gateway
