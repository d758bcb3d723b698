// GET /admin/api/stats parameters (defaults, the automatic step, every refusal and its
// message), the JSON it answers with, and the CSV helpers of the usage export.
#include "admin/StatsWindow.hpp"

#include <gtest/gtest.h>
#include <boost/json/serialize.hpp>

#include "admin/Csv.hpp"
#include "admin/Fields.hpp"
#include "store/Stats.hpp"

namespace sluice::admin {
namespace {
namespace stats_window_test {

namespace json = boost::json;

constexpr std::int64_t kNow = 1'700'006'400'000;  // a day boundary: aligned to every round step
constexpr std::int64_t kHour = 3'600'000;
constexpr std::int64_t kDay = 86'400'000;

using Query = std::map<std::string, std::string>;

// The parameter a refusal names and its message.
std::pair<std::string, std::string> refusal(const Query& q) {
  try {
    parseStatsWindow(q, kNow);
  } catch (const FieldError& e) {
    return {e.param(), e.what()};
  }
  ADD_FAILURE() << "accepted";
  return {};
}

TEST(StatsWindow, DefaultsToTheLastHourInAtMost120Buckets) {
  const auto w = parseStatsWindow({}, kNow);
  EXPECT_EQ(w.until_ms, kNow);
  EXPECT_EQ(w.since_ms, kNow - kHour);
  EXPECT_EQ(w.step_s, 30);  // aligned: exactly 120 buckets
  const auto unaligned = parseStatsWindow({}, kNow + 1'234);
  EXPECT_EQ(unaligned.step_s, 60);  // 30 s would make 121
  EXPECT_LE(store::statsBucketCount(unaligned.since_ms, unaligned.until_ms, unaligned.step_s * 1000), 120);
  // Empty values count as absent (a form that sends since_ms=).
  const auto blank = parseStatsWindow({{"since_ms", ""}, {"until_ms", ""}, {"step_s", ""}}, kNow);
  EXPECT_EQ(blank.since_ms, kNow - kHour);
}

TEST(StatsWindow, OneBoundGivenTheOtherFollows) {
  const auto since_only = parseStatsWindow({{"since_ms", std::to_string(kNow - 6 * kHour)}}, kNow);
  EXPECT_EQ(since_only.until_ms, kNow);
  EXPECT_EQ(since_only.since_ms, kNow - 6 * kHour);
  EXPECT_EQ(since_only.step_s, 300);
  const auto until_only = parseStatsWindow({{"until_ms", std::to_string(kNow - kDay)}}, kNow);
  EXPECT_EQ(until_only.until_ms, kNow - kDay);
  EXPECT_EQ(until_only.since_ms, kNow - kDay - kHour);
}

TEST(StatsWindow, TheAutomaticStepIsRoundAndKeeps120BucketsAtMost) {
  EXPECT_EQ(autoStatsStepSeconds(kNow, kNow + 60'000, 120), 1);
  EXPECT_EQ(autoStatsStepSeconds(kNow - kDay, kNow, 120), 900);
  EXPECT_EQ(autoStatsStepSeconds(kNow - 7 * kDay, kNow, 120), 7200);
  EXPECT_EQ(autoStatsStepSeconds(kNow - 31 * kDay, kNow, 120), 43200);
  for (const std::int64_t span :
       std::initializer_list<std::int64_t>{1'000, 59'999, kHour + 7, kDay - 1, 3 * kDay + 12'345, 31 * kDay}) {
    const auto w =
        parseStatsWindow({{"since_ms", std::to_string(kNow - span + 3)}, {"until_ms", std::to_string(kNow + 3)}}, kNow);
    EXPECT_LE(store::statsBucketCount(w.since_ms, w.until_ms, w.step_s * 1000), kStatsAutoBuckets) << span;
  }
}

TEST(StatsWindow, AnExplicitStepIsKeptWhenTheBucketsFit) {
  const auto w = parseStatsWindow({{"step_s", "60"}, {"since_ms", std::to_string(kNow - kDay)}}, kNow);
  EXPECT_EQ(w.step_s, 60);  // 1440 buckets: a day by the minute
  const auto odd = parseStatsWindow({{"step_s", "7"}}, kNow);
  EXPECT_EQ(odd.step_s, 7);
}

TEST(StatsWindow, RefusesWhatItCannotUseAndSaysWhatToFix) {
  auto [param, msg] = refusal({{"since_ms", "yesterday"}});
  EXPECT_EQ(param, "since_ms");
  EXPECT_NE(msg.find("Unix time in milliseconds"), std::string::npos) << msg;
  EXPECT_NE(msg.find("yesterday"), std::string::npos) << msg;

  std::tie(param, msg) = refusal({{"until_ms", "-5"}});
  EXPECT_EQ(param, "until_ms");
  std::tie(param, msg) = refusal({{"until_ms", "12.5"}});
  EXPECT_EQ(param, "until_ms");
  std::tie(param, msg) = refusal({{"since_ms", "99999999999999999999999"}});
  EXPECT_EQ(param, "since_ms");

  std::tie(param, msg) = refusal({{"since_ms", std::to_string(kNow)}, {"until_ms", std::to_string(kNow)}});
  EXPECT_EQ(param, "since_ms");
  EXPECT_NE(msg.find("must be before until_ms"), std::string::npos) << msg;
  std::tie(param, msg) = refusal({{"since_ms", std::to_string(kNow + 1)}});
  EXPECT_EQ(param, "since_ms");
  EXPECT_NE(msg.find("defaults to now"), std::string::npos) << msg;

  std::tie(param, msg) = refusal({{"since_ms", std::to_string(kNow - 32 * kDay)}});
  EXPECT_EQ(param, "since_ms");
  EXPECT_NE(msg.find("31 days"), std::string::npos) << msg;
  EXPECT_NE(msg.find("32.0 days"), std::string::npos) << msg;
  // Exactly 31 days is fine.
  EXPECT_EQ(parseStatsWindow({{"since_ms", std::to_string(kNow - 31 * kDay)}}, kNow).since_ms, kNow - 31 * kDay);

  for (const char* bad : {"0", "-1", "1.5", "abc", "2678401", "1e3", " 5"}) {
    std::tie(param, msg) = refusal({{"step_s", bad}});
    EXPECT_EQ(param, "step_s") << bad;
    EXPECT_NE(msg.find("step_s must be"), std::string::npos) << msg;
  }
  std::tie(param, msg) = refusal({{"step_s", "1"}});  // 3600 buckets in the default hour
  EXPECT_EQ(param, "step_s");
  EXPECT_NE(msg.find("3600 buckets"), std::string::npos) << msg;
  EXPECT_NE(msg.find("use step_s=3 or more"), std::string::npos) << msg;
  // The suggestion works.
  EXPECT_EQ(parseStatsWindow({{"step_s", "3"}}, kNow).step_s, 3);
}

TEST(StatsWindow, JsonHasEveryFieldTheDashboardReads) {
  store::StatsResult r;
  r.series.resize(2);
  r.series[0].t_ms = kNow - 60'000;
  r.series[0].counts = {3, 1, 30, 60, 0.5};
  r.series[0].latency_ms = {100, 200, 300};
  r.series[0].ttfb_ms = {10, 20, 30};
  r.series[1].t_ms = kNow;
  r.totals = {3, 1, 30, 60, 0.5};
  r.latency_ms = {100, 200, 300};
  r.by_channel.push_back({"openai", std::nullopt, {3, 1, 30, 60, 0.5}, {100, 200, 300}});
  r.by_key.push_back({"", std::nullopt, {2, 1, 20, 40, 0.25}, {}});
  r.by_key.push_back({"team", 7, {1, 0, 10, 20, 0.25}, {100, 100, 100}});
  const StatsWindow w{kNow - 60'000, kNow, 60};
  const json::object j = statsJson(w, r);
  EXPECT_EQ(j.at("since_ms"), kNow - 60'000);
  EXPECT_EQ(j.at("until_ms"), kNow);
  EXPECT_EQ(j.at("step_s"), 60);
  EXPECT_EQ(j.at("sampled"), false);
  const auto& series = j.at("series").as_array();
  ASSERT_EQ(series.size(), 2u);
  for (const char* k :
       {"t_ms", "requests", "errors", "input_tokens", "output_tokens", "cost_usd", "ttfb_ms", "latency_ms"})
    EXPECT_TRUE(series[0].as_object().contains(k)) << k;
  EXPECT_EQ(series[0].at("latency_ms").at("p95"), 200);
  EXPECT_EQ(series[0].at("ttfb_ms").at("p99"), 30);
  EXPECT_TRUE(series[1].at("latency_ms").at("p50").is_null());
  EXPECT_EQ(series[1].at("requests"), 0);
  const auto& t = j.at("totals").as_object();
  for (const char* k : {"requests", "errors", "error_rate", "requests_per_s", "input_tokens", "output_tokens",
                        "cost_usd", "ttfb_ms", "latency_ms"})
    EXPECT_TRUE(t.contains(k)) << k;
  EXPECT_DOUBLE_EQ(t.at("error_rate").as_double(), 1.0 / 3);
  EXPECT_DOUBLE_EQ(t.at("requests_per_s").as_double(), 3.0 / 60);
  EXPECT_TRUE(t.at("ttfb_ms").at("p50").is_null());
  const auto& ch = j.at("by_channel").as_array();
  ASSERT_EQ(ch.size(), 1u);
  EXPECT_EQ(ch[0].at("name"), "openai");
  EXPECT_EQ(ch[0].at("latency_ms").at("p95"), 200);
  EXPECT_FALSE(ch[0].at("latency_ms").as_object().contains("p99"));
  EXPECT_TRUE(j.at("by_model").as_array().empty());
  const auto& keys = j.at("by_key").as_array();
  ASSERT_EQ(keys.size(), 2u);
  EXPECT_TRUE(keys[0].at("id").is_null());
  EXPECT_TRUE(keys[0].at("name").is_null());
  EXPECT_EQ(keys[1].at("id"), 7);
  EXPECT_EQ(keys[1].at("name"), "team");
  EXPECT_EQ(keys[1].at("requests"), 1);

  r.totals = {};
  EXPECT_EQ(statsJson(w, r).at("totals").at("error_rate").as_double(), 0.0);
}

TEST(Csv, QuotesWhatNeedsQuotingAndDefusesFormulas) {
  auto field = [](std::string_view s) {
    std::string out;
    appendCsvText(out, s);
    return out;
  };
  EXPECT_EQ(field("gpt-4o-mini"), "gpt-4o-mini");
  EXPECT_EQ(field(""), "");
  EXPECT_EQ(field("a,b"), "\"a,b\"");
  EXPECT_EQ(field("say \"hi\""), "\"say \"\"hi\"\"\"");
  EXPECT_EQ(field("two\nlines"), "\"two\nlines\"");
  EXPECT_EQ(field("=HYPERLINK(\"x\")"), "\"'=HYPERLINK(\"\"x\"\")\"");
  EXPECT_EQ(field("+1"), "\"'+1\"");
  EXPECT_EQ(field("-1"), "\"'-1\"");
  EXPECT_EQ(field("@sum"), "\"'@sum\"");
  EXPECT_EQ(field("a-b"), "a-b");
}

TEST(Csv, DollarsArePlainDecimals) {
  EXPECT_EQ(csvUsd(0), "0");
  EXPECT_EQ(csvUsd(1.5), "1.5");
  EXPECT_EQ(csvUsd(0.000125), "0.000125");
  EXPECT_EQ(csvUsd(0.0000012), "0.0000012");
  EXPECT_EQ(csvUsd(12345.25), "12345.25");
  EXPECT_EQ(csvUsd(-0.0), "0");
}

}  // namespace stats_window_test
}  // namespace
}  // namespace sluice::admin
