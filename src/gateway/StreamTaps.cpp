#include "gateway/StreamTaps.hpp"

#include <boost/json/parse.hpp>
#include <boost/json/value.hpp>

#include <boost/json/serialize.hpp>

#include <array>
#include <cstring>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#include <map>
#include <optional>

#include "core/JsonText.hpp"
#include "providers/CodecUtil.hpp"
#include "redact/Restorer.hpp"
#include "redact/TokenCipher.hpp"

namespace sluice::gateway {

namespace json = boost::json;

namespace {

std::int64_t intAt(const json::object& o, std::string_view k) {
  const auto* v = o.if_contains(k);
  if (!v) return -1;
  if (v->is_int64()) return v->as_int64();
  if (v->is_uint64()) return static_cast<std::int64_t>(v->as_uint64());
  return -1;
}

// Anthropic's cache writes: cache_creation_input_tokens, or else the sum of its per-lifetime
// split (cache_creation: {ephemeral_5m_input_tokens, ephemeral_1h_input_tokens}).
std::int64_t anthropicCacheWrites(const json::object& u) {
  if (auto n = intAt(u, "cache_creation_input_tokens"); n >= 0) return n;
  const auto* cc = u.if_contains("cache_creation");
  if (!cc || !cc->is_object()) return -1;
  std::int64_t sum = -1;
  for (const auto& kv : cc->as_object()) {
    const auto* v = &kv.value();
    std::int64_t n = v->is_int64() ? v->as_int64() : v->is_uint64() ? static_cast<std::int64_t>(v->as_uint64()) : -1;
    if (n >= 0) sum = providers::detail::addCounts(std::max<std::int64_t>(sum, 0), n);
  }
  return sum;
}

// Anthropic usage object: input_tokens excludes cache reads and writes, so add them for the
// total (MessagesCodec.hpp has the rule).
void anthropicUsage(const json::object& u, Usage& usage, bool output_only) {
  if (!output_only) {
    auto in = intAt(u, "input_tokens");
    auto read = intAt(u, "cache_read_input_tokens");
    auto created = anthropicCacheWrites(u);
    if (in >= 0)
      usage.prompt_tokens = providers::detail::addCounts(
          providers::detail::addCounts(in, std::max<std::int64_t>(read, 0)), std::max<std::int64_t>(created, 0));
    if (read >= 0) usage.cached_tokens = read;
    if (created >= 0) usage.cache_write_tokens = created;
  }
  auto out = intAt(u, "output_tokens");
  if (out >= 0) usage.completion_tokens = out;
  if (usage.prompt_tokens < 0 && usage.completion_tokens >= 0) usage.prompt_tokens = 0;
}

// Gemini usageMetadata, as GenerateCodec reads it: candidatesTokenCount excludes the thoughts.
void geminiUsage(const json::object& m, Usage& usage) {
  auto p = intAt(m, "promptTokenCount");
  auto tool = intAt(m, "toolUsePromptTokenCount");
  auto c = intAt(m, "candidatesTokenCount");
  auto t = intAt(m, "thoughtsTokenCount");
  auto cached = intAt(m, "cachedContentTokenCount");
  usage.prompt_tokens = providers::detail::addCounts(p < 0 ? 0 : p, tool < 0 ? 0 : tool);
  usage.completion_tokens = providers::detail::addCounts(c < 0 ? 0 : c, t < 0 ? 0 : t);
  if (cached >= 0) usage.cached_tokens = cached;
  if (t >= 0) usage.reasoning_tokens = t;
}

class OpenAITap final : public StreamTap {
 public:
  explicit OpenAITap(bool strip) : f_(strip) {}
  bool feed(std::string_view in, std::string& out) override { return f_.feed(in, out); }
  void finish(std::string& out) override { out.append(f_.leftover()); }
  Usage usage() const override { return f_.usage(); }

 private:
  providers::openai::StreamFilter f_;
};

// Reads usage from message_start (input) and message_delta (output); passes every byte on.
class AnthropicTap final : public StreamTap {
 public:
  bool feed(std::string_view in, std::string& out) override {
    out.append(in);
    return split_.feed(in, [&](std::string_view name, std::string_view data) {
      bool start = name == "message_start";
      if (!start && name != "message_delta") return;
      boost::system::error_code ec;
      auto v = sluice::parseJson(data, ec);
      if (ec || !v.is_object()) return;
      const json::object* u = nullptr;
      if (start) {
        if (const auto* m = v.as_object().if_contains("message"); m && m->is_object())
          if (const auto* uu = m->as_object().if_contains("usage"); uu && uu->is_object()) u = &uu->as_object();
      } else if (const auto* uu = v.as_object().if_contains("usage"); uu && uu->is_object()) {
        u = &uu->as_object();
      }
      if (u) anthropicUsage(*u, usage_, /*output_only=*/!start && intAt(*u, "input_tokens") < 0);
    });
  }
  void finish(std::string&) override {}  // bytes were passed on as they came
  Usage usage() const override { return usage_; }

 private:
  providers::detail::SseSplitter split_;
  Usage usage_;
};

// Gemini repeats usageMetadata in chunks; the last one is complete. Keep its text, parse once.
class GeminiTap final : public StreamTap {
 public:
  bool feed(std::string_view in, std::string& out) override {
    out.append(in);
    return split_.feed(in, [&](std::string_view, std::string_view data) {
      if (data.find("usageMetadata") != std::string_view::npos) last_.assign(data);
    });
  }
  void finish(std::string&) override {}  // bytes were passed on as they came
  Usage usage() const override {
    Usage u;
    if (!last_.empty()) usageFromBody(Wire::Gemini, last_, u);
    return u;
  }

 private:
  providers::detail::SseSplitter split_;
  std::string last_;
};

class TranslatingTap final : public StreamTap {
 public:
  explicit TranslatingTap(std::unique_ptr<providers::StreamTranslator> t) : t_(std::move(t)) {}
  bool feed(std::string_view in, std::string& out) override { return t_->feed(in, out); }
  void finish(std::string& out) override { t_->finish(out); }
  Usage usage() const override { return fromCanonical(t_->usage()); }

 private:
  std::unique_ptr<providers::StreamTranslator> t_;
};

using providers::detail::findBytes;

// Could these raw SSE bytes hold (a piece of) a redaction token? A token starts "[[" and is made
// of characters JSON never escapes, so inside a JSON string a piece of one shows as "[[" or as a
// '[' that ends the string ('[' then '"'; the rest of that token follows in a later event, which
// a restorer then holds for); only a \u escape could spell a '[' otherwise. "choices":[{ and the
// like are neither. (A '\\' before 'u' may be an escaped backslash: taken as a maybe, which only
// costs a closer look.)
bool candidateAt(const char* p, const char* end) {
  if (p + 1 == end) return true;  // the last byte: what follows is not known
  return *p == '[' ? (p[1] == '[' || p[1] == '"') : p[1] == 'u';
}

// Where the first such piece may start in s, or npos. One pass for both bytes, 16 at a time
// where SSE2 is there (every read of every restoring stream goes through this; two memchr passes
// cost ~0.5 us per request in the protect bench).
std::size_t firstCandidate(std::string_view s) {
  const char* const begin = s.data();
  const char* p = begin;
  const char* const end = p + s.size();
#if defined(__SSE2__)
  const __m128i bracket = _mm_set1_epi8('[');
  const __m128i backslash = _mm_set1_epi8('\\');
  for (; end - p >= 16; p += 16) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    auto mask = static_cast<unsigned>(
        _mm_movemask_epi8(_mm_or_si128(_mm_cmpeq_epi8(v, bracket), _mm_cmpeq_epi8(v, backslash))));
    for (; mask != 0; mask &= mask - 1) {
      const char* c = p + __builtin_ctz(mask);
      if (candidateAt(c, end)) return static_cast<std::size_t>(c - begin);
    }
  }
#endif
  for (; p < end; ++p)
    if ((*p == '[' || *p == '\\') && candidateAt(p, end)) return static_cast<std::size_t>(p - begin);
  return std::string_view::npos;
}

bool mayCarryToken(std::string_view s) {
  return firstCandidate(s) != std::string_view::npos;
}

// The start of the SSE event that holds s[pos]: just after the last blank line ("\n\n" or
// "\n\r\n") before it, or 0.
std::size_t eventStart(std::string_view s, std::size_t pos) {
  while (pos > 0) {
    const void* nl = memrchr(s.data(), '\n', pos);
    if (nl == nullptr) return 0;
    const auto i = static_cast<std::size_t>(static_cast<const char*>(nl) - s.data());
    if (i >= 1 && s[i - 1] == '\n') return i + 1;
    if (i >= 2 && s[i - 1] == '\r' && s[i - 2] == '\n') return i + 1;
    pos = i;
  }
  return 0;
}

// An OpenAI Chat stream whose answer may carry redaction tokens, as the client gets it (whole
// events): events are passed on as they came unless one could hold (part of) a token or a
// restorer still holds bytes; only those are parsed and rewritten (content through a depth-0
// Restorer per choice, tool-call arguments through a depth-1 Restorer per call). Held bytes go
// out with the choice's finish chunk, or in a chunk of their own before [DONE] or at the end.
class ChatRestorer final : public ChatStreamRestorer {
 public:
  ChatRestorer(std::shared_ptr<const redact::TokenCipher> cipher, std::shared_ptr<redact::RestoreStats> stats,
               std::shared_ptr<const redact::SealMemo> memo)
      : cipher_(std::move(cipher)), stats_(std::move(stats)), memo_(std::move(memo)) {}

  void restore(std::string& out) override { restoreFrom(out, 0); }
  void finish(std::string& out) override {
    flushAll(out);
    if (stats_)
      forEach([&](Key, redact::Restorer& r) {
        stats_->restored += r.stats().restored;
        stats_->tampered += r.stats().tampered;
      });
  }

  // Rewrites the events of out[at..]: only a piece that may carry a piece of a token is taken
  // back out and rewritten event by event (the usual read is not copied at all). Events before
  // the first possible piece of a token stay where they are.
  void restoreFrom(std::string& out, std::size_t at) {
    if (!holding()) {
      const std::string_view fresh = std::string_view(out).substr(at);
      const std::size_t c = firstCandidate(fresh);
      if (c == std::string_view::npos) return;
      at += eventStart(fresh, c);
    }
    std::string& tmp = scratch(0);
    tmp.assign(out, at, std::string::npos);
    out.resize(at);
    process(tmp, out);
  }

 private:
  using Key = std::pair<std::int64_t, std::int64_t>;  // (choice, tool index; -1: content)

  // Buffers used within one call and dropped after it, per thread rather than per stream so a
  // stream costs no allocation for them: 0 the read being rewritten, 1 a decoded content string,
  // 2 its restored text.
  static std::string& scratch(int i) {
    thread_local std::array<std::string, 3> buffers;
    return buffers[static_cast<std::size_t>(i)];
  }

  static constexpr Key kContent0{0, -1};  // choice 0's text: the one restorer nearly every stream needs

  redact::Restorer& restorer(Key k) {
    if (k == kContent0) {
      if (!content0_) content0_.emplace(*cipher_, 0, memo_.get());
      return *content0_;
    }
    auto& r = restorers_[k];
    if (!r) r = std::make_unique<redact::Restorer>(*cipher_, k.second < 0 ? 0 : 1, memo_.get());
    return *r;
  }
  // fn(Key, Restorer&) for every restorer, in key order.
  template <class Fn>
  void forEach(Fn&& fn) {
    if (content0_) fn(kContent0, *content0_);
    for (auto& [k, r] : restorers_) fn(k, *r);
  }
  bool holding() const {
    if (content0_ && content0_->heldBytes() > 0) return true;
    for (const auto& [k, r] : restorers_)
      if (r->heldBytes() > 0) return true;
    return false;
  }

  void process(std::string_view s, std::string& out) {
    std::size_t pos = 0;
    while (pos < s.size()) {
      // The event ends at a blank line: "\n\n" or "\n\r\n" (one scan, '\n' by '\n').
      std::size_t next = std::string_view::npos;
      for (std::size_t nl = s.find('\n', pos); nl != std::string_view::npos; nl = s.find('\n', nl + 1)) {
        if (nl + 1 < s.size() && s[nl + 1] == '\n') {
          next = nl + 2;
          break;
        }
        if (nl + 2 < s.size() && s[nl + 1] == '\r' && s[nl + 2] == '\n') {
          next = nl + 3;
          break;
        }
      }
      if (next == std::string_view::npos) {
        out.append(s.substr(pos));  // an unfinished event at the end of the stream
        return;
      }
      event(s.substr(pos, next - pos), out);
      pos = next;
    }
  }

  void event(std::string_view ev, std::string& out) {
    if (!holding() && !mayCarryToken(ev)) {
      out.append(ev);
      return;
    }
    const std::size_t d = ev.starts_with("data:") ? 0 : findBytes(ev, "data:");
    if (d == std::string_view::npos) {
      out.append(ev);
      return;
    }
    std::string_view data = ev.substr(d + 5);
    while (!data.empty() && data.front() == ' ') data.remove_prefix(1);
    if (data.starts_with("[DONE]")) {
      flushAll(out);
      out.append(ev);
      return;
    }
    if (spliceContent(ev, out)) return;
    boost::system::error_code ec;
    json::value v = sluice::parseJson(data, ec);
    if (ec || !v.is_object()) {
      out.append(ev);
      return;
    }
    auto& o = v.as_object();
    rememberMeta(o);
    if (auto* choices = o.if_contains("choices"); choices && choices->is_array()) {
      for (auto& c : choices->as_array()) {
        if (!c.is_object()) continue;
        auto& co = c.as_object();
        const std::int64_t idx = intAt(co, "index") < 0 ? 0 : intAt(co, "index");
        auto* delta = co.if_contains("delta");
        if (!delta || !delta->is_object()) continue;
        auto& dobj = delta->as_object();
        if (auto* content = dobj.if_contains("content"); content && content->is_string()) {
          std::string restored;
          restorer({idx, -1}).feed(content->as_string(), restored);
          *content = restored;
        }
        if (auto* tcs = dobj.if_contains("tool_calls"); tcs && tcs->is_array()) {
          for (auto& tc : tcs->as_array()) {
            if (!tc.is_object()) continue;
            const std::int64_t k = intAt(tc.as_object(), "index") < 0 ? 0 : intAt(tc.as_object(), "index");
            auto* fn = tc.as_object().if_contains("function");
            if (!fn || !fn->is_object()) continue;
            if (auto* args = fn->as_object().if_contains("arguments"); args && args->is_string()) {
              std::string restored;
              restorer({idx, k}).feed(args->as_string(), restored);
              *args = restored;
            }
          }
        }
        // The choice ends here: whatever its restorers hold goes out with this chunk.
        if (const auto* fr = co.if_contains("finish_reason"); fr && !fr->is_null()) flushInto(idx, dobj);
      }
    }
    out.append("data: ").append(json::serialize(v)).append("\n\n");
  }

  // The usual chunk, one choice with a text delta and no finish, is rewritten in place: only
  // the content string is decoded, restored and spliced back (no parse of the whole event).
  // False: not that shape; the caller parses the event.
  bool spliceContent(std::string_view ev, std::string& out) {
    static constexpr std::string_view kContent = "content\":\"";
    // A stream's content chunks differ only in their text: once one passed the checks below,
    // an event with the very same bytes before and after its content string is that shape too.
    bool escaped = false;
    if (!shapePrefix_.empty() && ev.starts_with(shapePrefix_)) {
      const std::size_t begin = shapePrefix_.size();
      const std::size_t end = stringEnd(ev, begin, escaped);
      if (end != std::string_view::npos && ev.substr(end) == shapeSuffix_) return splice(ev, begin, end, escaped, out);
      escaped = false;
    }
    const std::size_t at = findBytes(ev, kContent);
    if (at == std::string_view::npos || at == 0 || ev[at - 1] != '"') return false;
    const std::size_t begin = at + kContent.size();
    const std::size_t end = stringEnd(ev, begin, escaped);
    if (end == std::string_view::npos) return false;
    const std::string_view raw = ev.substr(begin, end - begin);  // decoded by splice() when escaped
    // Nothing to restore in this text and nothing held anywhere: the event goes out as it came.
    if (!escaped && raw.find('[') == std::string_view::npos && !holding() &&
        findBytes(ev, "tool_calls", end) == std::string_view::npos) {
      out.append(ev);
      return true;
    }
    // Rewritten in place only in the usual shape: one content delta of choice 0, no tool calls,
    // no finish (a finish flushes what is held, which the parsing path does).
    if (findBytes(ev, kContent, end) != std::string_view::npos ||
        findBytes(ev, "tool_calls") != std::string_view::npos ||
        findBytes(ev, "\"finish_reason\":null") == std::string_view::npos)
      return false;
    const std::size_t idx = findBytes(ev, "\"index\":");
    if (idx == std::string_view::npos || findBytes(ev, "\"index\":", idx + 1) != std::string_view::npos) return false;
    if (ev.compare(idx + 8, 2, "0,") != 0 && ev.compare(idx + 8, 2, "0}") != 0) return false;
    shapePrefix_.assign(ev.substr(0, begin));
    shapeSuffix_.assign(ev.substr(end));
    return splice(ev, begin, end, escaped, out);
  }

  // End of the JSON string whose text starts at `begin` (its closing quote), or npos.
  static std::size_t stringEnd(std::string_view ev, std::size_t begin, bool& escaped) {
    for (std::size_t end = begin; end < ev.size(); ++end) {
      const char c = ev[end];
      if (c == '"') return end;
      if (c == '\\') {
        escaped = true;
        ++end;  // skip the escaped character
      }
    }
    return std::string_view::npos;
  }

  // The event with its content string [begin, end) restored through choice 0's restorer.
  bool splice(std::string_view ev, std::size_t begin, std::size_t end, bool escaped, std::string& out) {
    std::string_view raw = ev.substr(begin, end - begin);
    if (escaped) {
      boost::system::error_code ec;
      json::value lit = sluice::parseJson(ev.substr(begin - 1, end - begin + 2), ec);
      if (ec || !lit.is_string()) return false;
      std::string& decoded = scratch(1);
      decoded.assign(lit.as_string().data(), lit.as_string().size());
      raw = decoded;
    }
    auto& r = restorer({0, -1});
    std::string& restored = scratch(2);
    restored.clear();
    r.feed(raw, restored);
    out.append(ev.substr(0, begin));
    redact::appendJsonEscaped(out, restored);
    out.append(ev.substr(end));
    return true;
  }

  // id / created / model of a chunk without parsing it (for a closing chunk of held bytes).
  void rememberMetaRaw(std::string_view ev) {
    auto str = [&](std::string_view key, std::string& to) {
      const auto k = findBytes(ev, key);
      if (k == std::string_view::npos) return;
      const auto b = k + key.size();
      const auto e = ev.find('"', b);
      if (e != std::string_view::npos) to.assign(ev.substr(b, e - b));
    };
    str("\"id\":\"", id_);
    str("\"model\":\"", model_);
    if (const auto k = findBytes(ev, "\"created\":"); k != std::string_view::npos) {
      std::int64_t v = 0;
      for (std::size_t i = k + 10; i < ev.size() && ev[i] >= '0' && ev[i] <= '9'; ++i) v = v * 10 + (ev[i] - '0');
      if (v > 0) created_ = v;
    }
  }

  void flushInto(std::int64_t idx, json::object& delta) {
    forEach([&](Key k, redact::Restorer& r) {
      if (k.first != idx || r.heldBytes() == 0) return;
      std::string rest;
      r.finish(rest);
      if (k.second < 0) {
        std::string content = delta.contains("content") && delta["content"].is_string()
                                  ? std::string(delta["content"].as_string())
                                  : std::string();
        delta["content"] = content + rest;
      } else {
        auto& tcs = delta["tool_calls"];
        if (!tcs.is_array()) tcs = json::array{};
        tcs.as_array().push_back(json::object{{"index", k.second}, {"function", json::object{{"arguments", rest}}}});
      }
    });
  }

  void flushAll(std::string& out) {
    if (!holding()) return;
    // A closing chunk of its own: id, created and model as in the stream's content chunks.
    if (id_.empty() && !shapePrefix_.empty()) {
      rememberMetaRaw(shapeSuffix_);
      rememberMetaRaw(shapePrefix_);
    }
    std::map<std::int64_t, json::object> deltas;  // one per choice with held bytes
    forEach([&](Key k, redact::Restorer& r) {
      if (r.heldBytes() > 0) deltas[k.first];
    });
    for (auto& [idx, delta] : deltas) flushInto(idx, delta);
    json::array choices;
    for (auto& [idx, delta] : deltas)
      choices.push_back(json::object{{"index", idx}, {"delta", std::move(delta)}, {"finish_reason", nullptr}});
    json::object chunk{{"id", id_},
                       {"object", "chat.completion.chunk"},
                       {"created", created_},
                       {"model", model_},
                       {"choices", std::move(choices)}};
    out.append("data: ").append(json::serialize(chunk)).append("\n\n");
  }

  void rememberMeta(const json::object& o) {
    if (const auto* v = o.if_contains("id"); v && v->is_string()) id_ = v->as_string();
    if (const auto* v = o.if_contains("model"); v && v->is_string()) model_ = v->as_string();
    if (const auto c = intAt(o, "created"); c >= 0) created_ = c;
  }

  std::shared_ptr<const redact::TokenCipher> cipher_;
  std::shared_ptr<redact::RestoreStats> stats_;
  std::shared_ptr<const redact::SealMemo> memo_;
  std::optional<redact::Restorer> content0_;
  std::map<Key, std::unique_ptr<redact::Restorer>> restorers_;  // the others
  std::string shapePrefix_, shapeSuffix_;                       // around the content string of a checked chunk
  std::string id_, model_;
  std::int64_t created_ = 0;
};

// A same-format OpenAI Chat tap that also restores: the plain tap, then the restorer on what
// it gave.
class RestoringChatTap final : public StreamTap {
 public:
  RestoringChatTap(bool strip, std::shared_ptr<const redact::TokenCipher> cipher,
                   std::shared_ptr<redact::RestoreStats> stats, std::shared_ptr<const redact::SealMemo> memo)
      : f_(strip), r_(std::move(cipher), std::move(stats), std::move(memo)) {}
  bool feed(std::string_view in, std::string& out) override {
    const std::size_t at = out.size();
    if (!f_.feed(in, out)) return false;
    r_.restoreFrom(out, at);
    return true;
  }
  void finish(std::string& out) override {
    const std::size_t at = out.size();
    out.append(f_.leftover());
    r_.restoreFrom(out, at);
    r_.finish(out);
  }
  Usage usage() const override { return f_.usage(); }

 private:
  providers::openai::StreamFilter f_;
  ChatRestorer r_;
};

}  // namespace

std::unique_ptr<ChatStreamRestorer> makeChatStreamRestorer(std::shared_ptr<const redact::TokenCipher> cipher,
                                                           std::shared_ptr<redact::RestoreStats> stats,
                                                           std::shared_ptr<const redact::SealMemo> memo) {
  return std::make_unique<ChatRestorer>(std::move(cipher), std::move(stats), std::move(memo));
}

Usage fromCanonical(const providers::Usage& u) {
  Usage out;
  if (!u.known()) return out;
  out.prompt_tokens = u.input < 0 ? 0 : u.input;
  out.completion_tokens = u.output < 0 ? 0 : u.output;
  out.cached_tokens = u.cached < 0 ? 0 : u.cached;
  out.cache_write_tokens = u.cache_creation < 0 ? 0 : u.cache_creation;
  out.reasoning_tokens = u.reasoning < 0 ? 0 : u.reasoning;
  return out;
}

std::unique_ptr<StreamTap> makeTranslatingTap(std::unique_ptr<providers::StreamTranslator> t) {
  return std::make_unique<TranslatingTap>(std::move(t));
}

std::unique_ptr<StreamTap> makeRestoringChatTap(bool strip_usage, std::shared_ptr<const redact::TokenCipher> cipher,
                                                std::shared_ptr<redact::RestoreStats> stats,
                                                std::shared_ptr<const redact::SealMemo> memo) {
  return std::make_unique<RestoringChatTap>(strip_usage, std::move(cipher), std::move(stats), std::move(memo));
}

namespace {
class ByteTap final : public StreamTap {
 public:
  bool feed(std::string_view in, std::string& out) override {
    out.append(in);
    return true;
  }
  void finish(std::string&) override {}
  Usage usage() const override { return {}; }
};
}  // namespace

std::unique_ptr<StreamTap> makeByteTap() {
  return std::make_unique<ByteTap>();
}

std::unique_ptr<StreamTap> makeStreamTap(Wire w, bool strip_usage) {
  switch (w) {
    case Wire::Anthropic:
      return std::make_unique<AnthropicTap>();
    case Wire::Gemini:
      return std::make_unique<GeminiTap>();
    case Wire::Bedrock:  // binary frames, not events: passed on as they are (a Bedrock stream is
      return makeByteTap();  // always translated, so this tap is never asked for in practice)
    case Wire::OpenAI:
      break;
  }
  return std::make_unique<OpenAITap>(strip_usage);
}

bool usageFromBody(Wire w, std::string_view body, Usage& usage) {
  if (w == Wire::OpenAI) return providers::openai::parseUsageFromBody(body, usage);
  boost::system::error_code ec;
  auto v = sluice::parseJson(body, ec);
  if (ec || !v.is_object()) return false;
  const auto& o = v.as_object();
  if (w == Wire::Anthropic) {
    const auto* u = o.if_contains("usage");
    if (!u || !u->is_object()) return false;
    anthropicUsage(u->as_object(), usage, false);
    return usage.known();
  }
  const auto* m = o.if_contains("usageMetadata");
  if (!m || !m->is_object()) return false;
  geminiUsage(m->as_object(), usage);
  return true;
}

}  // namespace sluice::gateway
