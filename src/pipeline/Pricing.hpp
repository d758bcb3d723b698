// Pricing: what a request cost in USD, from a table of prices per million tokens shipped for
// the common models of each provider, overridden or extended by the config's `pricing:`.
// Built once per config snapshot; immutable, so any thread may use it.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "config/Config.hpp"

namespace sluice::pipeline {

class PriceTable {
 public:
  // The shipped table with `overrides` (exact names or globs) taking precedence.
  explicit PriceTable(const std::map<std::string, config::Price>& overrides = {});

  // The price of a model: an exact entry first (overrides, then shipped), then the longest
  // matching glob; a dated or suffixed name ("gpt-4o-2024-08-06", "claude-sonnet-4-5-20250929",
  // "gemini-2.5-flash-001") falls back to its undated family; "CHANNEL/MODEL" is looked up as
  // MODEL. nullopt: unknown (the request costs 0 and is reported as unpriced).
  std::optional<config::Price> find(std::string_view model) const;

  // The tokens of one request, in the gateway's usage rule (OpenAI's sense, whatever the
  // provider): `input` counts every prompt token, cache reads (`cached`) and writes
  // (`cache_write`) included; `output` every answer token, `reasoning` included.
  struct Tokens {
    std::int64_t input = 0;
    std::int64_t output = 0;
    std::int64_t cached = 0;
    std::int64_t cache_write = 0;
    std::int64_t reasoning = 0;
  };

  // USD for the tokens of one request, each token at one rate and never twice:
  //   (input - cached - cache_write) x input + cached x cached_input + cache_write x cache_write
  //   + (output - reasoning) x output + reasoning x reasoning,
  // an unset cached_input or cache_write at the input rate, an unset reasoning at the output
  // rate. Counts are clamped into their totals (cached first, then writes, of the input), so
  // nonsense usage never makes a negative cost.
  static double cost(const config::Price& p, const Tokens& t);
  static double cost(const config::Price& p, std::int64_t input, std::int64_t output, std::int64_t cached) {
    return cost(p, Tokens{input, output, cached, 0, 0});
  }
  double cost(std::string_view model, const Tokens& t) const;

  // Every entry, overrides applied (for the admin API and docs).
  const std::vector<std::pair<std::string, config::Price>>& entries() const { return entries_; }

 private:
  std::optional<config::Price> lookup(std::string_view model) const;
  std::vector<std::pair<std::string, config::Price>> entries_;  // exact names and globs
  // Looked up on every request: exact names hashed, the (few) globs scanned.
  struct Hash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  std::unordered_map<std::string, config::Price, Hash, std::equal_to<>> exact_;
  std::vector<std::pair<std::string, config::Price>> globs_;
};

}  // namespace sluice::pipeline
