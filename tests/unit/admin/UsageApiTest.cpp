// GET /admin/api/usage as JSON and as CSV (AdminApi on a real store): the CSV is the JSON's rows,
// one line each, also when a window's edges are summed from the request log rows and its middle
// read from the usage rollups. Both backends (see StoreTestSupport.hpp).
#include <gtest/gtest.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>
#include <boost/json.hpp>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "../store/StoreTestSupport.hpp"
#include "admin/AdminApi.hpp"
#include "store/Store.hpp"

namespace sluice::admin {
namespace {
namespace usage_api_test {

namespace net = boost::asio;
namespace json = boost::json;
using store::testing::Backend;
using store::testing::TestDatabase;

constexpr std::int64_t kHour = 3'600'000;
constexpr std::int64_t kT0 = 1'700'006'400'000;  // 2023-11-15T00:00:00Z

class UsageApiTest : public ::testing::TestWithParam<Backend> {
 protected:
  void SetUp() override {
    store::testing::requireBackend(GetParam());
    if (IsSkipped() || HasFatalFailure()) return;
    db_ = std::make_unique<TestDatabase>(GetParam());
  }

  // The response body of GET /admin/api/usage?<query>, which must be a 200.
  std::string get(AdminApi& api, const std::string& query) {
    net::io_context ioc;
    http::Request req{boost::beast::http::verb::get, "/admin/api/usage?" + query, 11};
    auto done = net::co_spawn(ioc, api.handle(req, "/usage", query, admin::Caller{}), net::use_future);
    ioc.run();
    http::Response res = done.get();
    EXPECT_EQ(res.result_int(), 200U) << query << ": " << res.body();
    return res.body();
  }

  std::unique_ptr<TestDatabase> db_;
};

std::vector<std::vector<std::string>> csvLines(const std::string& text) {
  std::vector<std::vector<std::string>> out;
  for (std::size_t pos = 0; pos < text.size();) {
    const auto end = text.find("\r\n", pos);
    if (end == std::string::npos) {
      ADD_FAILURE() << "a CSV line without CRLF: " << text.substr(pos);
      break;
    }
    std::vector<std::string> fields;
    const std::string line = text.substr(pos, end - pos);
    for (std::size_t f = 0;;) {
      const auto comma = line.find(',', f);
      fields.push_back(line.substr(f, comma == std::string::npos ? std::string::npos : comma - f));
      if (comma == std::string::npos) break;
      f = comma + 1;
    }
    out.push_back(std::move(fields));
    pos = end + 2;
  }
  return out;
}

// Regression: the CSV had a line more than the JSON when one group was in both the edge rows
// and the rollups.
TEST_P(UsageApiTest, CsvAndJsonHaveTheSameRowsWhenTheWindowMixesRowsAndRollups) {
  {
    auto s = store::Store::open(db_->url());
    s->migrate();
    std::vector<store::LogRecord> rows;
    // Inside the window [kT0 + 10 min, kT0 + 3 h + 40 min): the first and last rows in its
    // partial hours, the others in whole hours; one day, key, model and channel.
    for (const std::int64_t t :
         {kT0 + 20 * 60'000, kT0 + kHour + 5, kT0 + 2 * kHour + 5, kT0 + 3 * kHour + 30 * 60'000}) {
      rows.push_back(store::testing::sampleLog(t, "r" + std::to_string(rows.size())));
      rows.back().cost_usd = 0.25;
    }
    s->insertLogs(rows);
  }
  AdminApi api(db_->url());
  const std::string window =
      "from=" + std::to_string(kT0 + 10 * 60'000) + "&to=" + std::to_string(kT0 + 3 * kHour + 40 * 60'000);
  for (const std::string_view by : {"", "model", "day,key,model,channel"}) {
    SCOPED_TRACE(by);
    std::string query = window;
    if (!by.empty()) query.append("&by=").append(by);
    const json::array data = json::parse(get(api, query)).as_object().at("data").as_array();
    const auto lines = csvLines(get(api, query + "&format=csv"));
    ASSERT_EQ(data.size(), 1U) << json::serialize(data);
    ASSERT_EQ(lines.size(), data.size() + 1) << "a header and a line per JSON row";
    const auto& header = lines[0];
    const auto& line = lines[1];
    ASSERT_EQ(line.size(), header.size());
    const json::object& row = data[0].as_object();
    for (std::size_t i = 0; i < header.size(); ++i) {
      const std::string& col = header[i];
      if (col == "day") {
        EXPECT_EQ(row.at("day_ms").as_int64(), kT0);
        EXPECT_EQ(line[i], "2023-11-15");
      } else if (col == "virtual_key_id") {
        EXPECT_EQ(line[i], std::to_string(row.at("virtual_key_id").as_int64()));
      } else if (col == "virtual_key_name") {
        EXPECT_TRUE(row.at("virtual_key_name").is_null());
        EXPECT_EQ(line[i], "");
      } else if (col == "model" || col == "channel") {
        EXPECT_EQ(line[i], row.at(col).as_string());
      } else if (col == "cost_usd") {
        EXPECT_DOUBLE_EQ(row.at(col).as_double(), 1.0);
        EXPECT_EQ(line[i], "1");
      } else {
        EXPECT_EQ(line[i], std::to_string(row.at(col).as_int64())) << col;
      }
    }
    EXPECT_EQ(row.at("requests").as_int64(), 4);
    EXPECT_EQ(row.at("input_tokens").as_int64(), 40);
  }
}

INSTANTIATE_TEST_SUITE_P(Backends, UsageApiTest, ::testing::Values(Backend::Sqlite, Backend::Postgres),
                         store::testing::backendName);

}  // namespace usage_api_test
}  // namespace
}  // namespace sluice::admin
