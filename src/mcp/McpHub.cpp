#include "mcp/McpHub.hpp"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <spdlog/spdlog.h>
#include <sys/wait.h>
#include <unistd.h>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/read_until.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/json/serialize.hpp>

#include <algorithm>
#include <boost/beast/core/string.hpp>
#include <chrono>
#include <cstring>
#include <deque>
#include <functional>
#include <future>
#include <map>

#include "core/JsonText.hpp"
#include "mcp/JsonRpc.hpp"
#include "upstream/Client.hpp"
#include "upstream/Post.hpp"

extern char** environ;

namespace sluice::mcp {

namespace net = boost::asio;
namespace json = boost::json;
using Millis = std::chrono::milliseconds;
using SteadyClock = std::chrono::steady_clock;

namespace {

constexpr Millis kBackoffMin{250};
constexpr Millis kBackoffMax{30'000};
constexpr std::size_t kMaxLineBytes = McpHub::kMaxAnswerBytes;

std::string requestText(std::int64_t id, std::string_view method, const json::object& params) {
  json::object o{{"jsonrpc", "2.0"}, {"id", id}, {"method", method}};
  o["params"] = params;
  return json::serialize(o);
}

CallResult callResultOf(const UpstreamAnswer& a) {
  CallResult r;
  if (!a.ok) {
    r.status = CallResult::Status::Unavailable;
    r.message = a.message;
    return r;
  }
  r.result = a.result;
  if (a.is_error) {
    r.status = CallResult::Status::RpcError;
    r.code = a.code;
    r.message = a.message;
  } else {
    r.status = CallResult::Status::Ok;
  }
  return r;
}

// The transport to one server.
class Transport {
 public:
  virtual ~Transport() = default;
  // Makes a fresh connection (a new process, a new session); "" or why it failed.
  virtual std::string open() = 0;
  virtual net::awaitable<CallResult> request(std::string_view method, const json::object& params, Millis timeout) = 0;
  virtual net::awaitable<bool> notify(std::string_view method, Millis timeout) = 0;
  virtual void setVersion(std::string version) = 0;
  virtual void close() = 0;  // the process killed, the session forgotten

  // initialize, then notifications/initialized, on a fresh connection: "" or why it failed.
  net::awaitable<std::string> handshake(Millis timeout) {
    json::object params{{"protocolVersion", protocolVersions().front()},
                        {"capabilities", json::object{}},
                        {"clientInfo", json::object{{"name", "sluice"}, {"version", SLUICE_VERSION}}}};
    CallResult r = co_await request("initialize", params, timeout);
    if (!r.ok()) co_return "initialize failed: " + r.message;
    const auto* o = r.result.if_object();
    const auto* v = o ? o->if_contains("protocolVersion") : nullptr;
    if (!v || !v->is_string() || !supportedVersion(v->get_string()))
      co_return "it answered initialize without a protocol version this gateway speaks";
    setVersion(std::string(v->get_string()));
    if (!co_await notify("notifications/initialized", timeout)) co_return "it refused notifications/initialized";
    co_return std::string();
  }
};

// Streamable HTTP: each request a POST; the answer a JSON body or an SSE stream.
class HttpTransport final : public Transport {
 public:
  HttpTransport(upstream::Pool& pool, upstream::PostTarget target) : pool_(pool), base_(std::move(target)) {
    base_.accept = "application/json, text/event-stream";
  }
  std::string open() override {
    session_.clear();
    version_.clear();
    return {};
  }
  void setVersion(std::string version) override { version_ = std::move(version); }
  void close() override {
    session_.clear();
    version_.clear();
  }

  // A server that restarted has forgotten the session (404, or 400): a session is opened again, once,
  // and the request sent again within the same deadline, so the client never sees the restart.
  net::awaitable<CallResult> request(std::string_view method, const json::object& params, Millis timeout) override {
    const auto deadline = SteadyClock::now() + timeout;
    const std::string sent = session_;
    bool lost = false;
    auto call = send(method, params, timeout, lost);
    CallResult out = co_await std::move(call);
    if (!lost || sent.empty() || method == "initialize") co_return out;
    if (session_ == sent && !handshaking_) {
      handshaking_ = true;
      session_.clear();
      version_.clear();
      std::string why = co_await handshake(left(deadline));
      handshaking_ = false;
      if (!why.empty()) {
        out.message = "the server ended the session, and opening another failed: " + why;
        co_return out;
      }
    }
    // Another request is opening the new session: wait for it (bounded by the deadline).
    net::steady_timer wait(co_await net::this_coro::executor);
    while (handshaking_ && SteadyClock::now() < deadline) {
      wait.expires_after(Millis(10));
      co_await wait.async_wait(net::as_tuple(net::use_awaitable));
    }
    if (session_.empty() || SteadyClock::now() >= deadline) co_return out;
    auto again = send(method, params, left(deadline), lost);
    out = co_await std::move(again);
    co_return out;
  }

  net::awaitable<bool> notify(std::string_view method, Millis timeout) override {
    json::object o{{"jsonrpc", "2.0"}, {"method", method}};
    const std::string payload = json::serialize(o);
    upstream::PostTarget t = target(timeout);
    upstream::PostResult res = co_await upstream::post(pool_, t, "application/json", payload, 64 * 1024);
    co_return (res.failure == upstream::PostResult::Failure::None) && res.status >= 200 && res.status < 300;
  }

 private:
  static Millis left(SteadyClock::time_point deadline) {
    return std::max(std::chrono::duration_cast<Millis>(deadline - SteadyClock::now()), Millis(1));
  }

  // One POST; `lost`: the server answered 404 to a request that carried a session.
  net::awaitable<CallResult> send(std::string_view method, const json::object& params, Millis timeout, bool& lost) {
    const std::int64_t id = next_id_++;
    const std::string payload = requestText(id, method, params);
    const bool withSession = !session_.empty();
    upstream::PostTarget t = target(timeout);
    t.keep_headers = method == "initialize";
    upstream::PostResult res = co_await upstream::post(pool_, t, "application/json", payload, McpHub::kMaxAnswerBytes);
    CallResult out;
    if (res.failure != upstream::PostResult::Failure::None) {
      out.status = res.timed_out ? CallResult::Status::Timeout : CallResult::Status::Unavailable;
      out.broken = !res.timed_out && res.failure != upstream::PostResult::Failure::Body;
      out.message =
          res.timed_out ? "the server did not answer within the timeout" : "cannot reach the server: " + res.error;
      co_return out;
    }
    // The spec's answer to a session the server does not know is 404; the reference servers
    // (TypeScript SDK) answer 400 "No valid session ID": either means the session is gone.
    if ((res.status == 404 || res.status == 400) && withSession) {
      out.message = "the server ended the session (HTTP " + std::to_string(res.status) + ")";
      out.broken = true;
      lost = true;
      co_return out;
    }
    if (res.status != 200) {
      out.message = "the server answered HTTP " + std::to_string(res.status);
      out.broken = res.status >= 500 || res.status == 400;
      co_return out;
    }
    if (t.keep_headers) {
      for (const auto& [k, v] : res.headers) {
        // Visible ASCII only, as the spec requires: it goes back into a header line.
        if (boost::beast::iequals(k, "mcp-session-id") && !v.empty() && v.size() <= 256 &&
            std::all_of(v.begin(), v.end(), [](char c) { return c >= 0x21 && c <= 0x7e; }))
          session_ = v;
      }
    }
    co_return callResultOf(readUpstreamAnswer(res.content_type, res.body, id));
  }

  upstream::PostTarget target(Millis timeout) const {
    upstream::PostTarget t = base_;
    t.timeout = timeout;
    if (!session_.empty()) t.extra_headers.append("Mcp-Session-Id: ").append(session_).append("\r\n");
    if (!version_.empty()) t.extra_headers.append("MCP-Protocol-Version: ").append(version_).append("\r\n");
    return t;
  }

  upstream::Pool& pool_;
  upstream::PostTarget base_;
  std::string session_;
  std::string version_;
  std::int64_t next_id_ = 1;
  bool handshaking_ = false;  // a request is opening a new session after the old one was lost
};

// stdio: a child process (its own process group), newline-delimited JSON-RPC on its stdin and
// stdout; its stderr is the gateway's.
class StdioTransport final : public Transport {
 public:
  StdioTransport(net::io_context& ioc, std::vector<std::string> argv, std::string name,
                 std::function<void(const std::string&)> onExit)
      : ioc_(ioc), argv_(std::move(argv)), name_(std::move(name)), on_exit_(std::move(onExit)) {}
  ~StdioTransport() override { kill(Millis(0)); }

  std::string open() override {
    kill(Millis(0));
    int in[2] = {-1, -1};
    int out[2] = {-1, -1};
    if (::pipe2(in, O_CLOEXEC) != 0) return std::string("pipe: ") + std::strerror(errno);
    if (::pipe2(out, O_CLOEXEC) != 0) {
      ::close(in[0]);
      ::close(in[1]);
      return std::string("pipe: ") + std::strerror(errno);
    }
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t attr;
    posix_spawn_file_actions_init(&fa);
    posix_spawnattr_init(&attr);
    posix_spawn_file_actions_adddup2(&fa, in[0], STDIN_FILENO);
    posix_spawn_file_actions_adddup2(&fa, out[1], STDOUT_FILENO);
    sigset_t none;
    sigemptyset(&none);
    sigset_t defaults;
    sigemptyset(&defaults);
    sigaddset(&defaults, SIGPIPE);
    sigaddset(&defaults, SIGINT);
    sigaddset(&defaults, SIGTERM);
    sigaddset(&defaults, SIGHUP);
    posix_spawnattr_setsigmask(&attr, &none);
    posix_spawnattr_setsigdefault(&attr, &defaults);
    posix_spawnattr_setpgroup(&attr, 0);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
    std::vector<char*> args;
    for (auto& a : argv_) args.push_back(a.data());
    args.push_back(nullptr);
    pid_t pid = -1;
    const int rc = ::posix_spawnp(&pid, args[0], &fa, &attr, args.data(), environ);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&attr);
    ::close(in[0]);
    ::close(out[1]);
    if (rc != 0) {
      ::close(in[1]);
      ::close(out[0]);
      return "cannot start " + argv_.front() + ": " + std::strerror(rc);
    }
    pid_ = pid;
    ++generation_;
    stdin_ = std::make_unique<net::posix::stream_descriptor>(ioc_, in[1]);
    stdout_ = std::make_unique<net::posix::stream_descriptor>(ioc_, out[0]);
    writes_.clear();
    writing_ = false;
    net::co_spawn(ioc_, readLoop(generation_), net::detached);
    return {};
  }

  void setVersion(std::string) override {}
  void close() override { kill(Millis(2000)); }

  net::awaitable<CallResult> request(std::string_view method, const json::object& params, Millis timeout) override {
    CallResult out;
    if (!stdin_) {
      out.message = "the server process is not running";
      out.broken = true;
      co_return out;
    }
    if (pending_.size() >= McpHub::kMaxPending) {
      out.status = CallResult::Status::Busy;
      out.message = "the server has too many requests in flight";
      co_return out;
    }
    const std::int64_t id = next_id_++;
    const std::uint64_t gen = generation_;
    Pending p(ioc_);
    p.timer.expires_after(timeout);
    pending_.emplace(id, &p);
    send(requestText(id, method, params));
    co_await p.timer.async_wait(net::as_tuple(net::use_awaitable));
    pending_.erase(id);
    if (p.answer) co_return callResultOf(*p.answer);
    if (p.ended || gen != generation_) {
      out.message = "the server process exited";
      out.broken = true;
      co_return out;
    }
    out.status = CallResult::Status::Timeout;
    out.message = "the server did not answer within the timeout";
    co_return out;
  }

  net::awaitable<bool> notify(std::string_view method, Millis) override {
    if (!stdin_) co_return false;
    json::object o{{"jsonrpc", "2.0"}, {"method", method}};
    send(json::serialize(o));
    co_return true;
  }

 private:
  struct Pending {
    explicit Pending(net::io_context& ioc) : timer(ioc) {}
    net::steady_timer timer;
    std::optional<UpstreamAnswer> answer;
    bool ended = false;
  };

  void send(std::string line) {
    if (writes_.size() >= McpHub::kMaxPending * 2) return;  // the request then times out
    line += '\n';
    writes_.push_back(std::move(line));
    if (!writing_) {
      writing_ = true;
      net::co_spawn(ioc_, writeLoop(generation_), net::detached);
    }
  }

  net::awaitable<void> writeLoop(std::uint64_t gen) {
    while (gen == generation_ && stdin_ && !writes_.empty()) {
      std::string line = std::move(writes_.front());
      writes_.pop_front();
      auto [ec, n] = co_await net::async_write(*stdin_, net::buffer(line), net::as_tuple(net::use_awaitable));
      if (ec) break;  // the reader sees the process go
    }
    if (gen == generation_) writing_ = false;
  }

  net::awaitable<void> readLoop(std::uint64_t gen) {
    std::string buf;
    std::string why = "the server process closed its stdout";
    for (;;) {
      if (gen != generation_ || !stdout_) co_return;
      auto [ec, n] = co_await net::async_read_until(*stdout_, net::dynamic_buffer(buf, kMaxLineBytes), '\n',
                                                    net::as_tuple(net::use_awaitable));
      if (gen != generation_) co_return;
      if (ec) {
        if (ec == net::error::not_found) why = "the server wrote a line longer than 16 MiB";
        break;
      }
      std::string_view line(buf.data(), n - 1);
      if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
      handleLine(line);
      buf.erase(0, n);
    }
    // Wake every waiter: they fail as "exited".
    for (auto& [id, p] : pending_) {
      p->ended = true;
      p->timer.cancel();
    }
    on_exit_(why);
  }

  void handleLine(std::string_view line) {
    if (line.empty()) return;
    boost::system::error_code ec;
    json::value v = parseJson(line, ec);
    if (ec || !v.is_object()) return;
    if (auto id = responseId(v)) {
      auto it = pending_.find(*id);
      if (it == pending_.end()) return;
      std::string text(line);
      it->second->answer = readUpstreamAnswer("application/json", text, *id);
      it->second->timer.cancel();
      return;
    }
    // A request of the server's own (ping, roots, sampling): ping is answered, the rest refused.
    const auto& o = v.get_object();
    const auto* id = o.if_contains("id");
    const auto* method = o.if_contains("method");
    if (!id || !method || !method->is_string()) return;  // a notification
    if (method->get_string() == "ping") {
      send(resultText(*id, json::object{}));
    } else {
      send(errorText(*id, kMethodNotFound, "the gateway does not offer this to MCP servers"));
    }
  }

  // Ends the process group: SIGTERM, up to `grace` to exit, then SIGKILL. Reaps the child.
  void kill(Millis grace) {
    ++generation_;
    for (auto& [id, p] : pending_) {
      p->ended = true;
      p->timer.cancel();
    }
    if (stdin_) {
      boost::system::error_code ignored;
      stdin_->close(ignored);
      stdin_.reset();
    }
    if (stdout_) {
      boost::system::error_code ignored;
      stdout_->close(ignored);
      stdout_.reset();
    }
    if (pid_ <= 0) return;
    const pid_t pid = pid_;
    pid_ = -1;
    if (::waitpid(pid, nullptr, WNOHANG) == pid) {
      ::kill(-pid, SIGKILL);  // what is left of its group
      return;
    }
    ::kill(-pid, SIGTERM);
    const auto until = SteadyClock::now() + grace;
    while (SteadyClock::now() < until) {
      if (::waitpid(pid, nullptr, WNOHANG) == pid) {
        ::kill(-pid, SIGKILL);
        return;
      }
      ::usleep(10'000);
    }
    ::kill(-pid, SIGKILL);
    ::waitpid(pid, nullptr, 0);
  }

  net::io_context& ioc_;
  std::vector<std::string> argv_;
  std::string name_;
  std::function<void(const std::string&)> on_exit_;
  pid_t pid_ = -1;
  std::uint64_t generation_ = 0;
  std::unique_ptr<net::posix::stream_descriptor> stdin_;
  std::unique_ptr<net::posix::stream_descriptor> stdout_;
  std::deque<std::string> writes_;
  bool writing_ = false;
  std::map<std::int64_t, Pending*> pending_;
  std::int64_t next_id_ = 1;
};

}  // namespace

struct McpHub::Impl {
  Impl(net::io_context& ioc, upstream::ClientTls& tls) : pool(ioc, tls), work(net::make_work_guard(ioc)) {}
  upstream::Pool pool;
  net::executor_work_guard<net::io_context::executor_type> work;
};

struct McpHub::Server {
  Server(net::io_context& ioc, config::McpServerConfig c) : cfg(std::move(c)), wake(ioc) {}
  config::McpServerConfig cfg;
  std::unique_ptr<Transport> transport;
  std::atomic<bool> up{false};
  std::atomic<std::uint64_t> restarts{0};
  std::size_t in_flight = 0;  // hub thread only
  net::steady_timer wake;     // cancelled when the server goes down
  std::string last_error;
};

McpHub::McpHub(std::vector<config::McpServerConfig> servers, upstream::ClientTls& tls)
    : ioc_(std::make_unique<net::io_context>(1)) {
  impl_ = std::make_unique<Impl>(*ioc_, tls);
  for (auto& c : servers) {
    auto s = std::make_unique<Server>(*ioc_, std::move(c));
    Server* raw = s.get();
    if (!raw->cfg.url.empty()) {
      upstream::PostTarget t =
          upstream::makePostTarget(raw->cfg.url, raw->cfg.headers, raw->cfg.timeout, "mcp.servers " + raw->cfg.name);
      if (t.endpoint.tls) tls.get();  // the trust store loaded now, never on the hub's first call
      raw->transport = std::make_unique<HttpTransport>(impl_->pool, std::move(t));
    } else {
      raw->transport = std::make_unique<StdioTransport>(*ioc_, raw->cfg.command, raw->cfg.name,
                                                        [this, raw](const std::string& why) { markDown(*raw, why); });
    }
    servers_.push_back(std::move(s));
  }
}

McpHub::~McpHub() {
  stop();
}

void McpHub::start() {
  if (started_ || servers_.empty()) return;
  started_ = true;
  for (std::size_t i = 0; i < servers_.size(); ++i) net::co_spawn(*ioc_, keep(i), net::detached);
  thread_ = std::thread([this] { ioc_->run(); });
}

void McpHub::stop() {
  if (!started_) return;
  started_ = false;
  stopping_ = true;
  std::promise<void> done;
  auto finished = done.get_future();
  net::post(*ioc_, [this, &done] {
    for (auto& s : servers_) {
      s->up = false;
      s->wake.cancel();
      s->transport->close();
    }
    done.set_value();
  });
  if (finished.wait_for(std::chrono::seconds(10)) != std::future_status::ready)
    spdlog::error("mcp: the servers did not stop within 10 s");
  impl_->work.reset();
  ioc_->stop();
  thread_.join();
}

std::size_t McpHub::size() const {
  return servers_.size();
}
const std::string& McpHub::name(std::size_t server) const {
  return servers_[server]->cfg.name;
}
bool McpHub::up(std::size_t server) const {
  return servers_[server]->up.load(std::memory_order_relaxed);
}

std::optional<std::size_t> McpHub::find(std::string_view server) const {
  for (std::size_t i = 0; i < servers_.size(); ++i)
    if (servers_[i]->cfg.name == server) return i;
  return std::nullopt;
}

void McpHub::markDown(Server& s, const std::string& why) {
  if (s.up.exchange(false)) spdlog::warn("mcp server {}: down ({})", s.cfg.name, why);
  s.last_error = why;
  s.wake.cancel();
}

// Brings the server up (a process, initialize, initialized) and again whenever it goes down,
// waiting kBackoffMin doubling to kBackoffMax between failed tries.
net::awaitable<void> McpHub::keep(std::size_t index) {
  Server& s = *servers_[index];
  Millis backoff = kBackoffMin;
  bool first = true;
  while (!stopping_) {
    if (!s.up) {
      std::string why = s.transport->open();
      if (why.empty()) why = co_await s.transport->handshake(s.cfg.timeout);
      if (stopping_) co_return;
      if (why.empty()) {
        if (!first) s.restarts.fetch_add(1, std::memory_order_relaxed);
        first = false;
        backoff = kBackoffMin;
        s.last_error.clear();
        s.up = true;
        spdlog::info("mcp server {}: up ({})", s.cfg.name, s.cfg.url.empty() ? "stdio" : "streamable http");
      } else {
        if (why != s.last_error) spdlog::warn("mcp server {}: {} (trying again)", s.cfg.name, why);
        s.last_error = why;
        s.transport->close();
        s.wake.expires_after(backoff);
        co_await s.wake.async_wait(net::as_tuple(net::use_awaitable));
        backoff = std::min(backoff * 2, kBackoffMax);
        continue;
      }
    }
    s.wake.expires_after(std::chrono::hours(24));
    co_await s.wake.async_wait(net::as_tuple(net::use_awaitable));
    if (!s.up && !stopping_) {
      s.transport->close();
      s.wake.expires_after(backoff);  // a server that dies at once is not restarted in a loop
      co_await s.wake.async_wait(net::as_tuple(net::use_awaitable));
      backoff = std::min(backoff * 2, kBackoffMax);
    }
  }
}

net::awaitable<CallResult> McpHub::callOnHub(std::size_t index, std::string method, json::object params) {
  Server& s = *servers_[index];
  CallResult out;
  if (!s.up) {
    out.message = "MCP server " + s.cfg.name + " is unavailable" + (s.last_error.empty() ? "" : ": " + s.last_error);
    co_return out;
  }
  if (s.in_flight >= kMaxPending) {
    out.status = CallResult::Status::Busy;
    out.message = "MCP server " + s.cfg.name + " has too many requests in flight";
    co_return out;
  }
  ++s.in_flight;
  try {
    out = co_await s.transport->request(method, params, s.cfg.timeout);
  } catch (const std::exception& e) {
    out = CallResult{};
    out.message = e.what();
    out.broken = true;
  }
  --s.in_flight;
  if (out.broken) markDown(s, out.message);
  co_return out;
}

net::awaitable<CallResult> McpHub::call(std::size_t server, std::string method, json::object params) {
  auto task = callOnHub(server, std::move(method), std::move(params));
  co_return co_await net::co_spawn(*ioc_, std::move(task), net::use_awaitable);
}

net::awaitable<std::vector<ServerItems>> McpHub::listOnHub(std::string method, std::string key) {
  struct Gather {
    explicit Gather(net::io_context& ioc) : done(ioc) {}
    std::vector<ServerItems> lists;
    std::size_t left = 0;
    net::steady_timer done;
  };
  auto g = std::make_shared<Gather>(*ioc_);
  Millis longest{0};
  for (std::size_t i = 0; i < servers_.size(); ++i) {
    if (!servers_[i]->up) continue;
    longest = std::max(longest, servers_[i]->cfg.timeout);
    ++g->left;
    auto one = [](McpHub* hub, std::size_t i, std::string method, std::string key,
                  std::shared_ptr<Gather> g) -> net::awaitable<void> {
      ServerItems got{i, {}};
      json::value cursor;
      bool ok = true;
      const auto until = SteadyClock::now() + hub->servers_[i]->cfg.timeout;
      for (std::size_t page = 0; page < kMaxPages && SteadyClock::now() < until; ++page) {
        json::object params;
        if (!cursor.is_null()) params["cursor"] = cursor;
        auto call = hub->callOnHub(i, method, std::move(params));
        CallResult r = co_await std::move(call);
        const auto* o = r.ok() ? r.result.if_object() : nullptr;
        const auto* items = o ? o->if_contains(key) : nullptr;
        if (!items || !items->is_array()) {
          if (r.ok()) r.message = "its " + method + " answer has no " + key + " array";
          spdlog::warn("mcp server {}: {} failed: {}", hub->servers_[i]->cfg.name, method, r.message);
          ok = false;
          break;
        }
        for (const auto& item : items->get_array()) {
          if (got.items.size() >= kMaxListItems) break;
          got.items.push_back(item);
        }
        const auto* next = o->if_contains("nextCursor");
        if (!next || !next->is_string() || next->get_string().empty() || got.items.size() >= kMaxListItems) break;
        cursor = *next;
      }
      if (ok) g->lists.push_back(std::move(got));
      if (--g->left == 0) g->done.cancel();
    };
    net::co_spawn(*ioc_, one(this, i, method, key, g), net::detached);
  }
  if (g->left > 0) {
    g->done.expires_after(longest + Millis(1000));  // each server's pages end within its own timeout
    co_await g->done.async_wait(net::as_tuple(net::use_awaitable));
  }
  std::vector<ServerItems> out = std::move(g->lists);
  g->lists.clear();
  std::sort(out.begin(), out.end(), [](const ServerItems& a, const ServerItems& b) { return a.server < b.server; });
  co_return out;
}

net::awaitable<std::vector<ServerItems>> McpHub::listAll(std::string method, std::string key) {
  if (servers_.empty()) co_return std::vector<ServerItems>{};  // no thread runs the hub then
  auto task = listOnHub(std::move(method), std::move(key));
  co_return co_await net::co_spawn(*ioc_, std::move(task), net::use_awaitable);
}

void McpHub::renderMetrics(std::string& out) const {
  if (servers_.empty()) return;
  out += "# HELP sluice_mcp_server_up Whether the MCP server is initialized and answering (1) or down (0).\n";
  out += "# TYPE sluice_mcp_server_up gauge\n";
  for (const auto& s : servers_)
    out += "sluice_mcp_server_up{server=\"" + s->cfg.name + "\"} " + (s->up.load() ? "1" : "0") + "\n";
  out += "# HELP sluice_mcp_server_restarts_total Times the MCP server came back after going down.\n";
  out += "# TYPE sluice_mcp_server_restarts_total counter\n";
  for (const auto& s : servers_)
    out +=
        "sluice_mcp_server_restarts_total{server=\"" + s->cfg.name + "\"} " + std::to_string(s->restarts.load()) + "\n";
}

}  // namespace sluice::mcp
