#include "admin/AdminApi.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/http/field.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>
#include <fmt/format.h>

#include <charconv>
#include <map>

#include "store/Store.hpp"

namespace sluice::admin {

namespace net = boost::asio;
namespace bhttp = boost::beast::http;
namespace json = boost::json;

struct AdminApi::State {
  std::string url;
  std::unique_ptr<store::Store> store;
  store::Store& get() {
    if (!store) store = store::Store::open(url);
    return *store;
  }
};

namespace {

http::Response jsonResponse(int status, const json::value& v) {
  http::Response res{static_cast<bhttp::status>(status), 11};
  res.set(bhttp::field::content_type, "application/json");
  res.body() = json::serialize(v);
  return res;
}

// Field-level 400: {"error":{"message","type":"invalid_request_error","param"}}.
struct BadField {
  std::string param;
  std::string message;
};

std::map<std::string, std::string> parseQuery(std::string_view q) {
  std::map<std::string, std::string> out;
  while (!q.empty()) {
    auto amp = q.find('&');
    auto part = q.substr(0, amp);
    auto eq = part.find('=');
    out[std::string(part.substr(0, eq))] = eq == std::string_view::npos ? "" : std::string(part.substr(eq + 1));
    if (amp == std::string_view::npos) break;
    q.remove_prefix(amp + 1);
  }
  return out;
}

std::int64_t intParam(const std::map<std::string, std::string>& q, const std::string& name, std::int64_t dflt,
                      std::int64_t lo, std::int64_t hi) {
  auto it = q.find(name);
  if (it == q.end() || it->second.empty()) return dflt;
  std::int64_t v = 0;
  auto [p, ec] = std::from_chars(it->second.data(), it->second.data() + it->second.size(), v);
  if (ec != std::errc() || p != it->second.data() + it->second.size() || v < lo || v > hi)
    throw BadField{name, fmt::format("{} must be an integer from {} to {}", name, lo, hi)};
  return v;
}

json::object logJson(const store::LogEntry& e) {
  const auto& r = e.record;
  boost::system::error_code ec;
  json::value attempts = json::parse(r.attempts, ec);
  if (ec) attempts = json::array{};
  return json::object{{"id", e.id},
                      {"time_ms", r.time_ms},
                      {"request_id", r.request_id},
                      {"channel", r.channel},
                      {"upstream_key", r.upstream_key},
                      {"model", r.model},
                      {"status", r.status},
                      {"stream", r.stream},
                      {"attempts", std::move(attempts)},
                      {"ttfb_ms", r.ttfb_ms},
                      {"duration_ms", r.duration_ms},
                      {"input_tokens", r.input_tokens},
                      {"output_tokens", r.output_tokens},
                      {"cached_tokens", r.cached_tokens},
                      {"cost_usd", r.cost_usd},
                      {"client_addr", r.client_addr},
                      {"user_agent", r.user_agent}};
}

std::int64_t nowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

AdminApi::AdminApi(std::string store_url) : state_(std::make_unique<State>()) { state_->url = std::move(store_url); }

AdminApi::~AdminApi() {
  pool_.join();
}

net::awaitable<http::Response> AdminApi::handle(const http::Request& req, std::string path, std::string query) {
  const bool get = req.method() == bhttp::verb::get;
  // The database work runs on the admin thread; this coroutine resumes on the caller's worker.
  // (The task is a named local: GCC 12 destroys non-trivial temporaries inside a co_await
  // expression twice.)
  auto task = [this, get, path = std::move(path), query = std::move(query)]() -> net::awaitable<http::Response> {
    co_return serve(get, path, query);
  };
  http::Response res = co_await net::co_spawn(pool_, std::move(task), net::use_awaitable);
  co_return res;
}

http::Response AdminApi::serve(bool get, const std::string& path, const std::string& query) {
  try {
    auto q = parseQuery(query);
    if (path == "/logs") {
      if (!get) return jsonResponse(405, json::object{{"error", {{"message", "/admin/api/logs takes GET"}, {"type", "invalid_request_error"}}}});
      store::LogQuery lq;
      if (q.contains("from")) lq.from_ms = intParam(q, "from", 0, 0, INT64_MAX);
      if (q.contains("to")) lq.to_ms = intParam(q, "to", 0, 0, INT64_MAX);
      if (q.contains("status")) lq.status = static_cast<int>(intParam(q, "status", 0, 100, 599));
      if (q.contains("model")) lq.model = q["model"];
      if (q.contains("channel")) lq.channel = q["channel"];
      lq.limit = static_cast<std::size_t>(intParam(q, "limit", 100, 1, static_cast<std::int64_t>(store::kMaxLogPage)));
      lq.cursor = q["cursor"];
      auto page = state_->get().listLogs(lq);
      json::array data;
      for (const auto& e : page.entries) data.push_back(logJson(e));
      json::value next = page.next_cursor.empty() ? json::value(nullptr) : json::value(page.next_cursor);
      return jsonResponse(200, json::object{{"data", std::move(data)}, {"next_cursor", std::move(next)}});
    }
    if (path == "/usage") {
      if (!get) return jsonResponse(405, json::object{{"error", {{"message", "/admin/api/usage takes GET"}, {"type", "invalid_request_error"}}}});
      store::UsageQuery uq;
      uq.to_ms = intParam(q, "to", nowMs() + 1, 0, INT64_MAX);
      uq.from_ms = intParam(q, "from", uq.to_ms - 30LL * 86'400'000, 0, INT64_MAX);
      std::string by = q["by"];
      std::size_t pos = 0;
      while (pos <= by.size() && !by.empty()) {
        auto comma = by.find(',', pos);
        auto dim = by.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
        if (dim == "day") uq.by_day = true;
        else if (dim == "model") uq.by_model = true;
        else if (dim == "channel") uq.by_channel = true;
        else if (dim == "key") uq.by_virtual_key = true;
        else throw BadField{"by", "by takes a comma-separated list of day, model, channel, key; got \"" + dim + "\""};
        if (comma == std::string::npos) break;
        pos = comma + 1;
      }
      if (q.contains("model")) uq.model = q["model"];
      if (q.contains("channel")) uq.channel = q["channel"];
      json::array data;
      for (const auto& u : state_->get().usage(uq)) {
        json::object o{{"requests", u.requests}, {"errors", u.errors}, {"input_tokens", u.input_tokens},
                       {"output_tokens", u.output_tokens}, {"cached_tokens", u.cached_tokens},
                       {"cost_usd", u.cost_usd}};
        if (uq.by_day) o["day_ms"] = u.day_ms;
        if (uq.by_model) o["model"] = u.model;
        if (uq.by_channel) o["channel"] = u.channel;
        if (uq.by_virtual_key) o["virtual_key_id"] = u.virtual_key_id ? json::value(*u.virtual_key_id) : json::value(nullptr);
        data.push_back(std::move(o));
      }
      return jsonResponse(200, json::object{{"data", std::move(data)}, {"from_ms", uq.from_ms}, {"to_ms", uq.to_ms}});
    }
    return jsonResponse(404, json::object{{"error", {{"message", "no admin endpoint " + path}, {"type", "invalid_request_error"}}}});
  } catch (const BadField& b) {
    return jsonResponse(400, json::object{{"error", {{"message", b.message}, {"type", "invalid_request_error"}, {"param", b.param}}}});
  } catch (const store::StoreError& e) {
    if (e.code() != store::StoreErrc::InvalidData) state_->store.reset();  // reconnect next time
    int status = e.code() == store::StoreErrc::InvalidData ? 400 : 503;
    return jsonResponse(status, json::object{{"error", {{"message", std::string("store: ") + e.what()}, {"type", status == 400 ? "invalid_request_error" : "server_error"}}}});
  }
}

}  // namespace sluice::admin
