#include "gateway/StreamTaps.hpp"

#include <boost/json/parse.hpp>
#include <boost/json/value.hpp>

#include <cstring>

#include "providers/CodecUtil.hpp"

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

// Anthropic usage object: input_tokens excludes cache reads, so add them for the total.
void anthropicUsage(const json::object& u, Usage& usage, bool output_only) {
  if (!output_only) {
    auto in = intAt(u, "input_tokens");
    auto read = intAt(u, "cache_read_input_tokens");
    auto created = intAt(u, "cache_creation_input_tokens");
    if (in >= 0) usage.prompt_tokens = in + std::max<std::int64_t>(read, 0) + std::max<std::int64_t>(created, 0);
    if (read >= 0) usage.cached_tokens = read;
  }
  auto out = intAt(u, "output_tokens");
  if (out >= 0) usage.completion_tokens = out;
  if (usage.prompt_tokens < 0 && usage.completion_tokens >= 0) usage.prompt_tokens = 0;
}

void geminiUsage(const json::object& m, Usage& usage) {
  auto p = intAt(m, "promptTokenCount");
  auto c = intAt(m, "candidatesTokenCount");
  auto t = intAt(m, "thoughtsTokenCount");
  auto cached = intAt(m, "cachedContentTokenCount");
  usage.prompt_tokens = p < 0 ? 0 : p;
  usage.completion_tokens = (c < 0 ? 0 : c) + (t < 0 ? 0 : t);
  if (cached >= 0) usage.cached_tokens = cached;
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
      auto v = json::parse(data, ec);
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

}  // namespace

Usage fromCanonical(const providers::Usage& u) {
  Usage out;
  if (!u.known()) return out;
  out.prompt_tokens = u.input < 0 ? 0 : u.input;
  out.completion_tokens = u.output < 0 ? 0 : u.output;
  out.cached_tokens = u.cached < 0 ? 0 : u.cached;
  return out;
}

std::unique_ptr<StreamTap> makeTranslatingTap(std::unique_ptr<providers::StreamTranslator> t) {
  return std::make_unique<TranslatingTap>(std::move(t));
}

std::unique_ptr<StreamTap> makeStreamTap(Wire w, bool strip_usage) {
  switch (w) {
    case Wire::Anthropic: return std::make_unique<AnthropicTap>();
    case Wire::Gemini: return std::make_unique<GeminiTap>();
    case Wire::OpenAI: break;
  }
  return std::make_unique<OpenAITap>(strip_usage);
}

bool usageFromBody(Wire w, std::string_view body, Usage& usage) {
  if (w == Wire::OpenAI) return providers::openai::parseUsageFromBody(body, usage);
  boost::system::error_code ec;
  auto v = json::parse(body, ec);
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
