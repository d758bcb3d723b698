#include "StageTestSupport.hpp"

#include <boost/asio/connect.hpp>
#include <boost/asio/read.hpp>

#include <chrono>
#include <stdexcept>

#include "config/Config.hpp"
#include "gateway/Chain.hpp"
#include "pipeline/VirtualKeySecret.hpp"

namespace sluice::gateway::testing {

namespace net = boost::asio;
using net::ip::tcp;

namespace {
routing::HealthRegistry& health() {
  static routing::HealthRegistry h;
  return h;
}
}  // namespace

std::shared_ptr<Snapshot> makeSnapshot(const std::string& yaml, const std::vector<store::VirtualKey>& keys) {
  auto s = std::make_shared<Snapshot>();
  s->cfg = config::parseConfig(yaml, "test.yaml");
  s->router = std::make_unique<routing::Router>(s->cfg, health());
  s->keys = std::make_shared<const pipeline::KeyTable>(keys);
  s->prices = std::make_shared<const pipeline::PriceTable>(s->cfg->pricing);
  s->scrubber = pipeline::SecretScrubber::fromConfig(*s->cfg);
  s->safety = pipeline::Safety::build(*s->cfg);
  s->stages = buildStages(*s);
  return s;
}

store::VirtualKey virtualKey(std::int64_t id, const std::string& name, const std::string& secret) {
  store::VirtualKey k;
  k.id = id;
  k.name = name;
  k.key_hash = pipeline::hashVirtualKeySecret(secret);
  k.key_prefix = pipeline::virtualKeyPrefix(secret);
  return k;
}

StageHarness::StageHarness(std::shared_ptr<Snapshot> snap, cluster::Limiter* limiter, cache::ResponseCache* cache,
                           ResponseStoreService* responses)
    : snap_(std::move(snap)), limiter_(limiter), cache_(cache), responses_(responses) {
  if (limiter_ == nullptr) {
    own_limiter_ = std::make_unique<cluster::Limiter>(cluster::Limiter::Options{});
    limiter_ = own_limiter_.get();
  }
  tcp::acceptor acc(ioc_, tcp::endpoint(net::ip::make_address("127.0.0.1"), 0));
  client_.connect(acc.local_endpoint());
  server_.emplace(acc.accept());
  responder_.emplace(*server_, 0, std::chrono::seconds(5), "127.0.0.1");
  ctx_.id = "req-test";
  ctx_.start = std::chrono::steady_clock::now();
  ctx_.remote = "127.0.0.1";
}

StageHarness::~StageHarness() = default;

void StageHarness::request(std::string path, std::string body,
                           std::vector<std::pair<std::string, std::string>> headers) {
  req_ = http::Request{boost::beast::http::verb::post, path, 11};
  for (const auto& [k, v] : headers) req_.set(k, v);
  req_.body() = std::move(body);
  req_.prepare_payload();
  const auto q = path.find('?');
  ctx_.path = path.substr(0, q);
  if (q != std::string::npos) ctx_.query = path.substr(q + 1);
  std::string_view p = ctx_.path;
  if (p.starts_with("/anthropic/")) {
    call_.wire = Wire::Anthropic;
    p.remove_prefix(10);
  }
  if (p == "/v1/messages") {
    call_.wire = Wire::Anthropic;
    call_.op = std::string(p);
  } else if (p.starts_with("/v1/")) {
    call_.op = std::string(p.substr(3));
  }
  ex_ = std::make_unique<Exchange>(*snap_, Services{pool_, *limiter_, cache_, nullptr, responses_}, req_, *responder_,
                                   ctx_, call_, rec_);
}

Stage* StageHarness::start(std::string_view name) {
  for (const auto& cfg : snap_->stages)
    if (cfg->name() == name) return cfg->start(*ex_, arena_);
  throw std::invalid_argument("no stage named " + std::string(name));
}

Step StageHarness::onRequest(Stage& s) {
  return run(s.onRequest(*ex_));
}

void StageHarness::onComplete(Stage& s) {
  run(s.onComplete(*ex_));
}

void StageHarness::runChain() {
  run(gateway::runChain(*ex_));
}

Step StageHarness::runThrough(std::initializer_list<std::string_view> names) {
  for (const auto name : names) {
    Stage* s = start(name);
    if (!s) continue;
    if (onRequest(*s) == Step::Answered) return Step::Answered;
  }
  return Step::Continue;
}

void StageHarness::onAttempt(Stage& s, UpstreamAttempt& a) {
  run(s.onAttempt(*ex_, a));
}

void StageHarness::onAttemptFailed(Stage& s, const routing::Pick& p) {
  run(s.onAttemptFailed(*ex_, p));
}

Step StageHarness::onResponseEnd(Stage& s, const ResponseEnd& e) {
  return run(s.onResponseEnd(*ex_, e));
}

void StageHarness::onResponseCommit(Stage& s, const ResponseEnd& e) {
  run(s.onResponseCommit(*ex_, e));
}

routing::Pick StageHarness::firstPick() const {
  const auto* ch = ex_->route.candidates.at(0);
  return routing::Pick{ch, &ch->keys.at(0), false};
}

std::string StageHarness::Answer::header(std::string_view name) const {
  std::string needle = "\r\n" + std::string(name) + ": ";
  auto lower = head;
  for (auto& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (auto& c : needle) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  auto at = lower.find(needle);
  if (at == std::string::npos) return {};
  auto from = at + needle.size();
  return head.substr(from, head.find("\r\n", from) - from);
}

StageHarness::Answer StageHarness::answer() {
  // Whatever the responder wrote is in the socket by now (its writes completed in run()).
  client_.non_blocking(true);
  char buf[16384];
  boost::system::error_code ec;
  for (;;) {
    const std::size_t n = client_.read_some(net::buffer(buf), ec);
    if (ec || n == 0) break;
    received_.append(buf, n);
  }
  Answer a;
  const auto end = received_.find("\r\n\r\n");
  if (received_.size() < 12 || end == std::string::npos) return a;
  a.status = std::stoi(received_.substr(9, 3));
  a.head = received_.substr(0, end + 2);
  a.body = received_.substr(end + 4);
  return a;
}

}  // namespace sluice::gateway::testing
