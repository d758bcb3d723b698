// Redactor: applies a RuleSet to one piece of request text (a message's content, a tool
// result, tool-call arguments...). Each hit is masked ("[REDACTED:EMAIL]"), encrypted into a
// token (TokenCipher.hpp) that the Restorer puts back in the response, or blocks the request.
//
// Per request: Redactor r(snapshot.rules, &cipher); then for every text field
//   std::string out; auto res = r.redact(text, kUser, out);
//   if (res.blocked) -> refuse (400, naming res.blocked->name); else if (res.changed) -> use out.
// Text inside a JSON document must be redacted decoded (the rules see the characters, not the
// escapes) and re-encoded; tokens and placeholders need no escaping.
// Thread-safety: const; one Redactor may serve concurrent calls.
#pragma once
#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "redact/Rules.hpp"

namespace sluice::redact {

class TokenCipher;
class SealMemo;

struct Redaction {
  bool changed = false;           // `out` holds the redacted text
  const Rule* blocked = nullptr;  // a `block` rule hit: refuse the request; `out` untouched
  std::vector<Match> matches;     // every hit, in text order (also when blocked)
  std::size_t masked = 0;         // includes encrypt hits masked for want of a cipher / size
  std::size_t encrypted = 0;
};

class Redactor {
 public:
  // cipher may be null (no redaction key configured): `encrypt` rules then mask. Values longer
  // than kMaxSealedValue are masked too. cipher and memo must outlive the Redactor.
  // memo (optional, per request): every token sealed is added to it with its value, for the
  // Restorers of the answer (Restorer.hpp).
  Redactor(std::shared_ptr<const RuleSet> rules, const TokenCipher* cipher, SealMemo* memo = nullptr)
      : rules_(std::move(rules)), cipher_(cipher), memo_(memo) {}

  // Scans `text` as found in `field`. When the result is `changed`, `out` is replaced by the
  // redacted text; otherwise `out` is left alone (nothing allocated on the common no-hit path).
  Redaction redact(std::string_view text, FieldMask field, std::string& out) const;

  const RuleSet& rules() const { return *rules_; }

 private:
  std::shared_ptr<const RuleSet> rules_;
  const TokenCipher* cipher_;
  SealMemo* memo_;
};

// The placeholder a `mask` hit leaves: "[REDACTED:" NAME "]".
void appendMask(std::string& out, std::string_view ruleName);

}  // namespace sluice::redact
