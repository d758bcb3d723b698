#include "pipeline/Pricing.hpp"

#include <algorithm>
#include <cctype>

#include "routing/Router.hpp"

namespace sluice::pipeline {

namespace {

struct Shipped {
  const char* model;
  double input, output, cached_input;  // USD per million tokens; cached_input < 0: as input
};

// List prices per million tokens (standard tier, prompts up to 200k tokens where a provider
// charges more past that), as published by the providers in late 2025. Cache writes cost the
// input rate, except Anthropic's (kAnthropicCacheWrite x input: the price of its default
// 5-minute cache; 1-hour writes cost 2x, which the usage reports only as a split the gateway
// does not price apart). Reasoning tokens cost the output rate everywhere.
constexpr Shipped kShipped[] = {
    // OpenAI
    {"gpt-5.1", 1.25, 10, 0.125},
    {"gpt-5", 1.25, 10, 0.125},
    {"gpt-5-mini", 0.25, 2, 0.025},
    {"gpt-5-nano", 0.05, 0.40, 0.005},
    {"gpt-4.1", 2, 8, 0.5},
    {"gpt-4.1-mini", 0.40, 1.60, 0.10},
    {"gpt-4.1-nano", 0.10, 0.40, 0.025},
    {"gpt-4o", 2.5, 10, 1.25},
    {"gpt-4o-mini", 0.15, 0.60, 0.075},
    {"gpt-4-turbo", 10, 30, -1},
    {"gpt-4", 30, 60, -1},
    {"gpt-3.5-turbo", 0.50, 1.50, -1},
    {"o1", 15, 60, 7.5},
    {"o1-mini", 1.10, 4.40, 0.55},
    {"o3", 2, 8, 0.5},
    {"o3-mini", 1.10, 4.40, 0.55},
    {"o4-mini", 1.10, 4.40, 0.275},
    {"text-embedding-3-small", 0.02, 0, -1},
    {"text-embedding-3-large", 0.13, 0, -1},
    {"text-embedding-ada-002", 0.10, 0, -1},
    // Anthropic (cache reads at a tenth of input)
    {"claude-opus-4-5", 5, 25, 0.5},
    {"claude-opus-4-1", 15, 75, 1.5},
    {"claude-opus-4", 15, 75, 1.5},
    {"claude-opus-4-0", 15, 75, 1.5},
    {"claude-sonnet-4-5", 3, 15, 0.3},
    {"claude-sonnet-4", 3, 15, 0.3},
    {"claude-sonnet-4-0", 3, 15, 0.3},
    {"claude-3-7-sonnet", 3, 15, 0.3},
    {"claude-3-5-sonnet", 3, 15, 0.3},
    {"claude-haiku-4-5", 1, 5, 0.1},
    {"claude-3-5-haiku", 0.80, 4, 0.08},
    {"claude-3-haiku", 0.25, 1.25, 0.03},
    {"claude-3-opus", 15, 75, 1.5},
    // Google Gemini
    {"gemini-3-pro-preview", 2, 12, 0.2},
    {"gemini-2.5-pro", 1.25, 10, 0.125},
    {"gemini-2.5-flash", 0.30, 2.50, 0.03},
    {"gemini-2.5-flash-lite", 0.10, 0.40, 0.01},
    {"gemini-2.0-flash", 0.10, 0.40, 0.025},
    {"gemini-2.0-flash-lite", 0.075, 0.30, -1},
    {"gemini-1.5-pro", 1.25, 5, 0.3125},
    {"gemini-1.5-flash", 0.075, 0.30, 0.01875},
    {"gemini-embedding-001", 0.15, 0, -1},
};

bool allDigits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
}

// "gpt-4o-2024-08-06" -> "gpt-4o", "claude-sonnet-4-5-20250929" -> "claude-sonnet-4-5",
// "gemini-2.0-flash-001" -> "gemini-2.0-flash", "claude-3-5-sonnet-latest" -> "claude-3-5-sonnet".
// Only date-like or version-like tails go: "claude-opus-4-5" keeps its "-5".
std::string_view undated(std::string_view m) {
  auto tail = [&](std::size_t n) { return m.size() > n ? m.substr(m.size() - n) : std::string_view{}; };
  if (auto t = tail(11); t.size() == 11 && t[0] == '-' && allDigits(t.substr(1, 4)) && t[5] == '-' &&
                         allDigits(t.substr(6, 2)) && t[8] == '-' && allDigits(t.substr(9, 2)))
    return m.substr(0, m.size() - 11);  // -YYYY-MM-DD
  auto dash = m.rfind('-');
  if (dash == std::string_view::npos || dash == 0) return m;
  auto last = m.substr(dash + 1);
  if ((allDigits(last) && (last.size() == 8 || last.size() == 3 || last.size() == 4)) || last == "latest")
    return m.substr(0, dash);
  return m;
}

constexpr double kAnthropicCacheWrite = 1.25;

}  // namespace

PriceTable::PriceTable(const std::map<std::string, config::Price>& overrides) {
  for (const auto& [model, p] : overrides) entries_.emplace_back(model, p);
  for (const auto& s : kShipped) {
    if (overrides.contains(s.model)) continue;
    config::Price p{s.input, s.output, s.cached_input};
    if (std::string_view(s.model).starts_with("claude-")) p.cache_write = s.input * kAnthropicCacheWrite;
    entries_.emplace_back(s.model, p);
  }
  for (const auto& [name, p] : entries_) {
    if (name.find_first_of("*?") == std::string::npos) {
      exact_.emplace(name, p);
    } else {
      globs_.emplace_back(name, p);
    }
  }
}

std::optional<config::Price> PriceTable::lookup(std::string_view model) const {
  for (const auto& [name, p] : entries_)
    if (name == model) return p;
  const config::Price* best = nullptr;
  std::size_t bestLen = 0;
  for (const auto& [name, p] : entries_) {
    if (name.find_first_of("*?") == std::string::npos) continue;
    if (name.size() >= bestLen && routing::globMatch(name, model)) {
      best = &p;
      bestLen = name.size();
    }
  }
  if (best) return *best;
  return std::nullopt;
}

std::optional<config::Price> PriceTable::find(std::string_view model) const {
  if (auto slash = model.find('/'); slash != std::string_view::npos) {
    if (auto p = lookup(model)) return p;  // an override may price a pinned name itself
    model = model.substr(slash + 1);
  }
  for (int i = 0; i < 3; ++i) {
    if (auto p = lookup(model)) return p;
    auto shorter = undated(model);
    if (shorter.size() == model.size()) break;
    model = shorter;
  }
  return std::nullopt;
}

double PriceTable::cost(const config::Price& p, const Tokens& t) {
  const std::int64_t input = std::max<std::int64_t>(t.input, 0);
  const std::int64_t output = std::max<std::int64_t>(t.output, 0);
  const std::int64_t cached = std::clamp<std::int64_t>(t.cached, 0, input);
  const std::int64_t written = std::clamp<std::int64_t>(t.cache_write, 0, input - cached);
  const std::int64_t reasoning = std::clamp<std::int64_t>(t.reasoning, 0, output);
  const double cachedRate = p.cached_input < 0 ? p.input : p.cached_input;
  const double writeRate = p.cache_write < 0 ? p.input : p.cache_write;
  const double reasoningRate = p.reasoning < 0 ? p.output : p.reasoning;
  return (static_cast<double>(input - cached - written) * p.input + static_cast<double>(cached) * cachedRate +
          static_cast<double>(written) * writeRate + static_cast<double>(output - reasoning) * p.output +
          static_cast<double>(reasoning) * reasoningRate) /
         1e6;
}

double PriceTable::cost(std::string_view model, const Tokens& t) const {
  auto p = find(model);
  return p ? cost(*p, t) : 0.0;
}

}  // namespace sluice::pipeline
