#include "redact/Redactor.hpp"

#include "redact/Restorer.hpp"
#include "redact/TokenCipher.hpp"

namespace sluice::redact {

void appendMask(std::string& out, std::string_view ruleName) {
  out += "[REDACTED:";
  out += ruleName;
  out += ']';
}

Redaction Redactor::redact(std::string_view text, FieldMask field, std::string& out) const {
  Redaction res;
  res.matches = rules_->scan(text, field);
  if (res.matches.empty()) return res;
  const auto& rules = rules_->rules();
  for (const auto& m : res.matches) {
    if (rules[m.rule].action == Action::Block) {
      res.blocked = &rules[m.rule];
      return res;
    }
  }
  std::string next;
  next.reserve(text.size() + res.matches.size() * 48);
  std::size_t at = 0;
  for (const auto& m : res.matches) {
    const Rule& rule = rules[m.rule];
    next.append(text.data() + at, m.start - at);
    const std::string_view value = text.substr(m.start, m.end - m.start);
    const std::size_t tokenAt = next.size();
    if (rule.action == Action::Encrypt && cipher_ && cipher_->appendToken(next, rule.name, value)) {
      ++res.encrypted;
      if (memo_ != nullptr) memo_->add(std::string_view(next).substr(tokenAt), value);
    } else {
      appendMask(next, rule.name);
      ++res.masked;
    }
    at = m.end;
  }
  next.append(text.data() + at, text.size() - at);
  out = std::move(next);
  res.changed = true;
  return res;
}

}  // namespace sluice::redact
