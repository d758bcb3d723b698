#include "admin/StatsWindow.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <charconv>

#include "admin/Fields.hpp"
#include "store/Stats.hpp"

namespace sluice::admin {
namespace json = boost::json;

namespace {

constexpr std::int64_t kMaxUnixMs = 253'402'300'799'999;  // 9999-12-31T23:59:59.999Z
// Steps a chart reads well at, in seconds.
constexpr std::array<std::int64_t, 18> kRoundSteps = {1,   2,   5,    10,   15,   30,    60,    120,   300,
                                                      600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400};

// The query value of `name`, if present and non-empty, as a whole number in [lo, hi].
std::optional<std::int64_t> wholeNumber(const std::map<std::string, std::string>& query, const std::string& name,
                                        std::int64_t lo, std::int64_t hi, const char* what) {
  const auto it = query.find(name);
  if (it == query.end() || it->second.empty()) return std::nullopt;
  const std::string& s = it->second;
  std::int64_t v = 0;
  const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || v < lo || v > hi)
    throw FieldError(name, fmt::format("{} must be {} (a whole number from {} to {}); got \"{}\"", name, what, lo, hi,
                                       s.substr(0, 64)));
  return v;
}

json::value optionalMs(const std::optional<std::int64_t>& v) {
  return v ? json::value(*v) : json::value(nullptr);
}

json::object percentilesJson(const store::Percentiles& p, bool with_p99 = true) {
  json::object o{{"p50", optionalMs(p.p50)}, {"p95", optionalMs(p.p95)}};
  if (with_p99) o["p99"] = optionalMs(p.p99);
  return o;
}

void putCounts(json::object& o, const store::StatsCounts& c) {
  o["requests"] = c.requests;
  o["errors"] = c.errors;
  o["input_tokens"] = c.input_tokens;
  o["output_tokens"] = c.output_tokens;
  o["cost_usd"] = c.cost_usd;
}

json::array groupsJson(const std::vector<store::StatsGroup>& groups, bool keys) {
  json::array out;
  for (const auto& g : groups) {
    json::object o;
    if (keys) {
      o["id"] = g.virtual_key_id ? json::value(*g.virtual_key_id) : json::value(nullptr);
      o["name"] = g.name.empty() ? json::value(nullptr) : json::value(g.name);
    } else {
      o["name"] = g.name;
    }
    putCounts(o, g.counts);
    o["latency_ms"] = percentilesJson(g.latency_ms, false);
    out.push_back(std::move(o));
  }
  return out;
}

}  // namespace

std::int64_t autoStatsStepSeconds(std::int64_t since_ms, std::int64_t until_ms, std::int64_t max_buckets) {
  for (const std::int64_t s : kRoundSteps)
    if (store::statsBucketCount(since_ms, until_ms, s * 1000) <= max_buckets) return s;
  // Past the last round step: whole days, as many as it takes.
  std::int64_t s = kRoundSteps.back();
  while (store::statsBucketCount(since_ms, until_ms, s * 1000) > max_buckets) s += kRoundSteps.back();
  return s;
}

StatsWindow parseStatsWindow(const std::map<std::string, std::string>& query, std::int64_t now_ms) {
  const char* unix_ms = "a Unix time in milliseconds";
  const auto since = wholeNumber(query, "since_ms", 0, kMaxUnixMs, unix_ms);
  const auto until = wholeNumber(query, "until_ms", 0, kMaxUnixMs, unix_ms);
  const auto step = wholeNumber(query, "step_s", 1, kStatsMaxWindowMs / 1000, "a step in seconds");
  StatsWindow w;
  w.until_ms = until.value_or(now_ms);
  w.since_ms = since.value_or(std::max<std::int64_t>(0, w.until_ms - kStatsDefaultWindowMs));
  if (w.since_ms >= w.until_ms)
    throw FieldError(since ? "since_ms" : "until_ms",
                     fmt::format("since_ms ({}) must be before until_ms ({}){}", w.since_ms, w.until_ms,
                                 until ? "" : ", which defaults to now"));
  if (w.until_ms - w.since_ms > kStatsMaxWindowMs)
    throw FieldError(since ? "since_ms" : "until_ms",
                     fmt::format("the window since_ms..until_ms spans {:.1f} days; the most is 31 days: move since_ms "
                                 "later or until_ms earlier",
                                 static_cast<double>(w.until_ms - w.since_ms) / 86'400'000.0));
  if (!step) {
    w.step_s = autoStatsStepSeconds(w.since_ms, w.until_ms, kStatsAutoBuckets);
    return w;
  }
  w.step_s = *step;
  const std::int64_t buckets = store::statsBucketCount(w.since_ms, w.until_ms, w.step_s * 1000);
  if (buckets > kStatsMaxBuckets) {
    std::int64_t enough = w.step_s;
    while (store::statsBucketCount(w.since_ms, w.until_ms, enough * 1000) > kStatsMaxBuckets)
      enough = std::max(enough + 1, enough * 5 / 4);
    throw FieldError("step_s", fmt::format("step_s={} makes {} buckets over this window; the most is {}: use step_s={} "
                                           "or more, or leave step_s out for at most {}",
                                           w.step_s, buckets, kStatsMaxBuckets, enough, kStatsAutoBuckets));
  }
  return w;
}

json::object statsJson(const StatsWindow& w, const store::StatsResult& s) {
  json::array series;
  series.reserve(s.series.size());
  for (const auto& b : s.series) {
    json::object o{{"t_ms", b.t_ms}};
    putCounts(o, b.counts);
    o["ttfb_ms"] = percentilesJson(b.ttfb_ms);
    o["latency_ms"] = percentilesJson(b.latency_ms);
    series.push_back(std::move(o));
  }
  const auto& t = s.totals;
  json::object totals;
  putCounts(totals, t);
  totals["error_rate"] = t.requests ? static_cast<double>(t.errors) / static_cast<double>(t.requests) : 0.0;
  totals["requests_per_s"] = static_cast<double>(t.requests) * 1000.0 / static_cast<double>(w.until_ms - w.since_ms);
  totals["ttfb_ms"] = percentilesJson(s.ttfb_ms);
  totals["latency_ms"] = percentilesJson(s.latency_ms);
  return json::object{{"since_ms", w.since_ms},
                      {"until_ms", w.until_ms},
                      {"step_s", w.step_s},
                      {"sampled", s.sampled},
                      {"series", std::move(series)},
                      {"totals", std::move(totals)},
                      {"by_channel", groupsJson(s.by_channel, false)},
                      {"by_model", groupsJson(s.by_model, false)},
                      {"by_key", groupsJson(s.by_key, true)}};
}

}  // namespace sluice::admin
