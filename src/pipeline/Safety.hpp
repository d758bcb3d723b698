// Safety: the compiled form of the config's redaction, screening, guardrail and cache sections,
// built once per config (not per store refresh) and shared read-only by the workers through
// the Snapshot. The per-request work lives in gateway/Proxy.cpp; this holds what it needs.
// Thread-safety: immutable after build() except the cipher cache, which is internally locked.
#pragma once
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <vector>

#include "config/Config.hpp"
#include "guard/InjectionDetector.hpp"
#include "guard/Webhook.hpp"
#include "redact/Rules.hpp"
#include "redact/TokenCipher.hpp"

namespace re2 {
class RE2;
}

namespace sluice::pipeline {

struct ScreenResult {
  double score = 0;
  bool flagged = false;
  std::string deny;  // the deny-list pattern that hit, if any
};

class Safety {
 public:
  // Throws std::runtime_error naming what is wrong (an unreadable screening model, a rule that
  // does not compile, a bad webhook URL).
  static std::shared_ptr<const Safety> build(const config::Config& cfg);
  ~Safety();

  // Redaction: null when off.
  const std::shared_ptr<const redact::RuleSet>& rules() const { return rules_; }
  bool canEncrypt() const { return !key_.empty(); }
  // The token cipher of a scope ("vk:7", "master"): tokens are unlinkable across scopes. Null
  // when no key is configured (encrypt rules then mask).
  std::shared_ptr<const redact::TokenCipher> cipherFor(const std::string& scope) const;

  // Screening.
  config::ScreenAction screenDefault() const { return screen_default_; }
  // screening.threshold, else the model's own (which loads the built-in model: see detector()).
  double threshold() const { return threshold_ > 0 ? threshold_ : detector().threshold(); }
  bool scopeUser() const { return scope_user_; }  // screening.scope
  bool scopeTool() const { return scope_tool_; }
  ScreenResult screen(std::string_view text) const;

  // Guardrail: null when no URL is configured.
  const guard::WebhookTarget* webhook() const { return webhook_ ? &*webhook_ : nullptr; }
  bool failOpen() const { return fail_open_; }
  bool reviewResponse() const { return review_response_; }

  const config::CacheConfig& cache() const { return cache_; }

 private:
  Safety() = default;
  std::shared_ptr<const redact::RuleSet> rules_;
  std::string key_;
  mutable std::shared_mutex ciphers_mu_;
  mutable std::map<std::string, std::shared_ptr<const redact::TokenCipher>, std::less<>> ciphers_;

  // The built-in model is parsed on first use, not at start-up: its weights (about 1.5 MB of
  // memory) stay out of an instance that never screens. A model file named in the config is
  // loaded by build(), so that a bad file fails the config at once.
  const guard::InjectionDetector& detector() const;

  config::ScreenAction screen_default_ = config::ScreenAction::Off;
  mutable std::once_flag detector_once_;
  mutable std::optional<guard::InjectionDetector> detector_;
  double threshold_ = 0;  // 0: the model's
  bool scope_user_ = true;
  bool scope_tool_ = true;
  std::vector<std::string> deny_patterns_;
  std::vector<std::unique_ptr<re2::RE2>> deny_;

  std::optional<guard::WebhookTarget> webhook_;
  bool fail_open_ = true;
  bool review_response_ = false;

  config::CacheConfig cache_;
};

// The redaction rule specs a config asks for: the built-in pack with its action overrides
// (minus rules set "off"), then the config's own rules.
std::vector<redact::RuleSpec> ruleSpecsOf(const config::RedactionConfig& rc);

}  // namespace sluice::pipeline
