// Redaction rules: what to look for (an RE2 pattern plus an optional checksum/structure
// validator), what to do with a hit (mask, encrypt, block) and in which parts of a request.
// RuleSet is the compiled, immutable form built once per config snapshot; scan() is the hot
// path (one RE2::Set pass over the text, then only the rules that hit run their own regex).
// Thread-safety: a RuleSet is immutable after compile(); scan() may run concurrently.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace re2 {
class RE2;
}

namespace sluice::redact {

enum class Action : std::uint8_t {
  Mask,     // replaced by "[REDACTED:NAME]"; the value never comes back
  Encrypt,  // replaced by a token (TokenCipher.hpp) that the Restorer turns back into the value
  Block,    // the request is refused, naming the rule
};
std::string_view actionName(Action a);
std::optional<Action> parseAction(std::string_view s);  // "mask" | "encrypt" | "block"

// Where in a request a piece of text sits. A rule applies to the fields in its mask.
enum Field : std::uint8_t {
  kSystem = 1,          // system / developer instructions
  kUser = 2,            // user message text
  kAssistant = 4,       // earlier assistant turns sent back as history
  kTool = 8,            // tool results
  kToolArguments = 16,  // tool-call arguments in history
  kAllFields = 31,
};
using FieldMask = std::uint8_t;
// "system" | "user" | "assistant" | "tool" | "tool_arguments" | "all".
std::optional<FieldMask> parseField(std::string_view s);

// A validator sees the whole text and the regex hit [begin, end). It returns the end of the
// accepted value (<= end; validators may trim, e.g. an IBAN followed by a word), or nullopt to
// reject the hit. Names: "luhn", "iban", "ssn", "ipv4", "ipv6", "phone", "jwt", "openai_key",
// "" (none). Validators are how the built-in pack goes beyond the regex; config rules may name
// one too.
using Validator = std::optional<std::size_t> (*)(std::string_view text, std::size_t begin, std::size_t end);
Validator findValidator(std::string_view name);  // nullptr for an unknown name

struct RuleSpec {
  std::string name;     // [A-Za-z][A-Za-z0-9_]{0,31}; shown in tokens, placeholders, logs
  std::string pattern;  // RE2 syntax; must not match the empty string
  Action action = Action::Encrypt;
  std::vector<std::string> fields;  // parseField() names; empty = every field
  std::string validator;            // findValidator() name; empty = the regex alone decides
};

// The built-in pack, in priority order (an earlier rule wins a tie between equal overlapping
// hits). Default actions: personal data and credentials are encrypted (the model can still
// tell values apart; the client gets them back), PEM private keys block the request.
// Names: EMAIL, CREDIT_CARD, IBAN, US_SSN, IPV4, IPV6, PHONE, ANTHROPIC_KEY, OPENAI_KEY,
// AWS_ACCESS_KEY, GITHUB_TOKEN, SLACK_TOKEN, GOOGLE_API_KEY, STRIPE_KEY, HUGGINGFACE_TOKEN, JWT,
// PRIVATE_KEY.
std::vector<RuleSpec> builtinRules();

struct Rule {
  std::string name;
  Action action;
  FieldMask fields;
  Validator validator;
  std::unique_ptr<re2::RE2> re;
};

struct Match {
  std::size_t start = 0;  // byte offsets into the scanned text, end exclusive
  std::size_t end = 0;
  std::uint16_t rule = 0;  // index into RuleSet::rules()
};

class RuleSet {
 public:
  // Throws std::invalid_argument naming the rule and what is wrong (bad name, duplicate name,
  // regex error, a pattern that matches "", unknown field or validator).
  static std::shared_ptr<const RuleSet> compile(const std::vector<RuleSpec>& specs);
  ~RuleSet();
  RuleSet(const RuleSet&) = delete;
  RuleSet& operator=(const RuleSet&) = delete;

  // Validated, non-overlapping hits of the rules that apply to `field`, in text order. Spans
  // inside existing tokens ("[[sluice:...]]") are left alone. Never throws except bad_alloc.
  std::vector<Match> scan(std::string_view text, FieldMask field = kAllFields) const;

  const std::vector<Rule>& rules() const { return rules_; }
  const Rule* find(std::string_view name) const;

 private:
  RuleSet();
  struct SetImpl;
  std::vector<Rule> rules_;
  std::unique_ptr<SetImpl> set_;
};

// Checksum helpers, exposed for tests and config validation.
bool luhnValid(std::string_view digits);   // digits only
bool ibanValid(std::string_view compact);  // upper-case, no spaces

}  // namespace sluice::redact
