#include "pipeline/Protect.hpp"

#include <boost/json.hpp>
#include <re2/re2.h>

#include <array>
#include <climits>
#include <cstring>
#include <utility>

#include "core/JsonText.hpp"
#include "core/ThreadScratch.hpp"
#include "redact/Redactor.hpp"
#include "redact/Restorer.hpp"
#include "redact/TokenCipher.hpp"

namespace sluice::pipeline {

namespace json = boost::json;
using providers::Format;
using providers::StreamEncoder;
using providers::StreamEvent;
using redact::Field;

namespace {

constexpr std::string_view kRoleSystem = "system";
constexpr std::string_view kRoleUser = "user";
constexpr std::string_view kRoleAssistant = "assistant";
constexpr std::string_view kRoleTool = "tool";

std::string_view strOf(const json::value* v) {
  if (!v || !v->is_string()) return {};
  const auto& s = v->get_string();
  return {s.data(), s.size()};
}

bool isTrue(const json::value* v) { return v && v->is_bool() && v->get_bool(); }

// The first member present under either spelling (Gemini accepts camelCase and snake_case).
json::key_value_pair* member(json::object& o, std::string_view a, std::string_view b = {}) {
  if (auto it = o.find(a); it != o.end()) return &*it;
  if (!b.empty())
    if (auto it = o.find(b); it != o.end()) return &*it;
  return nullptr;
}

bool looksLikeJsonContainer(std::string_view s) {
  for (char c : s) {
    if (c == ' ' || c == '\n' || c == '\r' || c == '\t') continue;
    return c == '{' || c == '[';
  }
  return false;
}

// ---------------------------------------------------------------------------------------------
// Request side

class Scanner {
 public:
  Scanner(const redact::Redactor* redactor, const ScanOptions& opts, RequestScan& res, json::parser& parser,
          json::storage_ptr sp)
      : red_(redactor), opts_(opts), res_(res), parser_(parser), sp_(std::move(sp)) {}

  bool stopped() const { return stop_; }

  // A tool result being visited: its texts are collected as one part (before redaction).
  class ToolPart {
   public:
    ToolPart(Scanner& s, bool isTool) : s_(s), on_(isTool && s.opts_.collect_tool_text) {
      if (!on_) return;
      s_.res_.tool_texts.push_back({s_.formatPath(), {}});
      s_.inTool_ = true;
    }
    ~ToolPart() {
      if (!on_) return;
      s_.inTool_ = false;
      auto& parts = s_.res_.tool_texts;
      if (parts.back().text.empty()) {
        parts.pop_back();
      } else if (parts.size() > s_.opts_.max_tool_parts) {
        parts.erase(parts.begin());
      }
    }
    ToolPart(const ToolPart&) = delete;
    ToolPart& operator=(const ToolPart&) = delete;

   private:
    Scanner& s_;
    bool on_;
  };

  // The JSON path of the field being visited, kept as a stack of views into the document (keys
  // are never modified) and formatted only when a block rule hits.
  class Seg {
   public:
    Seg(Scanner& s, std::string_view key) : s_(s) { s_.push(key, 0, false); }
    Seg(Scanner& s, std::size_t index) : s_(s) { s_.push({}, index, true); }
    ~Seg() { --s_.depth_; }
    Seg(const Seg&) = delete;
    Seg& operator=(const Seg&) = delete;

   private:
    Scanner& s_;
  };

  // One plain text field. `userTurn`: part of the last user turn (collected before redaction).
  void text(json::value& v, Field f, std::string_view role, bool userTurn = false) {
    if (stop_ || !v.is_string()) return;
    auto& s = v.get_string();
    if (userTurn) addUserText({s.data(), s.size()});
    if (inTool_ && f == redact::kTool) addToolText({s.data(), s.size()});
    if (redactString(s, f) < 0) return;
    if (opts_.collect_outgoing) res_.outgoing.push_back({role, f, std::string(s.data(), s.size())});
  }

  // A member holding text, visited under its own path segment.
  void textMember(json::object& o, std::string_view key, Field f, std::string_view role, bool userTurn = false) {
    auto it = o.find(key);
    if (it == o.end()) return;
    Seg g(*this, it->key());
    text(it->value(), f, role, userTurn);
  }

  // Tool-call arguments given as JSON text: redacted value by value when they are a JSON
  // object/array (rules see decoded values; a token never lands inside an escape sequence).
  void argumentsText(json::value& v, std::string_view role) {
    if (stop_ || !v.is_string()) return;
    auto& s = v.get_string();
    const std::string_view sv(s.data(), s.size());
    if (red_) {
      bool handled = false;
      if (looksLikeJsonContainer(sv)) {
        // Without escapes the values are verbatim substrings of the text: no hit in the text
        // means no hit in any value (unless a rule is anchored to the start or end of a value),
        // and the parse is skipped (the common case).
        const bool maybe = !rawScanIsExact() || sv.find('\\') != std::string_view::npos ||
                           !red_->rules().scan(sv, redact::kToolArguments).empty();
        if (!maybe) {
          handled = true;
        } else {
          parser_.reset(sp_);
          boost::system::error_code ec;
          parser_.write(sv.data(), sv.size(), ec);
          if (!ec) {
            json::value inner = parser_.release();
            if (inner.is_object() || inner.is_array()) {
              handled = true;
              bool changed = false;
              walkTree(inner, redact::kToolArguments, changed, false);
              if (stop_) return;
              if (changed) {
                const std::string text = json::serialize(inner);
                s = std::string_view(text);
              }
            }
          }
        }
      }
      if (!handled && redactString(s, redact::kToolArguments) < 0) return;
    }
    if (opts_.collect_outgoing) res_.outgoing.push_back({role, redact::kToolArguments, std::string(s.data(), s.size())});
  }

  // A JSON object/array given as is (Anthropic tool_use.input, Gemini functionCall.args /
  // functionResponse.response): every string value inside.
  void tree(json::value& v, Field f, std::string_view role) {
    if (stop_ || !(v.is_object() || v.is_array())) return;
    if (inTool_ && f == redact::kTool) addToolText(json::serialize(v));
    bool changed = false;
    if (red_) walkTree(v, f, changed, true);
    if (stop_) return;
    if (opts_.collect_outgoing) res_.outgoing.push_back({role, f, json::serialize(v)});
  }

 private:
  friend class Seg;
  // A match's path is named down to this many levels (a string inside a string doubles them);
  // deeper ones, which kMaxJsonDepth allows, are named to here and walked all the same.
  static constexpr std::size_t kMaxPath = 72;
  struct PathSeg {
    std::string_view key;
    std::size_t index = 0;
    bool is_index = false;
  };

  void push(std::string_view key, std::size_t index, bool isIndex) {
    if (depth_ < kMaxPath) path_[depth_] = PathSeg{key, index, isIndex};
    ++depth_;
  }

  std::string formatPath() const {
    std::string out;
    for (std::size_t i = 0; i < depth_ && i < kMaxPath; ++i) {
      const auto& p = path_[i];
      if (p.is_index) {
        out += '[';
        out += std::to_string(p.index);
        out += ']';
      } else {
        if (!out.empty()) out += '.';
        out += p.key;
      }
    }
    return out;
  }

  // Whether scanning arguments JSON text finds a hit whenever one of its values holds one: not
  // when a rule for arguments is anchored (^ $ \A \z; a '^' in a class errs on the safe side).
  bool rawScanIsExact() {
    if (rawExact_ < 0) {
      rawExact_ = 1;
      for (const auto& rule : red_->rules().rules()) {
        if ((rule.fields & redact::kToolArguments) == 0 || !rule.re) continue;
        const std::string& p = rule.re->pattern();
        if (p.find_first_of("^$") != std::string::npos || p.find("\\A") != std::string::npos ||
            p.find("\\z") != std::string::npos) {
          rawExact_ = 0;
          break;
        }
      }
    }
    return rawExact_ == 1;
  }

  // -1: blocked (the scan stops), 0: unchanged, 1: replaced by its redacted text.
  int redactString(json::string& s, Field f) {
    if (!red_ || stop_) return 0;
    const auto r = red_->redact(std::string_view(s.data(), s.size()), f, scratch_);
    if (r.matches.empty()) return 0;
    const auto& rules = red_->rules().rules();
    for (const auto& m : r.matches) {
      const std::string& name = rules[m.rule].name;
      bool seen = false;
      for (const auto& h : res_.rules_hit)
        if (h == name) {
          seen = true;
          break;
        }
      if (!seen) {
        if (res_.rules_hit.empty()) res_.rules_hit.reserve(4);
        res_.rules_hit.push_back(name);
      }
    }
    if (r.blocked) {
      stop_ = true;
      res_.blocked_rule = r.blocked->name;
      res_.blocked_path = formatPath();
      return -1;
    }
    if (!r.changed) return 0;
    s = std::string_view(scratch_);
    res_.changed = true;
    res_.encrypted += r.encrypted;
    res_.masked += r.masked;
    return 1;
  }

  void walkTree(json::value& v, Field f, bool& changed, bool trackPath) {
    if (stop_) return;
    switch (v.kind()) {
      case json::kind::string:
        if (redactString(v.get_string(), f) > 0) changed = true;
        break;
      case json::kind::object:
        for (auto& kv : v.get_object()) {
          if (trackPath) {
            Seg g(*this, kv.key());
            walkTree(kv.value(), f, changed, true);
          } else {
            walkTree(kv.value(), f, changed, false);
          }
          if (stop_) return;
        }
        break;
      case json::kind::array: {
        auto& a = v.get_array();
        for (std::size_t i = 0; i < a.size(); ++i) {
          if (trackPath) {
            Seg g(*this, i);
            walkTree(a[i], f, changed, true);
          } else {
            walkTree(a[i], f, changed, false);
          }
          if (stop_) return;
        }
        break;
      }
      default:
        break;
    }
  }

  void addToolText(std::string_view t) {
    if (t.empty() || res_.tool_texts.empty()) return;
    appendCapped(res_.tool_texts.back().text, t);
  }

  void addUserText(std::string_view t) {
    if (!opts_.collect_user_text || t.empty()) return;
    appendCapped(res_.user_text, t);
  }

  void appendCapped(std::string& u, std::string_view t) {
    const std::size_t max = opts_.max_user_text;
    if (!u.empty()) {
      if (u.size() + 1 >= max) return;
      u += '\n';
    }
    if (u.size() >= max) return;
    const std::size_t room = max - u.size();
    if (t.size() > room) {
      std::size_t cut = room;
      while (cut > 0 && (static_cast<unsigned char>(t[cut]) & 0xC0) == 0x80) --cut;
      t = t.substr(0, cut);
    }
    u.append(t);
  }

  const redact::Redactor* red_;
  const ScanOptions& opts_;
  RequestScan& res_;
  json::parser& parser_;
  json::storage_ptr sp_;
  std::string scratch_;
  std::array<PathSeg, kMaxPath> path_{};
  std::size_t depth_ = 0;
  int rawExact_ = -1;
  bool stop_ = false;
  bool inTool_ = false;
};

using Seg = Scanner::Seg;

// The last user turn of a message list: the last user message with text, plus the user messages
// right before it. Returns [lo, hi]; lo > hi when there is none.
template <class IsUser, class HasText>
std::pair<std::size_t, std::size_t> lastUserTurn(const json::array& msgs, IsUser isUser, HasText hasText) {
  std::size_t i = msgs.size();
  while (i > 0) {
    --i;
    if (isUser(msgs[i]) && hasText(msgs[i])) {
      std::size_t lo = i;
      while (lo > 0 && isUser(msgs[lo - 1])) --lo;
      return {lo, i};
    }
  }
  return {1, 0};
}

bool hasPartText(const json::value* content, std::initializer_list<std::string_view> types) {
  if (!content) return false;
  if (content->is_string()) return !content->get_string().empty();
  if (!content->is_array()) return false;
  for (const auto& p : content->get_array()) {
    if (!p.is_object()) continue;
    const auto type = strOf(p.get_object().if_contains("type"));
    for (auto t : types)
      if (type == t && !strOf(p.get_object().if_contains("text")).empty()) return true;
  }
  return false;
}

// Content that is a string or an array of text parts; `types` name the parts whose "text" is
// text ("refusal" parts keep theirs in "refusal").
void contentText(Scanner& s, json::value& content, Field f, std::string_view role, bool userTurn,
                 std::initializer_list<std::string_view> types) {
  if (content.is_string()) {
    s.text(content, f, role, userTurn);
    return;
  }
  if (!content.is_array()) return;
  auto& arr = content.get_array();
  for (std::size_t j = 0; j < arr.size() && !s.stopped(); ++j) {
    if (!arr[j].is_object()) continue;
    Seg g(s, j);
    auto& part = arr[j].get_object();
    const auto type = strOf(part.if_contains("type"));
    if (type == "refusal") {
      s.textMember(part, "refusal", f, role, userTurn);
      continue;
    }
    for (auto t : types)
      if (type == t) {
        s.textMember(part, "text", f, role, userTurn);
        break;
      }
  }
}

bool roleFields(std::string_view role, Field& f, std::string_view& name) {
  if (role == "system" || role == "developer") {
    f = redact::kSystem;
    name = kRoleSystem;
  } else if (role == "user") {
    f = redact::kUser;
    name = kRoleUser;
  } else if (role == "assistant") {
    f = redact::kAssistant;
    name = kRoleAssistant;
  } else if (role == "tool" || role == "function") {
    f = redact::kTool;
    name = kRoleTool;
  } else {
    return false;
  }
  return true;
}

// The "messages" array of a Chat or Anthropic request: fn(message, field, role name, userTurn)
// for every message object whose role roleFields() knows and accept(role) allows, visited under
// its path segment. userTurn: part of the last user turn (lastUserTurn).
template <class Accept, class Fn>
void eachMessage(Scanner& s, json::object& root, Accept accept, Fn&& fn) {
  auto it = root.find("messages");
  if (s.stopped() || it == root.end() || !it->value().is_array()) return;
  auto& msgs = it->value().get_array();
  auto isUser = [](const json::value& m) { return m.is_object() && strOf(m.get_object().if_contains("role")) == "user"; };
  auto hasText = [](const json::value& m) { return hasPartText(m.get_object().if_contains("content"), {"text"}); };
  const auto [lo, hi] = lastUserTurn(msgs, isUser, hasText);
  Seg g(s, it->key());
  for (std::size_t i = 0; i < msgs.size() && !s.stopped(); ++i) {
    if (!msgs[i].is_object()) continue;
    auto& m = msgs[i].get_object();
    const auto r = strOf(m.if_contains("role"));
    Field f;
    std::string_view role;
    if (!accept(r) || !roleFields(r, f, role)) continue;
    Seg gi(s, i);
    fn(m, f, role, i >= lo && i <= hi);
  }
}

void scanChat(Scanner& s, json::object& root) {
  eachMessage(s, root, [](std::string_view) { return true; },
              [&](json::object& m, Field f, std::string_view role, bool userTurn) {
                if (auto c = m.find("content"); c != m.end()) {
                  Scanner::ToolPart tp(s, f == redact::kTool);
                  Seg gc(s, c->key());
                  contentText(s, c->value(), f, role, userTurn, {"text"});
                }
                if (f != redact::kAssistant) return;
                s.textMember(m, "reasoning_content", f, role);
                auto tc = m.find("tool_calls");
                if (tc == m.end() || !tc->value().is_array()) return;
                Seg gt(s, tc->key());
                auto& calls = tc->value().get_array();
                for (std::size_t k = 0; k < calls.size() && !s.stopped(); ++k) {
                  if (!calls[k].is_object()) continue;
                  Seg gk(s, k);
                  auto fn = calls[k].get_object().find("function");
                  if (fn == calls[k].get_object().end() || !fn->value().is_object()) continue;
                  Seg gf(s, fn->key());
                  auto& fo = fn->value().get_object();
                  if (auto a = fo.find("arguments"); a != fo.end()) {
                    Seg ga(s, a->key());
                    s.argumentsText(a->value(), kRoleAssistant);
                  }
                }
              });
}

void scanResponses(Scanner& s, json::object& root) {
  s.textMember(root, "instructions", redact::kSystem, kRoleSystem);
  auto it = root.find("input");
  if (it == root.end() || s.stopped()) return;
  Seg g(s, it->key());
  if (it->value().is_string()) {
    s.text(it->value(), redact::kUser, kRoleUser, true);
    return;
  }
  if (!it->value().is_array()) return;
  auto& items = it->value().get_array();
  auto isMessage = [](const json::object& o) {
    const auto type = strOf(o.if_contains("type"));
    return type.empty() || type == "message";
  };
  auto isUser = [&](const json::value& v) {
    return v.is_object() && isMessage(v.get_object()) && strOf(v.get_object().if_contains("role")) == "user";
  };
  auto hasText = [](const json::value& v) {
    return hasPartText(v.get_object().if_contains("content"), {"input_text", "output_text", "text"});
  };
  const auto [lo, hi] = lastUserTurn(items, isUser, hasText);
  for (std::size_t i = 0; i < items.size() && !s.stopped(); ++i) {
    if (!items[i].is_object()) continue;
    auto& o = items[i].get_object();
    Seg gi(s, i);
    const auto type = strOf(o.if_contains("type"));
    if (isMessage(o)) {
      Field f;
      std::string_view role;
      const auto r = strOf(o.if_contains("role"));
      if (r == "tool" || r == "function" || !roleFields(r, f, role)) continue;
      if (auto c = o.find("content"); c != o.end()) {
        Seg gc(s, c->key());
        contentText(s, c->value(), f, role, i >= lo && i <= hi, {"input_text", "output_text", "text"});
      }
    } else if (type == "function_call") {
      if (auto a = o.find("arguments"); a != o.end()) {
        Seg ga(s, a->key());
        s.argumentsText(a->value(), kRoleAssistant);
      }
    } else if (type == "custom_tool_call") {
      s.textMember(o, "input", redact::kToolArguments, kRoleAssistant);
    } else if (type == "function_call_output" || type == "custom_tool_call_output") {
      if (auto out = o.find("output"); out != o.end()) {
        Scanner::ToolPart tp(s, true);
        Seg go(s, out->key());
        contentText(s, out->value(), redact::kTool, kRoleTool, false, {"input_text", "output_text", "text"});
      }
    }
  }
}

void scanAnthropic(Scanner& s, json::object& root) {
  if (auto sys = root.find("system"); sys != root.end()) {
    Seg g(s, sys->key());
    contentText(s, sys->value(), redact::kSystem, kRoleSystem, false, {"text"});
  }
  auto anthropicRole = [](std::string_view r) { return r == "user" || r == "assistant" || r == "system"; };
  eachMessage(s, root, anthropicRole, [&](json::object& m, Field f, std::string_view role, bool userTurn) {
    auto c = m.find("content");
    if (c == m.end()) return;
    Seg gc(s, c->key());
    if (c->value().is_string()) {
      s.text(c->value(), f, role, userTurn);
      return;
    }
    if (!c->value().is_array()) return;
    auto& blocks = c->value().get_array();
    for (std::size_t j = 0; j < blocks.size() && !s.stopped(); ++j) {
      if (!blocks[j].is_object()) continue;
      auto& b = blocks[j].get_object();
      const auto type = strOf(b.if_contains("type"));
      Seg gj(s, j);
      if (type == "text") {
        s.textMember(b, "text", f, role, userTurn);
      } else if (type == "tool_use") {
        if (auto in = b.find("input"); in != b.end()) {
          Seg gin(s, in->key());
          s.tree(in->value(), redact::kToolArguments, kRoleAssistant);
        }
      } else if (type == "tool_result") {
        if (auto tc = b.find("content"); tc != b.end()) {
          Scanner::ToolPart tp(s, true);
          Seg gt(s, tc->key());
          contentText(s, tc->value(), redact::kTool, kRoleTool, false, {"text"});
        }
      }
      // thinking / redacted_thinking are signed; images and documents carry no text.
    }
  });
}

void scanGemini(Scanner& s, json::object& root) {
  if (auto* si = member(root, "systemInstruction", "system_instruction"); si && si->value().is_object()) {
    Seg g(s, si->key());
    auto& so = si->value().get_object();
    if (auto p = so.find("parts"); p != so.end() && p->value().is_array()) {
      Seg gp(s, p->key());
      auto& parts = p->value().get_array();
      for (std::size_t j = 0; j < parts.size() && !s.stopped(); ++j) {
        if (!parts[j].is_object() || isTrue(parts[j].get_object().if_contains("thought"))) continue;
        Seg gj(s, j);
        s.textMember(parts[j].get_object(), "text", redact::kSystem, kRoleSystem);
      }
    }
  }
  auto it = root.find("contents");
  if (s.stopped() || it == root.end() || !it->value().is_array()) return;
  auto& contents = it->value().get_array();
  auto isUser = [](const json::value& c) {
    if (!c.is_object()) return false;
    const auto* r = c.get_object().if_contains("role");
    return !r || r->is_null() || strOf(r) == "user";
  };
  auto hasText = [](const json::value& c) {
    const auto* parts = c.get_object().if_contains("parts");
    if (!parts || !parts->is_array()) return false;
    for (const auto& p : parts->get_array())
      if (p.is_object() && !isTrue(p.get_object().if_contains("thought")) && !strOf(p.get_object().if_contains("text")).empty())
        return true;
    return false;
  };
  const auto [lo, hi] = lastUserTurn(contents, isUser, hasText);
  Seg g(s, it->key());
  for (std::size_t i = 0; i < contents.size() && !s.stopped(); ++i) {
    if (!contents[i].is_object()) continue;
    auto& c = contents[i].get_object();
    const auto* rv = c.if_contains("role");
    const auto r = strOf(rv);
    Field f;
    std::string_view role;
    if (!rv || rv->is_null() || r == "user" || r == "function") {
      f = redact::kUser;
      role = kRoleUser;
    } else if (r == "model") {
      f = redact::kAssistant;
      role = kRoleAssistant;
    } else {
      continue;
    }
    const bool userTurn = i >= lo && i <= hi;
    auto p = c.find("parts");
    if (p == c.end() || !p->value().is_array()) continue;
    Seg gi(s, i);
    Seg gp(s, p->key());
    auto& parts = p->value().get_array();
    for (std::size_t j = 0; j < parts.size() && !s.stopped(); ++j) {
      if (!parts[j].is_object()) continue;
      auto& part = parts[j].get_object();
      if (isTrue(part.if_contains("thought"))) continue;  // signed reasoning
      Seg gj(s, j);
      if (auto* fc = member(part, "functionCall", "function_call"); fc && fc->value().is_object()) {
        Seg gf(s, fc->key());
        if (auto a = fc->value().get_object().find("args"); a != fc->value().get_object().end()) {
          Seg ga(s, a->key());
          s.tree(a->value(), redact::kToolArguments, kRoleAssistant);
        }
      } else if (auto* fr = member(part, "functionResponse", "function_response"); fr && fr->value().is_object()) {
        Seg gf(s, fr->key());
        if (auto a = fr->value().get_object().find("response"); a != fr->value().get_object().end()) {
          Scanner::ToolPart tp(s, true);
          Seg ga(s, a->key());
          s.tree(a->value(), redact::kTool, kRoleTool);
        }
      } else {
        s.textMember(part, "text", f, role, userTurn && f == redact::kUser && r != "function");
      }
    }
  }
}

}  // namespace

RequestScan scanRequest(Format client, std::string_view body, const redact::Redactor* redactor, const ScanOptions& opts,
                        json::value* parsed) {
  RequestScan res;
  // One parse per request into an arena that overflows to the heap for big bodies; the parser's
  // own stack comes from a per-thread buffer (no allocation for ordinary nesting). The same
  // parser parses tool-call arguments given as JSON text. A caller that parsed the body already
  // hands its document over instead.
  struct ArenaTag;
  struct ScratchTag;
  constexpr std::size_t kArena = 16 * 1024, kScratch = 4 * 1024;
  unsigned char* const arena = threadScratch<ArenaTag, kArena>();
  unsigned char* const scratch = threadScratch<ScratchTag, kScratch>();
  json::monotonic_resource mr(arena, kArena);
  json::storage_ptr sp(&mr);
  json::parser parser(json::storage_ptr(), jsonParseOptions(), scratch, kScratch);
  json::value own;
  if (parsed == nullptr) {
    parser.reset(sp);
    boost::system::error_code ec;
    parser.write(body.data(), body.size(), ec);
    if (ec) return res;
    own = parser.release();
  }
  json::value& doc = parsed != nullptr ? *parsed : own;
  if (!doc.is_object()) return res;
  res.ok = true;
  Scanner s(redactor, opts, res, parser, sp);
  auto& root = doc.get_object();
  switch (client) {
    case Format::OpenAIChat:
      scanChat(s, root);
      break;
    case Format::OpenAIResponses:
      scanResponses(s, root);
      break;
    case Format::AnthropicMessages:
      scanAnthropic(s, root);
      break;
    case Format::GeminiGenerate:
      scanGemini(s, root);
      break;
    case Format::BedrockConverse:  // never a client format
      break;
  }
  if (s.stopped()) {
    res.changed = false;
    res.encrypted = res.masked = 0;
    return res;
  }
  if (res.changed) res.body = json::serialize(doc);
  return res;
}

// ---------------------------------------------------------------------------------------------
// Whole answers

namespace {

class BodyRestorer {
 public:
  BodyRestorer(const redact::TokenCipher& cipher, redact::RestoreStats& stats, const redact::SealMemo* memo)
      : cipher_(cipher), stats_(stats), memo_(memo) {}

  std::size_t restored() const { return restored_; }

  void value(json::value& v) {
    switch (v.kind()) {
      case json::kind::string:
        restoreString(v.get_string());
        break;
      case json::kind::object:
        for (auto& kv : v.get_object()) value(kv.value());
        break;
      case json::kind::array:
        for (auto& e : v.get_array()) value(e);
        break;
      default:
        break;
    }
  }

  // A Gemini stream as one JSON array: candidate 0's text parts are one text run (thought parts
  // another), so a token the model split across chunks is restored.
  void geminiArray(json::array& chunks) {
    redact::Restorer text(cipher_, 0, memo_);
    redact::Restorer thought(cipher_, 0, memo_);
    json::string* lastText = nullptr;
    json::string* lastThought = nullptr;
    for (auto& chunk : chunks) {
      if (!chunk.is_object()) {
        value(chunk);
        continue;
      }
      for (auto& kv : chunk.get_object()) {
        if (kv.key() != "candidates" || !kv.value().is_array() || kv.value().get_array().empty() ||
            !kv.value().get_array()[0].is_object()) {
          value(kv.value());
          continue;
        }
        auto& cands = kv.value().get_array();
        for (std::size_t ci = 1; ci < cands.size(); ++ci) value(cands[ci]);
        for (auto& ckv : cands[0].get_object()) {
          if (ckv.key() != "content" || !ckv.value().is_object()) {
            value(ckv.value());
            continue;
          }
          for (auto& pkv : ckv.value().get_object()) {
            if (pkv.key() != "parts" || !pkv.value().is_array()) {
              value(pkv.value());
              continue;
            }
            for (auto& part : pkv.value().get_array()) {
              if (!part.is_object()) {
                value(part);
                continue;
              }
              const bool isThought = isTrue(part.get_object().if_contains("thought"));
              for (auto& m : part.get_object()) {
                if (m.key() == "text" && m.value().is_string()) {
                  auto& s = m.value().get_string();
                  feedRun(isThought ? thought : text, s);
                  (isThought ? lastThought : lastText) = &s;
                } else {
                  value(m.value());
                }
              }
            }
          }
        }
      }
    }
    finishRun(text, lastText);
    finishRun(thought, lastThought);
  }

 private:
  void restoreString(json::string& s) {
    const std::string_view sv(s.data(), s.size());
    if (sv.find(redact::kTokenPrefix) == std::string_view::npos) return;
    redact::RestoreStats st;
    std::string out = redact::restoreAll(sv, cipher_, isJsonContainer(sv) ? 1 : 0, &st, memo_);
    stats_.tampered += st.tampered;
    if (st.restored == 0) return;
    stats_.restored += st.restored;
    restored_ += st.restored;
    s = std::string_view(out);
  }

  // Text that is itself a JSON object or array (tool-call arguments, JSON-mode content): its
  // tokens sit inside JSON string literals, so values go back JSON-escaped.
  static bool isJsonContainer(std::string_view sv) {
    if (!looksLikeJsonContainer(sv)) return false;
    unsigned char buf[4096];
    json::monotonic_resource mr(buf, sizeof buf);
    boost::system::error_code ec;
    json::value v = sluice::parseJson(sv, ec, json::storage_ptr(&mr));
    return !ec && (v.is_object() || v.is_array());
  }

  void feedRun(redact::Restorer& r, json::string& s) {
    const auto before = r.stats();
    buf_.clear();
    r.feed(std::string_view(s.data(), s.size()), buf_);
    account(before, r.stats());
    if (std::string_view(buf_) != std::string_view(s.data(), s.size())) s = std::string_view(buf_);
  }

  void finishRun(redact::Restorer& r, json::string* last) {
    buf_.clear();
    r.finish(buf_);
    if (!buf_.empty() && last) last->append(buf_);
  }

  void account(const redact::RestoreStats& before, const redact::RestoreStats& after) {
    stats_.restored += after.restored - before.restored;
    stats_.tampered += after.tampered - before.tampered;
    restored_ += after.restored - before.restored;
  }

  const redact::TokenCipher& cipher_;
  redact::RestoreStats& stats_;
  const redact::SealMemo* memo_;
  std::size_t restored_ = 0;
  std::string buf_;
};

}  // namespace

bool restoreWholeBody(std::string& body, const redact::TokenCipher& cipher, redact::RestoreStats& stats,
                      const redact::SealMemo* memo) {
  // An object holds a token only whole; a Gemini array may split one across its chunks, so
  // any "[[" (or a "[" ending one chunk's text) is reason enough to look.
  const auto first = body.find_first_not_of(" \t\r\n");
  const bool array = first != std::string::npos && body[first] == '[';
  if (!array && std::string_view(body).find(redact::kTokenPrefix) == std::string_view::npos) return false;
  if (array && body.find('[', first + 1) == std::string::npos) return false;
  json::monotonic_resource mr;
  boost::system::error_code ec;
  json::value doc = sluice::parseJson(body, ec, json::storage_ptr(&mr));
  if (ec || !(doc.is_object() || doc.is_array())) return false;
  BodyRestorer r(cipher, stats, memo);
  if (doc.is_array()) {
    r.geminiArray(doc.get_array());
  } else {
    r.value(doc);
  }
  // Without a restored token the document only moved bytes between parts, if anything.
  if (r.restored() == 0) return false;
  body = json::serialize(doc);
  return true;
}

// ---------------------------------------------------------------------------------------------
// Streams

namespace {

class RestoringEncoder final : public StreamEncoder {
 public:
  RestoringEncoder(std::unique_ptr<StreamEncoder> inner, std::shared_ptr<const redact::TokenCipher> cipher,
                   std::shared_ptr<redact::RestoreStats> stats, std::shared_ptr<const redact::SealMemo> memo)
      : inner_(std::move(inner)),
        cipher_(std::move(cipher)),
        memo_(std::move(memo)),
        stats_(std::move(stats)),
        text_(*cipher_, 0, memo_.get()),
        reasoning_(*cipher_, 0, memo_.get()) {}

  void encode(const StreamEvent& ev, std::string& out) override {
    using K = StreamEvent::Kind;
    switch (ev.kind) {
      case K::Text:
        endReasoning(out);
        endTools(kAllTools, out);
        pass(text_, ev, out);
        return;
      case K::Reasoning:
        endText(out);
        endTools(kAllTools, out);
        pass(reasoning_, ev, out);
        return;
      case K::ToolCallArgs:
        endText(out);
        endReasoning(out);
        pass(tool(ev.tool_index), ev, out);
        return;
      case K::ReasoningSignature:
        endReasoning(out);
        endTools(kAllTools, out);
        break;
      case K::ToolCallStart:
        endText(out);
        endReasoning(out);
        endTools(ev.tool_index, out);
        break;
      case K::RedactedReasoning:
      case K::Finish:
      case K::Done:
      case K::Error:
        endAll(out);
        break;
      case K::Start:
      case K::Usage:
      case K::Ping:
        break;
    }
    inner_->encode(ev, out);
  }

  void finish(std::string& out) override {
    endAll(out);
    inner_->finish(out);
  }

  bool ended() const override { return inner_->ended(); }

 private:
  static constexpr int kAllTools = INT_MIN;
  struct ToolRun {
    int index;
    redact::Restorer restorer;
  };

  redact::Restorer& tool(int index) {
    for (auto& t : tools_)
      if (t.index == index) return t.restorer;
    tools_.push_back(ToolRun{index, redact::Restorer(*cipher_, 1, memo_.get())});
    return tools_.back().restorer;
  }

  void pass(redact::Restorer& r, const StreamEvent& ev, std::string& out) {
    // Nothing held and no '[': nothing can be (the start of) a token; pass the event as it is.
    if (r.heldBytes() == 0 && (ev.text.empty() || std::memchr(ev.text.data(), '[', ev.text.size()) == nullptr)) {
      inner_->encode(ev, out);
      return;
    }
    const redact::RestoreStats before = r.stats();
    buf_.clear();
    r.feed(ev.text, buf_);
    if (stats_) {
      stats_->restored += r.stats().restored - before.restored;
      stats_->tampered += r.stats().tampered - before.tampered;
    }
    if (buf_.empty()) return;  // wholly held back: the rest of a token is still to come
    StreamEvent copy = ev;
    copy.text = buf_;
    inner_->encode(copy, out);
  }

  void flush(redact::Restorer& r, StreamEvent::Kind kind, int toolIndex, std::string& out) {
    if (r.heldBytes() == 0) return;
    buf_.clear();
    r.finish(buf_);
    StreamEvent ev;
    ev.kind = kind;
    ev.tool_index = toolIndex;
    ev.text = buf_;
    inner_->encode(ev, out);
  }

  void endText(std::string& out) { flush(text_, StreamEvent::Kind::Text, 0, out); }
  void endReasoning(std::string& out) { flush(reasoning_, StreamEvent::Kind::Reasoning, 0, out); }
  void endTools(int except, std::string& out) {
    for (auto& t : tools_)
      if (t.index != except) flush(t.restorer, StreamEvent::Kind::ToolCallArgs, t.index, out);
  }
  void endAll(std::string& out) {
    endText(out);
    endReasoning(out);
    endTools(kAllTools, out);
  }

  std::unique_ptr<StreamEncoder> inner_;
  std::shared_ptr<const redact::TokenCipher> cipher_;
  std::shared_ptr<const redact::SealMemo> memo_;
  std::shared_ptr<redact::RestoreStats> stats_;
  redact::Restorer text_;
  redact::Restorer reasoning_;
  std::vector<ToolRun> tools_;
  std::string buf_;
};

}  // namespace

std::unique_ptr<StreamEncoder> makeRestoringEncoder(std::unique_ptr<StreamEncoder> inner,
                                                    std::shared_ptr<const redact::TokenCipher> cipher,
                                                    std::shared_ptr<redact::RestoreStats> stats,
                                                    std::shared_ptr<const redact::SealMemo> memo) {
  return std::make_unique<RestoringEncoder>(std::move(inner), std::move(cipher), std::move(stats), std::move(memo));
}

}  // namespace sluice::pipeline
