#include "mock/MockStats.hpp"
#include "core/Ascii.hpp"

#include <boost/json.hpp>

#include <algorithm>
#include <cctype>

#include "core/JsonText.hpp"

namespace sluice::mock {

namespace json = boost::json;

std::string MockStats::requestKey(const http::Request& req) {
  if (auto it = req.find(http::bhttp::field::authorization); it != req.end()) {
    std::string_view v = it->value();
    // AWS SigV4 (Bedrock): the access key id names the key; the signature changes every request.
    static constexpr std::string_view kAws = "AWS4-HMAC-SHA256 Credential=";
    if (v.starts_with(kAws)) {
      v.remove_prefix(kAws.size());
      return std::string(v.substr(0, v.find('/')));
    }
    if (v.size() > 7 && sluice::iequals(v.substr(0, 7), "Bearer ")) v.remove_prefix(7);
    while (!v.empty() && v.front() == ' ') v.remove_prefix(1);
    return std::string(v);
  }
  for (std::string_view h : {"x-api-key", "x-goog-api-key", "api-key"})
    if (auto it = req.find(h); it != req.end()) return std::string(it->value());
  std::string_view target = req.target();
  if (auto q = target.find('?'); q != std::string_view::npos) {
    std::string_view query = target.substr(q + 1);
    while (!query.empty()) {
      auto amp = query.find('&');
      std::string_view kv = query.substr(0, amp);
      if (kv.substr(0, 4) == "key=") return std::string(kv.substr(4));
      if (amp == std::string_view::npos) break;
      query.remove_prefix(amp + 1);
    }
  }
  return {};
}

MockStats::Sample MockStats::sample(const http::Request& req) {
  Sample s;
  s.method = std::string(req.method_string());
  std::string_view target = req.target();
  s.path = std::string(target.substr(0, target.find('?')));
  if (auto q = target.find('?'); q != std::string_view::npos) s.query = std::string(target.substr(q + 1));
  s.key = requestKey(req);
  for (const auto& f : req) {
    std::string name(f.name_string());
    std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
    s.headers.emplace_back(std::move(name), std::string(f.value()));
  }
  const auto& body = req.body();
  s.body_truncated = body.size() > kMaxStoredBody;
  s.body = s.body_truncated ? body.substr(0, kMaxStoredBody) : body;
  return s;
}

void MockStats::record(Sample&& s) {
  auto next = std::make_shared<const Sample>(std::move(s));
  std::shared_ptr<const Sample> previous;  // released outside the lock
  std::lock_guard lock(mu_);
  ++requests_;
  if (!next->key.empty()) ++by_key_[next->key];
  ++by_path_[next->path];
  previous = std::exchange(last_, std::move(next));
}

void MockStats::reset() {
  std::lock_guard lock(mu_);
  requests_ = 0;
  streams_completed_ = 0;
  streams_aborted_ = 0;
  token_requests_ = 0;
  token_refusals_ = 0;
  bearer_refusals_ = 0;
  by_key_.clear();
  by_path_.clear();
  last_.reset();
}

std::string MockStats::toJson() const {
  json::object o;
  std::shared_ptr<const Sample> last;
  {
    std::lock_guard lock(mu_);
    o["requests"] = requests_;
    o["streams_completed"] = streams_completed_.load();
    o["streams_aborted"] = streams_aborted_.load();
    o["token_requests"] = token_requests_.load();
    o["token_refusals"] = token_refusals_.load();
    o["bearer_refusals"] = bearer_refusals_.load();
    if (connections_) o["connections_accepted"] = connections_();
    json::object keys, paths;
    for (const auto& [k, n] : by_key_) keys[k] = n;
    for (const auto& [p, n] : by_path_) paths[p] = n;
    o["by_key"] = std::move(keys);
    o["by_path"] = std::move(paths);
    last = last_;
  }
  if (!last) {
    o["last_request"] = nullptr;
    return json::serialize(o);
  }
  json::object lr;
  lr["method"] = last->method;
  lr["path"] = last->path;
  lr["query"] = last->query;
  json::object headers;
  for (const auto& [name, value] : last->headers) {
    if (auto* existing = headers.if_contains(name); existing && existing->is_string())
      *existing = std::string(existing->get_string()) + ", " + value;
    else
      headers[name] = value;
  }
  lr["headers"] = std::move(headers);
  boost::system::error_code ec;
  json::value body = last->body_truncated || last->body.empty() ? json::value() : sluice::parseJson(last->body, ec);
  if (last->body_truncated || last->body.empty() || ec)
    lr["body"] = last->body;
  else
    lr["body"] = std::move(body);
  lr["body_truncated"] = last->body_truncated;
  o["last_request"] = std::move(lr);
  return json::serialize(o);
}

}  // namespace sluice::mock
