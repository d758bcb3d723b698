#include "mock/MockKnobs.hpp"

#include <fstream>
#include <sstream>

#include "mock/OAuthMock.hpp"

#include "cloud/SigV4.hpp"

#include <charconv>
#include <cmath>

namespace sluice::mock {

namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

std::optional<std::string> intHeader(const http::Request& req, std::string_view name, int lo, int hi, int& out) {
  auto it = req.find(name);
  if (it == req.end()) return std::nullopt;
  std::string_view v = trim(it->value());
  int x = 0;
  auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), x);
  if (ec != std::errc() || p != v.data() + v.size() || v.empty() || x < lo || x > hi) {
    std::string msg(name);
    msg.append(" must be an integer from ").append(std::to_string(lo)).append(" to ").append(std::to_string(hi));
    msg.append(", got '").append(v).append("'");
    return msg;
  }
  out = x;
  return std::nullopt;
}

std::optional<std::string> rateHeader(const http::Request& req, std::string_view name, double& out) {
  auto it = req.find(name);
  if (it == req.end()) return std::nullopt;
  std::string v(trim(it->value()));
  char* end = nullptr;
  double x = v.empty() ? NAN : std::strtod(v.c_str(), &end);
  if (v.empty() || end != v.c_str() + v.size() || !(x >= 0.0 && x <= 1.0)) {
    std::string msg(name);  // appended piecewise: g++ 12 warns falsely on a chain of operator+
    msg.append(" must be a number from 0 to 1, got '").append(v).append("'");
    return msg;
  }
  out = x;
  return std::nullopt;
}

// x-mock-usage: comma-separated NAME=N, each name once at most.
std::optional<std::string> usageHeader(const http::Request& req, ExtraUsage& out) {
  auto it = req.find("x-mock-usage");
  if (it == req.end()) return std::nullopt;
  std::string_view rest = it->value();
  auto bad = [&](std::string_view why) {
    std::string msg = "x-mock-usage ";
    msg.append(why).append(" (expected cache_read=N,cache_write=N,reasoning=N), got '");
    msg.append(it->value()).append("'");
    return msg;
  };
  ExtraUsage u;
  bool seen[3] = {false, false, false};
  while (!rest.empty()) {
    const auto comma = rest.find(',');
    std::string_view item = trim(rest.substr(0, comma));
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
    const auto eq = item.find('=');
    if (eq == std::string_view::npos) return bad("has an item without '='");
    const std::string_view name = trim(item.substr(0, eq)), value = trim(item.substr(eq + 1));
    const int which = name == "cache_read" ? 0 : name == "cache_write" ? 1 : name == "reasoning" ? 2 : -1;
    if (which < 0) return bad("names an unknown count");
    if (seen[which]) return bad("names a count twice");
    seen[which] = true;
    std::int64_t n = 0;
    auto [p, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
    if (value.empty() || ec != std::errc() || p != value.data() + value.size() || n < 0 || n > 1'000'000'000)
      return bad("needs counts from 0 to 1000000000");
    (which == 0 ? u.cache_read : which == 1 ? u.cache_write : u.reasoning) = n;
  }
  out = u;
  return std::nullopt;
}

}  // namespace

MockKnobs MockKnobs::fromOptions(const MockOptions& o) {
  MockKnobs k;
  k.ttfb_ms = o.ttfb_ms;
  k.chunks = o.chunks;
  k.chunk_interval_ms = o.chunk_interval_ms;
  k.fail_rate = o.fail_rate;
  k.fail_status = o.fail_status;
  k.reset_after = o.reset_after;
  k.echo_key = o.echo_key;
  k.error_event_rate = o.error_event_rate;
  k.error_event_after = o.error_event_after;
  k.stall_after = o.stall_after;
  k.stall_rate = o.stall_rate;
  k.slow_rate = o.slow_rate;
  k.slow_ms = o.slow_ms;
  return k;
}

std::optional<std::string> validateOptions(const MockOptions& o) {
  auto range = [](std::string_view name, long long v, long long lo, long long hi) -> std::optional<std::string> {
    if (v >= lo && v <= hi) return std::nullopt;
    return "--" + std::string(name) + " must be from " + std::to_string(lo) + " to " + std::to_string(hi) +
           ", got " + std::to_string(v);
  };
  if (auto e = range("workers", o.workers, 0, 1024)) return e;
  if (auto e = range("token-lifetime-s", o.token_lifetime_s, 1, 86400)) return e;
  for (const auto& f : o.google_accounts) {
    std::ifstream in(f, std::ios::binary);
    std::stringstream text;
    text << in.rdbuf();
    std::string why;
    if (!in || !googleAccountFromJson(text.str(), &why)) return "--google-sa " + f + ": " + (in ? why : "cannot read it");
  }
  for (const auto& c : o.entra_clients)
    if (c.find(':') == std::string::npos || c.front() == ':') return "--entra-client must be CLIENT_ID:SECRET";
  if (auto e = range("ttfb-ms", o.ttfb_ms, 0, kMaxKnobDelayMs)) return e;
  if (auto e = range("chunks", o.chunks, 0, kMaxKnobChunks)) return e;
  if (auto e = range("chunk-interval-ms", o.chunk_interval_ms, 0, kMaxKnobDelayMs)) return e;
  if (auto e = range("fail-status", o.fail_status, 400, 599)) return e;
  if (auto e = range("reset-after", o.reset_after, -1, kMaxKnobChunks)) return e;
  if (auto e = range("error-event-after", o.error_event_after, 0, kMaxKnobChunks)) return e;
  if (auto e = range("stall-after", o.stall_after, -1, kMaxKnobChunks)) return e;
  if (auto e = range("slow-ms", o.slow_ms, 0, kMaxKnobDelayMs)) return e;
  for (auto [name, rate] : {std::pair<const char*, double>{"fail-rate", o.fail_rate},
                            {"error-event-rate", o.error_event_rate},
                            {"stall-rate", o.stall_rate},
                            {"slow-rate", o.slow_rate}}) {
    if (!(rate >= 0.0 && rate <= 1.0)) return std::string("--") + name + " must be from 0 to 1, got " + std::to_string(rate);
  }
  for (const auto& k : o.aws_keys)
    if (!cloud::parseAwsKey(k)) return std::string("--aws-key must be ACCESS_KEY_ID:SECRET[:SESSION_TOKEN]");
  return std::nullopt;
}

std::optional<std::string> applyKnobHeaders(const http::Request& req, MockKnobs& k) {
  if (auto e = intHeader(req, "x-mock-ttfb-ms", 0, kMaxKnobDelayMs, k.ttfb_ms)) return e;
  if (auto e = intHeader(req, "x-mock-chunks", 0, kMaxKnobChunks, k.chunks)) return e;
  if (auto e = intHeader(req, "x-mock-chunk-interval-ms", 0, kMaxKnobDelayMs, k.chunk_interval_ms)) return e;
  if (auto e = rateHeader(req, "x-mock-fail-rate", k.fail_rate)) return e;
  if (auto e = intHeader(req, "x-mock-fail-status", 400, 599, k.fail_status)) return e;
  if (auto e = intHeader(req, "x-mock-reset-after", -1, kMaxKnobChunks, k.reset_after)) return e;
  int retry = -1;
  if (auto e = intHeader(req, "x-mock-retry-after", 0, 86'400, retry)) return e;
  if (retry >= 0) k.retry_after_s = retry;
  if (auto it = req.find("x-mock-fail-body"); it != req.end()) k.fail_body = std::string(it->value());
  if (auto it = req.find("x-mock-fail-key"); it != req.end()) k.fail_key = std::string(it->value());
  if (auto e = intHeader(req, "x-mock-chunk-bytes", 0, 1 << 20, k.piece_bytes)) return e;
  if (auto e = rateHeader(req, "x-mock-error-event-rate", k.error_event_rate)) return e;
  if (auto e = intHeader(req, "x-mock-error-event-after", 0, kMaxKnobChunks, k.error_event_after)) return e;
  if (auto e = intHeader(req, "x-mock-stall-after", -1, kMaxKnobChunks, k.stall_after)) return e;
  if (auto e = rateHeader(req, "x-mock-stall-rate", k.stall_rate)) return e;
  if (auto e = rateHeader(req, "x-mock-slow-rate", k.slow_rate)) return e;
  if (auto e = intHeader(req, "x-mock-slow-ms", 0, kMaxKnobDelayMs, k.slow_ms)) return e;
  if (auto e = usageHeader(req, k.usage)) return e;
  for (auto [name, flag] : {std::pair<std::string_view, bool*>{"x-mock-echo", &k.echo}, {"x-mock-echo-key", &k.echo_key}}) {
    auto it = req.find(name);
    if (it == req.end()) continue;
    const auto v = it->value();
    if (v == "1" || v == "true") *flag = true;
    else if (v == "0" || v == "false") *flag = false;
    else return std::string(name) + " must be 1, true, 0 or false";
  }
  return std::nullopt;
}

}  // namespace sluice::mock
