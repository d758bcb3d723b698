#include "pipeline/Safety.hpp"

#include <re2/re2.h>

#include <mutex>
#include <stdexcept>

namespace sluice::pipeline {

std::vector<redact::RuleSpec> ruleSpecsOf(const config::RedactionConfig& rc) {
  std::vector<redact::RuleSpec> specs;
  if (rc.builtin) {
    for (auto spec : redact::builtinRules()) {
      if (auto it = rc.actions.find(spec.name); it != rc.actions.end()) {
        if (it->second == "off") continue;
        if (auto a = redact::parseAction(it->second)) spec.action = *a;
      }
      specs.push_back(std::move(spec));
    }
  }
  for (const auto& r : rc.rules) {
    redact::RuleSpec spec;
    spec.name = r.name;
    spec.pattern = r.pattern;
    spec.action = redact::parseAction(r.action).value_or(redact::Action::Mask);
    spec.fields = r.fields;
    spec.validator = r.validator;
    specs.push_back(std::move(spec));
  }
  return specs;
}

Safety::~Safety() = default;

std::shared_ptr<const Safety> Safety::build(const config::Config& cfg) {
  std::shared_ptr<Safety> s(new Safety());
  // Compiled even when off, so the admin API can switch redaction on at run time.
  {
    try {
      auto specs = ruleSpecsOf(cfg.redaction);
      if (!specs.empty()) s->rules_ = redact::RuleSet::compile(specs);
    } catch (const std::invalid_argument& e) {
      throw std::runtime_error(std::string("redaction: ") + e.what());
    }
    s->key_ = cfg.redaction.key;
    if (!s->key_.empty() && s->key_.size() < 16)
      throw std::runtime_error("redaction.key: needs at least 16 bytes of secret (32 random bytes recommended: "
                               "openssl rand -base64 32)");
  }
  s->screen_default_ = cfg.screening.action;
  // A model file is loaded even when the gateway default is off (a channel or a key can turn
  // screening on); the built-in one on first use.
  if (!cfg.screening.model.empty()) s->detector_ = guard::InjectionDetector::load(cfg.screening.model);
  s->threshold_ = cfg.screening.threshold > 0 ? cfg.screening.threshold : 0;
  s->scope_user_ = cfg.screening.scope_user;
  s->scope_tool_ = cfg.screening.scope_tool;
  for (const auto& p : cfg.screening.deny) {
    auto re = std::make_unique<re2::RE2>(p, re2::RE2::Quiet);
    if (!re->ok()) throw std::runtime_error("screening.deny: not a valid RE2 pattern: " + p);
    s->deny_patterns_.push_back(p);
    s->deny_.push_back(std::move(re));
  }
  if (!cfg.guardrail.url.empty()) {
    std::vector<std::pair<std::string, std::string>> headers(cfg.guardrail.headers.begin(), cfg.guardrail.headers.end());
    try {
      s->webhook_ = guard::makeWebhookTarget(cfg.guardrail.url, headers, cfg.guardrail.timeout);
    } catch (const std::invalid_argument& e) {
      throw std::runtime_error(e.what());
    }
    s->fail_open_ = cfg.guardrail.fail_open;
    s->review_response_ = cfg.guardrail.review_response;
  }
  s->cache_ = cfg.cache;
  return s;
}

std::shared_ptr<const redact::TokenCipher> Safety::cipherFor(const std::string& scope) const {
  if (key_.empty()) return nullptr;
  {
    std::shared_lock lock(ciphers_mu_);
    if (auto it = ciphers_.find(scope); it != ciphers_.end()) return it->second;
  }
  std::unique_lock lock(ciphers_mu_);
  auto& slot = ciphers_[scope];
  if (!slot) slot = std::make_shared<const redact::TokenCipher>(key_, scope);
  return slot;
}

ScreenResult Safety::screen(std::string_view text) const {
  ScreenResult r;
  for (std::size_t i = 0; i < deny_.size(); ++i) {
    if (re2::RE2::PartialMatch(text, *deny_[i])) {
      r.flagged = true;
      r.deny = deny_patterns_[i];
      r.score = 1.0;
      return r;
    }
  }
  r.score = detector().score(text);
  r.flagged = r.score >= threshold();
  return r;
}

const guard::InjectionDetector& Safety::detector() const {
  std::call_once(detector_once_, [this] {
    if (!detector_) detector_.emplace(guard::InjectionDetector::builtin());
  });
  return *detector_;
}

}  // namespace sluice::pipeline
