#include "gateway/Gateway.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>
#include <boost/json/value_from.hpp>
#include <fmt/format.h>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <spdlog/sinks/stdout_sinks.h>
#include <unistd.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>

#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <random>
#include <thread>

#include "admin/AdminApi.hpp"
#include "cache/ResponseCache.hpp"
#include "cluster/Limiter.hpp"
#include "config/Config.hpp"
#include "console/Console.hpp"
#include "core/Clock.hpp"
#include "core/JsonText.hpp"
#include "core/LineWriter.hpp"
#include "gateway/Auth.hpp"
#include "gateway/Chain.hpp"
#include "gateway/ControlPlane.hpp"
#include "gateway/Probe.hpp"
#include "gateway/Proxy.hpp"
#include "http/Server.hpp"
#include "http/ServerTls.hpp"
#include "metrics/Metrics.hpp"
#include "mock/MockServer.hpp"
#include "pipeline/KeyTable.hpp"
#include "pipeline/VirtualKeySecret.hpp"
#include "providers/UpstreamPath.hpp"
#include "redact/Rules.hpp"
#include "routing/Router.hpp"
#include "store/LogWriter.hpp"
#include "store/Store.hpp"
#include "store/StoreProbe.hpp"
#include "upstream/Client.hpp"

namespace sluice::gateway {

namespace net = boost::asio;
namespace bhttp = boost::beast::http;
namespace json = boost::json;
using Clock = std::chrono::steady_clock;

namespace {

constexpr const char* kDevMasterKey = "sk-sluice-dev";
// OpenAI-format endpoints relayed to a channel as they are.
constexpr std::string_view kProxied[] = {"/v1/chat/completions", "/v1/completions", "/v1/embeddings",
                                         "/v1/responses"};
bool isProxied(std::string_view path) {
  return std::find(std::begin(kProxied), std::end(kProxied), path) != std::end(kProxied);
}

// The embedded default: the built-in mock for any model, plus a real provider channel for each
// provider key found in the environment (tried first for its own models).
std::string embeddedConfig(const std::string& mockAddr) {
  std::string y = fmt::format(R"(server:
  listen: "${{SLUICE_LISTEN:-127.0.0.1:8080}}"
auth:
  master_key: "${{SLUICE_MASTER_KEY:-{}}}"
store:
  url: "sqlite://./sluice.db"
channels:
  - name: mock
    type: mock
    base_url: "http://{}/v1"
    models: ["*"]
    priority: 100
)",
                              kDevMasterKey, mockAddr);
  if (const char* k = std::getenv("OPENAI_API_KEY"); k && *k) {
    y += R"(  - name: openai
    type: openai
    base_url: "https://api.openai.com/v1"
    keys: ["${OPENAI_API_KEY}"]
    models: ["gpt-*", "o1*", "o3*", "o4*", "chatgpt-*", "text-embedding-*", "omni-moderation-*"]
    priority: 1
)";
  }
  if (const char* k = std::getenv("ANTHROPIC_API_KEY"); k && *k) {
    y += R"(  - name: anthropic
    type: anthropic
    base_url: "https://api.anthropic.com"
    keys: ["${ANTHROPIC_API_KEY}"]
    models: ["claude-*"]
    priority: 1
)";
  }
  if (const char* k = std::getenv("GEMINI_API_KEY"); k && *k) {
    y += R"(  - name: gemini
    type: gemini
    base_url: "https://generativelanguage.googleapis.com"
    keys: ["${GEMINI_API_KEY}"]
    models: ["gemini-*"]
    priority: 1
)";
  }
  return y;
}

struct FileStamp {
  bool ok = false;
  dev_t dev = 0;
  ino_t ino = 0;
  off_t size = 0;
  std::int64_t mtime_ns = 0;
  bool operator==(const FileStamp&) const = default;
};

FileStamp stampOf(const std::string& path) {
  struct stat st {};
  FileStamp f;
  if (::stat(path.c_str(), &st) != 0) return f;
  f.ok = true;
  f.dev = st.st_dev;
  f.ino = st.st_ino;
  f.size = st.st_size;
  f.mtime_ns = static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec;
  return f;
}

// Whether the file at `path` changed since `last` (which then becomes its stamp). A file missing
// for a moment, as an editor or a certificate renewer replaces it, is no change.
bool fileChanged(const std::string& path, FileStamp& last) {
  FileStamp now = stampOf(path);
  if (!now.ok || now == last) return false;
  last = now;
  return true;
}

// Listener tags (http::ListenerOptions::tag): which plane a connection came in on.
constexpr int kPublicListener = 0;
constexpr int kAdminListener = 1;

std::string formatEndpoint(const http::tcp::endpoint& ep) {
  return ep.address().is_v6() ? fmt::format("[{}]:{}", ep.address().to_string(), ep.port())
                              : fmt::format("{}:{}", ep.address().to_string(), ep.port());
}

std::string newRequestId() {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  return fmt::format("req_{:016x}", rng());
}

class Gateway {
 public:
  Gateway(const std::shared_ptr<const config::Config>& cfg, std::string path, std::string configText,
          std::unique_ptr<http::Server> embeddedMock, std::unique_ptr<store::LogWriter> logs)
      : logs_(std::move(logs)),
        path_(std::move(path)),
        embedded_text_(std::move(configText)),
        tls_(upstream::makeClientTlsContext()),
        embedded_mock_(std::move(embeddedMock)),
        access_(STDOUT_FILENO),
        limiter_(cluster::Limiter::Options{cfg->redis.url}),
        cache_(makeCache(*cfg)),
        control_(std::make_unique<ControlPlane>(cfg, limiter_, healthRegistry())),
        store_probe_(cfg->store.url) {
    admin_ = std::make_unique<admin::AdminApi>(cfg->store.url);
    admin_->setConfigSource([this] { return control_->fileConfig(); });
    admin_->onChange([this] { control_->refreshNowAndWait(); });
    auto first = control_->initial();
    const auto& s = first->cfg->server;
    http::ServerLimits limits;
    limits.max_body_bytes = s.max_body_bytes;
    limits.max_header_bytes = s.max_header_bytes;
    limits.header_timeout = s.header_timeout;
    limits.keepalive_timeout = s.keepalive_timeout;
    server_ = std::make_unique<http::Server>(s.workers, limits,
                                             [this](http::Request& req, http::Responder& r) { return handle(req, r); });
    for (int i = 0; i < server_->workerCount(); ++i) {
      auto ws = std::make_unique<WorkerState>(server_->workerContext(i), tls_);
      ws->snap = first;
      workers_.push_back(std::move(ws));
    }
    stamp_ = stampOf(path_);
    if (const auto& t = first->cfg->server.tls; t.enabled()) {
      tls_files_ = t;
      tls_cert_stamp_ = stampOf(t.cert);
      tls_key_stamp_ = stampOf(t.key);
      std::string error;
      auto ctx = http::ServerTls::load(t.cert, t.key, error);
      if (!ctx) throw std::runtime_error("server.tls: " + error);
      edge_tls_ = std::make_shared<http::ServerTls>(std::move(ctx));
    }
    split_admin_ = !first->cfg->admin.listen.empty();
    // Access lines leave each worker in batches: on a short timer, and when its loop ends.
    for (int i = 0; i < server_->workerCount(); ++i) {
      net::co_spawn(server_->workerContext(i), flushLoop(server_->workerContext(i)), net::detached);
    }
    server_->onWorkerExit([this](int) { access_.flushThisThread(); });
    net::co_spawn(server_->workerContext(0), recoveryLoop(*workers_[0]), net::detached);
  }

  net::awaitable<void> flushLoop(net::io_context& ioc) {
    net::steady_timer t(ioc);
    for (;;) {
      t.expires_after(std::chrono::milliseconds(50));
      auto [ec] = co_await t.async_wait(net::as_tuple(net::use_awaitable));
      if (ec) co_return;
      access_.flushThisThread();
    }
  }

  int run() {
    auto current = control_->current();
    const auto& s = current->cfg->server;
    std::string host;
    std::uint16_t port = 0;
    if (!http::splitHostPort(s.listen, host, port)) {
      spdlog::error("server.listen \"{}\" is not HOST:PORT", s.listen);
      return 2;
    }
    http::tcp::endpoint ep;
    try {
      ep = server_->listen(host, port, http::ListenerOptions{edge_tls_, kPublicListener});
    } catch (const std::exception& e) {
      spdlog::error("cannot listen on {}: {}", s.listen, e.what());
      return 2;
    }
    std::string adminAddr;
    if (const auto& a = current->cfg->admin.listen; !a.empty()) {
      std::string ahost;
      std::uint16_t aport = 0;
      if (!http::splitHostPort(a, ahost, aport)) {
        spdlog::error("admin.listen \"{}\" is not HOST:PORT", a);
        return 2;
      }
      try {
        adminAddr = formatEndpoint(server_->listen(ahost, aport, http::ListenerOptions{nullptr, kAdminListener}));
      } catch (const std::exception& e) {
        spdlog::error("cannot listen on {} (admin.listen): {}", a, e.what());
        return 2;
      }
    }
    std::string addr = formatEndpoint(ep);
    const char* scheme = edge_tls_ ? "https" : "http";
    // The admin line comes first: whoever waits for the listening line has both then.
    if (!adminAddr.empty())
      std::printf("sluice admin API and console on http://%s (keep it on loopback or a private network)\n",
                  adminAddr.c_str());
    std::printf("sluice listening on %s://%s (%d workers, %zu channels, config: %s)\n", scheme, addr.c_str(),
                server_->workerCount(), current->cfg->channels.size(), path_.empty() ? "embedded default" : path_.c_str());
    if (path_.empty()) {
      bool devKey = current->cfg->auth.master_key == kDevMasterKey;
      std::printf("  master key: %s%s\n", current->cfg->auth.master_key.c_str(),
                  devKey ? "  (the demo key; set SLUICE_MASTER_KEY to choose your own)" : "");
      std::printf("  try: curl -N http://%s/v1/chat/completions -H 'Authorization: Bearer %s' \\\n"
                  "         -H 'Content-Type: application/json' \\\n"
                  "         -d '{\"model\":\"mock-1\",\"stream\":true,\"messages\":[{\"role\":\"user\",\"content\":\"Hello\"}]}'\n",
                  addr.c_str(), devKey ? kDevMasterKey : "$SLUICE_MASTER_KEY");
    }
    std::fflush(stdout);

    // Control thread: signals and config-file watching, off the workers. Refresher: the
    // store's keys and channels, off both (a slow database must not delay a signal).
    std::thread control([this] { controlLoop(); });
    control_->start([this](const std::shared_ptr<const Snapshot>& next) { publish(next); });
    server_->run();
    control_ioc_.stop();
    control.join();
    control_->stop();
    if (embedded_mock_) {
      embedded_mock_->stop(std::chrono::milliseconds(100));
      embedded_mock_thread_.join();
    }
    access_.drain();
    // Every accepted request's log row goes to the database before exit.
    if (logs_ && !logs_->drain(std::chrono::seconds(10))) {
      auto st = logs_->stats();
      spdlog::error("request log: {} rows could not be written before exit (database unreachable)", st.abandoned);
    }
    spdlog::info("sluice stopped");
    return 0;
  }

  void startEmbeddedMock() {
    if (embedded_mock_) embedded_mock_thread_ = std::thread([this] { embedded_mock_->run(); });
  }

 private:
  struct WorkerState {
    WorkerState(net::io_context& ioc, net::ssl::context& tls) : pool(ioc, tls) {}
    std::shared_ptr<const Snapshot> snap;
    upstream::Pool pool;
  };

  // Probes the keys that are cooling down or were disabled by an upstream answer, so a key
  // whose provider recovered comes back before its cool-down ends (or at all, when disabled).
  net::awaitable<void> recoveryLoop(WorkerState& ws) {
    net::steady_timer t(co_await net::this_coro::executor);
    for (;;) {
      auto snap = ws.snap;
      auto every = snap->cfg->routing.recovery_interval;
      t.expires_after(every.count() > 0 ? every : std::chrono::milliseconds(5000));
      auto [ec] = co_await t.async_wait(net::as_tuple(net::use_awaitable));
      if (ec) co_return;
      if (every.count() == 0) continue;
      snap = ws.snap;
      const auto now = routing::nowMs();
      for (const auto& ch : snap->router->channels()) {
        for (const auto& k : ch->keys) {
          auto& h = *k.health;
          bool down = (h.disabled.load() && !h.manual.load()) || h.cooldown_until_ms.load() > now;
          if (!down) continue;
          ProbeResult pr = co_await probeKey(ws.pool, *ch, k, snap->cfg->routing.timeouts.connect, snap->scrubber);
          applyProbe(*ch, k, pr);
        }
      }
    }
  }


  // Makes `next` the snapshot every worker uses from its next request on.
  void publish(const std::shared_ptr<const Snapshot>& next) {
    for (std::size_t i = 0; i < workers_.size(); ++i) {
      net::post(server_->workerContext(static_cast<int>(i)), [ws = workers_[i].get(), next] { ws->snap = next; });
    }
  }

  static routing::HealthRegistry& healthRegistry() {
    static routing::HealthRegistry r;
    return r;
  }

  void controlLoop() {
    auto& signals = signals_;
    std::function<void()> arm = [&] {
      signals.async_wait([&](const boost::system::error_code& ec, int sig) {
        if (ec) return;
        if (sig == SIGHUP) {
          reload("SIGHUP");
          arm();
          return;
        }
        auto grace = control_->fileConfig()->server.shutdown_grace;
        spdlog::info("signal {}: stopping; in-flight requests get {} ms", sig, grace.count());
        server_->stop(grace);
      });
    };
    arm();
    net::steady_timer poll(control_ioc_);
    std::function<void()> watch = [&] {
      poll.expires_after(std::chrono::seconds(1));
      poll.async_wait([&](const boost::system::error_code& ec) {
        if (ec) return;
        if (!path_.empty() && fileChanged(path_, stamp_)) {
          reload("file change");  // reads the certificate again too
        } else if (edge_tls_) {
          const bool cert = fileChanged(tls_files_.cert, tls_cert_stamp_);
          if (fileChanged(tls_files_.key, tls_key_stamp_) || cert) reloadTls("file change");
        }
        watch();
      });
    };
    watch();
    control_ioc_.run();
  }

  std::pair<bool, std::string> reload(const char* why) {
    if (path_.empty()) {
      spdlog::info("reload ({}): running on the embedded default config; nothing to reload", why);
      return {false, "running on the embedded default config: there is no file to reload"};
    }
    std::shared_ptr<const Snapshot> next;
    std::shared_ptr<const config::Config> before = control_->fileConfig();
    try {
      auto cfg = config::loadConfigFile(path_);
      next = control_->applyConfig(cfg);
    } catch (const std::exception& e) {
      metrics::registry().reloads_failed.fetch_add(1);
      spdlog::error("reload ({}) rejected, keeping the running config: {}", why, e.what());
      reloadTls(why);  // a rotated certificate still takes effect
      return {false, e.what()};
    }
    const auto& after = *next->cfg;
    if (before->server.listen != after.server.listen || before->server.workers != after.server.workers)
      spdlog::warn("reload: server.listen and server.workers take effect only after a restart");
    if (before->redis.url != after.redis.url || before->store.url != after.store.url)
      spdlog::warn("reload: store.url and redis.url take effect only after a restart");
    if (before->admin.listen != after.admin.listen)
      spdlog::warn("reload: admin.listen takes effect only after a restart");
    if (before->server.tls.enabled() != after.server.tls.enabled()) {
      spdlog::warn("reload: turning server.tls on or off takes effect only after a restart");
    } else if (edge_tls_ && !(after.server.tls == tls_files_)) {
      tls_files_ = after.server.tls;
    }
    // Every reload (SIGHUP, the admin API, a config file change) reads the certificate again:
    // a renewed one at the same path takes effect the same way as a new path.
    if (edge_tls_) {
      tls_cert_stamp_ = stampOf(tls_files_.cert);
      tls_key_stamp_ = stampOf(tls_files_.key);
      reloadTls(why);
    }
    metrics::registry().reloads_ok.fetch_add(1);
    std::string done = fmt::format("config applied, {} channels", next->cfg->channels.size());
    spdlog::info("reload ({}): {}", why, done);
    return {true, done};
  }

  // Loads the edge certificate and key again; new connections take them, open ones keep theirs.
  // A pair that does not load keeps the running one. Control thread only.
  void reloadTls(const char* why) {
    if (!edge_tls_) return;
    std::string error;
    auto ctx = http::ServerTls::load(tls_files_.cert, tls_files_.key, error);
    if (!ctx) {
      tls_reloads_failed_.fetch_add(1, std::memory_order_relaxed);
      spdlog::error("tls reload ({}) failed, keeping the running certificate: {}", why, error);
      return;
    }
    edge_tls_->replace(std::move(ctx));
    tls_reloads_ok_.fetch_add(1, std::memory_order_relaxed);
    spdlog::info("tls reload ({}): certificate {} loaded", why, tls_files_.cert);
  }

  net::awaitable<void> handle(http::Request& req, http::Responder& r) {
    auto& ws = *workers_[static_cast<std::size_t>(r.worker())];
    std::shared_ptr<const Snapshot> snap = ws.snap;  // this request keeps its snapshot to the end
    RequestContext ctx;
    ctx.start = Clock::now();
    auto incomingId = req["x-request-id"];
    ctx.id = (!incomingId.empty() && incomingId.size() <= 128) ? std::string(incomingId) : newRequestId();
    auto target = req.target();
    auto q = target.find('?');
    ctx.path = std::string(target.substr(0, q));
    if (q != std::string_view::npos) ctx.query = std::string(target.substr(q + 1));
    ctx.remote = http::clientAddress(snap->cfg->server.trusted_proxies, r.remote(), req);  // behind proxies: their client

    RequestRecord rec;
    auto& reg = metrics::registry();
    reg.active_requests.fetch_add(1, std::memory_order_relaxed);
    co_await route(*snap, ws, req, r, ctx, rec);
    reg.active_requests.fetch_sub(1, std::memory_order_relaxed);
    if (!rec.status) co_return;  // an unlogged housekeeping endpoint
    scrubRecord(*snap, rec);
    rec.duration_ms = std::chrono::duration<double, std::milli>(Clock::now() - ctx.start).count();
    reg.record(metrics::RequestSample{rec.channel, rec.model, rec.status, rec.ttfb_ms, rec.duration_ms,
                                      rec.input_tokens, rec.output_tokens, rec.attempts});
    accessLog(req, ctx, rec);
    if (logs_) logs_->enqueue(logRecord(req, ctx, rec));  // never waits on the database
  }

  // Takes the request's strings (they are not needed after this): no copies per request.
  static store::LogRecord logRecord(const http::Request& req, RequestContext& ctx, RequestRecord& rec) {
    store::LogRecord l;
    l.time_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                    std::chrono::system_clock::now().time_since_epoch())
                    .count() -
                static_cast<std::int64_t>(rec.duration_ms);
    l.request_id = std::move(ctx.id);
    l.channel = std::move(rec.channel);
    l.upstream_key = std::move(rec.key_id);
    l.model = std::move(rec.model);
    l.status = rec.status;
    l.attempts = std::move(rec.attempts_json);
    l.ttfb_ms = rec.ttfb_ms < 0 ? 0 : static_cast<std::int64_t>(rec.ttfb_ms);
    l.duration_ms = static_cast<std::int64_t>(rec.duration_ms);
    l.input_tokens = std::max<std::int64_t>(rec.input_tokens, 0);
    l.output_tokens = std::max<std::int64_t>(rec.output_tokens, 0);
    l.cached_tokens = std::max<std::int64_t>(rec.cached_tokens, 0);
    l.virtual_key_id = rec.virtual_key_id;
    l.cost_usd = rec.cost_usd;
    if (!rec.request_body.empty()) l.request_body = std::move(rec.request_body);
    if (!rec.response_body.empty()) l.response_body = std::move(rec.response_body);
    l.client_addr = std::move(ctx.remote);
    l.user_agent = std::string(req[bhttp::field::user_agent].substr(0, 512));
    l.stream = rec.stream;
    return l;
  }

  void accessLog(const http::Request& req, const RequestContext& ctx, const RequestRecord& rec) {
    // Hand-built: one buffer, no JSON tree (this runs for every request).
    std::string line;
    line.reserve(384);
    auto key = [&](std::string_view k) { line.append(",\"").append(k).append("\":"); };
    auto str = [&](std::string_view k, std::string_view v) { key(k); appendJsonString(line, v); };
    auto num = [&](std::string_view k, double v) { key(k); v < 0 ? line.append("null") : line.append(fmt::format("{:.3f}", v)); };
    auto integer = [&](std::string_view k, std::int64_t v) { key(k); v < 0 ? line.append("null") : line.append(std::to_string(v)); };
    auto ts = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch());
    line.append("{\"ts\":").append(std::to_string(ts.count()));
    str("request_id", ctx.id);
    str("method", req.method_string());
    str("path", ctx.path);
    integer("status", rec.status);
    str("model", rec.model);
    str("channel", rec.channel);
    str("key", rec.key_id);
    integer("attempts", rec.attempts);
    key("stream");
    line.append(rec.stream ? "true" : "false");
    num("ttfb_ms", rec.ttfb_ms);
    num("duration_ms", rec.duration_ms);
    integer("input_tokens", rec.input_tokens);
    integer("output_tokens", rec.output_tokens);
    integer("cached_tokens", rec.cached_tokens);
    if (rec.cost_usd > 0) {
      key("cost_usd");
      line.append(fmt::format("{:.6f}", rec.cost_usd));
    }
    if (rec.virtual_key_id) integer("virtual_key", *rec.virtual_key_id);
    if (!rec.error.empty()) str("error", rec.error);
    str("remote", ctx.remote);
    line.push_back('}');
    access_.append(line);
  }

  net::awaitable<void> sendJson(http::Responder& r, const RequestContext& ctx, int status, const json::value& v) {
    http::Response res{static_cast<bhttp::status>(status), 11};
    res.set(bhttp::field::content_type, "application/json");
    res.set("x-request-id", ctx.id);
    res.body() = json::serialize(v);
    co_await r.send(std::move(res));
  }

  net::awaitable<void> sendError(http::Responder& r, const RequestContext& ctx, RequestRecord& rec, Wire wire,
                                 int status, std::string_view type, std::string_view code, const std::string& msg) {
    rec.status = status;
    rec.error = msg;
    auto res = errorResponse(wire, status, type, code, msg);
    res.set("x-request-id", ctx.id);
    if (status == 401) res.set(bhttp::field::www_authenticate, "Bearer");
    co_await r.send(std::move(res));
  }

  net::awaitable<void> route(const Snapshot& snap, WorkerState& ws, http::Request& req, http::Responder& r,
                             const RequestContext& ctx, RequestRecord& rec) {
    const auto& path = ctx.path;
    auto method = req.method();

    // Housekeeping: no auth, not logged.
    if (path == "/healthz") {
      json::value ok = json::object{{"status", "ok"}};
      co_await sendJson(r, ctx, 200, ok);
      co_return;
    }
    if (path == "/metrics" && method == bhttp::verb::get) {
      http::Response res{bhttp::status::ok, 11};
      res.set(bhttp::field::content_type, "text/plain; version=0.0.4");
      res.body() = metrics::registry().render([&](std::string& out) {
        renderKeyStates(snap, out);
        limiter_.renderMetrics(out);
        store_probe_.renderMetrics(out);
        if (cache_) {
          // The backend counts its own lookups and writes (Redis errors count as misses).
          const auto cs = cache_->stats();
          out += "# HELP sluice_cache_requests_total Cache lookups by result.\n";
          out += "# TYPE sluice_cache_requests_total counter\n";
          out += fmt::format("sluice_cache_requests_total{{result=\"hit\"}} {}\n", cs.hits);
          out += fmt::format("sluice_cache_requests_total{{result=\"miss\"}} {}\n", cs.misses);
          out += "# HELP sluice_cache_stores_total Answers written to the cache.\n";
          out += "# TYPE sluice_cache_stores_total counter\n";
          out += fmt::format("sluice_cache_stores_total {}\n", cs.writes);
          out += "# HELP sluice_cache_entries Answers held by the in-memory cache.\n";
          out += "# TYPE sluice_cache_entries gauge\n";
          out += fmt::format("sluice_cache_entries {}\n", cs.entries);
        }
        if (edge_tls_) {
          out += "# HELP sluice_tls_reloads_total Reloads of the edge certificate and key by result.\n";
          out += "# TYPE sluice_tls_reloads_total counter\n";
          out += fmt::format("sluice_tls_reloads_total{{result=\"ok\"}} {}\n", tls_reloads_ok_.load());
          out += fmt::format("sluice_tls_reloads_total{{result=\"failed\"}} {}\n", tls_reloads_failed_.load());
        }
        out += "# HELP sluice_access_log_dropped_total Access-log lines dropped because the writer fell behind.\n";
        out += "# TYPE sluice_access_log_dropped_total counter\n";
        out += fmt::format("sluice_access_log_dropped_total {}\n", access_.dropped());
        if (logs_) {
          auto st = logs_->stats();
          out += "# HELP sluice_request_log_records_total Request-log rows by fate.\n";
          out += "# TYPE sluice_request_log_records_total counter\n";
          out += fmt::format("sluice_request_log_records_total{{result=\"written\"}} {}\n", st.written);
          out += fmt::format("sluice_request_log_records_total{{result=\"dropped\"}} {}\n", st.dropped);
          out += fmt::format("sluice_request_log_records_total{{result=\"rejected\"}} {}\n", st.rejected);
          out += "# HELP sluice_request_log_queue_depth Rows waiting for the database.\n";
          out += "# TYPE sluice_request_log_queue_depth gauge\n";
          out += fmt::format("sluice_request_log_queue_depth {}\n", st.queue_depth + st.in_flight);
          out += "# HELP sluice_store_connected 1 while the log writer's database connection works.\n";
          out += "# TYPE sluice_store_connected gauge\n";
          out += fmt::format("sluice_store_connected {}\n", st.connected ? 1 : 0);
          out += "# HELP sluice_request_log_expired_total Request-log rows deleted by store.log_retention_days.\n";
          out += "# TYPE sluice_request_log_expired_total counter\n";
          out += fmt::format("sluice_request_log_expired_total {}\n", st.expired);
        }
      });
      co_await r.send(std::move(res));
      co_return;
    }
    // With admin.listen set, the console and the admin API live on that listener only, and the
    // proxy API only on the public one; each answers the other's paths as unknown routes.
    const bool onAdmin = split_admin_ && r.listener() == kAdminListener;
    const bool adminPlane = !split_admin_ || onAdmin;
    const bool adminApi = path.starts_with("/admin/api/");
    if (adminPlane && !adminApi && (method == bhttp::verb::head || method == bhttp::verb::get)) {
      if (std::optional<http::Response> page = console::serve(req, path)) {
        co_await r.send(std::move(*page));
        co_return;
      }
    }
    if (onAdmin && !adminApi) {
      std::string message = fmt::format(
          "no route for {} {} on the admin listener (it serves the admin API, the console, /healthz and /metrics)",
          std::string(req.method_string()), path);
      co_await sendError(r, ctx, rec, Wire::OpenAI, 404, "invalid_request_error", "not_found", message);
      co_return;
    }

    if (adminPlane && adminApi) {
      // The control plane: master key only.
      auto key = presentedKey(req, ctx.query);
      const auto& master = snap.cfg->auth.master_key;
      if (key.empty() || master.empty() || !constantTimeEquals(key, master)) {
        std::string message = "the admin API takes the master key: 'Authorization: Bearer MASTER_KEY'";
        co_await sendError(r, ctx, rec, Wire::OpenAI, 401, "invalid_request_error", "invalid_api_key", message);
        co_return;
      }
      std::string adminPath = path.substr(10);
      std::optional<http::Response> live = co_await liveAdmin(snap, ws, req, adminPath);
      if (live) {
        live->set("x-request-id", ctx.id);
        co_await r.send(std::move(*live));
        co_return;
      }
      http::Response res = co_await admin_->handle(req, std::move(adminPath), ctx.query);
      res.set("x-request-id", ctx.id);
      co_await r.send(std::move(res));
      co_return;
    }

    // Which API the client speaks decides the error format from here on.
    ClientCall call;
    if (!classify(path, req, call)) {
      std::string message = fmt::format("no route for {} {}", std::string(req.method_string()), path);
      co_await sendError(r, ctx, rec, call.wire, 404, "invalid_request_error", "not_found", message);
      co_return;
    }
    // The request path, stage by stage (gateway/Chain.cpp).
    Exchange ex(snap, Services{ws.pool, limiter_, cache_.get()}, req, r, ctx, call, rec);
    co_await runChain(ex);
  }

  static http::Response adminJson(int status, const json::value& v) {
    http::Response res{static_cast<bhttp::status>(status), 11};
    res.set(bhttp::field::content_type, "application/json");
    res.body() = json::serialize(v);
    return res;
  }
  static http::Response adminError(int status, std::string message, const char* param = nullptr) {
    json::object e{{"message", std::move(message)}, {"type", status >= 500 ? "server_error" : "invalid_request_error"}};
    if (param) e["param"] = param;
    return adminJson(status, json::object{{"error", std::move(e)}});
  }

  static json::object keyStatus(const routing::Channel& ch, const routing::UpstreamKey& k) {
    auto now = routing::nowMs();
    auto until = k.health->cooldown_until_ms.load();
    const char* state = k.health->disabled.load() ? "disabled" : until > now ? "cooling" : "active";
    json::value cooldown = until > now ? json::value(unixNowMs() + (until - now)) : json::value(nullptr);
    return json::object{{"ref", k.ref},
                        {"channel", ch.cfg.name},
                        {"masked", k.id},
                        {"source", ch.cfg.store_id ? "store" : "config"},
                        {"store_id", k.store_id ? json::value(k.store_id) : json::value(nullptr)},
                        {"state", state},
                        {"manual", k.health->manual.load()},
                        {"cooldown_until_ms", std::move(cooldown)},
                        {"reason", k.health->why()},
                        {"successes", k.health->successes.load()},
                        {"failures", k.health->failures.load()}};
  }

  // Runs blocking store work on the gateway's own store thread (never a worker's).
  template <class F>
  net::awaitable<std::optional<std::string>> onStoreThread(F f) {
    auto task = [this, f = std::move(f)]() -> net::awaitable<std::optional<std::string>> {
      try {
        if (!ops_store_) ops_store_ = store::Store::open(current_cfg()->store.url);
        f(*ops_store_);
        co_return std::nullopt;
      } catch (const std::exception& e) {
        ops_store_.reset();
        co_return std::string(e.what());
      }
    };
    std::optional<std::string> err = co_await net::co_spawn(ops_pool_, std::move(task), net::use_awaitable);
    co_return err;
  }

  std::shared_ptr<const config::Config> current_cfg() { return control_->fileConfig(); }

  static std::unique_ptr<cache::ResponseCache> makeCache(const config::Config& cfg) {
    cache::CacheBackendOptions o;
    o.redis_url = cfg.redis.url;
    o.memory_max_bytes = cfg.cache.max_bytes;
    o.max_entry_bytes = cfg.cache.max_entry_bytes;
    return cache::makeResponseCache(o);
  }

  // Admin endpoints that act on this process's live state (key health, config, reload);
  // nullopt: not one of them (the AdminApi serves the rest from the store).
  net::awaitable<std::optional<http::Response>> liveAdmin(const Snapshot& snap, WorkerState& ws, const http::Request& req,
                                                          const std::string& path) {
    const bool get = req.method() == bhttp::verb::get, post = req.method() == bhttp::verb::post;
    if (path == "/config") {
      if (!get) co_return adminError(405, "/admin/api/config takes GET");
      auto cfg = current_cfg();
      co_return adminJson(200, json::object{{"yaml", config::describeConfig(*cfg)},
                                            {"source", path_.empty() ? "embedded default" : path_}});
    }
    if (path == "/reload") {
      if (!post) co_return adminError(405, "/admin/api/reload takes POST");
      auto task = [this]() -> net::awaitable<std::pair<bool, std::string>> { co_return reload("admin API"); };
      auto [ok, message] = co_await net::co_spawn(control_ioc_, std::move(task), net::use_awaitable);
      co_return adminJson(ok ? 200 : 400, json::object{{"ok", ok}, {"message", message}});
    }
    if (path == "/pricing") {
      if (!get) co_return adminError(405, "/admin/api/pricing takes GET");
      json::array models;
      const auto& overrides = snap.cfg->pricing;
      for (const auto& [model, price] : snap.prices->entries()) {
        json::object m{{"model", model}, {"input_per_mtok", price.input}, {"output_per_mtok", price.output}};
        if (price.cached_input >= 0) m["cached_input_per_mtok"] = price.cached_input;
        m["source"] = overrides.contains(model) ? "config" : "shipped";
        models.push_back(std::move(m));
      }
      co_return adminJson(200, json::object{{"models", std::move(models)}});
    }
    if (path == "/settings") {
      // The protect-and-save stages as this instance runs them. PATCH switches them at run time
      // for every instance (kept in the store; null returns a switch to the config file's value).
      if (!get && req.method() != bhttp::verb::patch)
        co_return adminError(405, "/admin/api/settings takes GET or PATCH");
      if (!get) {
        boost::system::error_code ec;
        auto body = sluice::parseJson(req.body(), ec);
        if (ec || !body.is_object())
          co_return adminError(400, "the body must be a JSON object such as {\"cache\": {\"enabled\": false}}");
        std::vector<std::pair<std::string, std::optional<std::string>>> writes;
        for (const auto& [section, v] : body.as_object()) {
          const std::string sec(section);
          const char* field = sec == "screening" ? "action" : "enabled";
          if (sec != "cache" && sec != "redaction" && sec != "screening" && sec != "guardrail")
            co_return adminError(400, "unknown setting \"" + sec + "\"; valid: cache, redaction, screening, guardrail", sec.c_str());
          if (!v.is_object()) co_return adminError(400, sec + " must be an object such as {\"" + field + "\": ...}", sec.c_str());
          for (const auto& [k, val] : v.as_object()) {
            std::string name = sec + "." + std::string(k);
            if (sec == "screening" && std::string_view(k) == "enabled") {
              // A switch's view of screening: on is the config's action (block when that is off).
              if (!val.is_bool() && !val.is_null())
                co_return adminError(400, "screening.enabled must be true, false or null", name.c_str());
              const auto configured = snap.safety->screenDefault();
              const char* action = val.is_null() ? nullptr
                                   : !val.as_bool() ? "off"
                                   : configured == config::ScreenAction::Off ? "block"
                                                                             : config::screenActionName(configured);
              writes.emplace_back("screening.action", action ? std::optional<std::string>(action) : std::nullopt);
              continue;
            }
            if (std::string_view(k) != field)
              co_return adminError(400, fmt::format("unknown setting \"{}\"; {} takes \"{}\"", name, sec, field), name.c_str());
            if (val.is_null()) {
              writes.emplace_back(name, std::nullopt);
            } else if (sec == "screening") {
              if (!val.is_string() || !config::parseScreenAction(val.as_string()))
                co_return adminError(400, "screening.action must be \"off\", \"log\", \"warn\", \"block\" or null", name.c_str());
              writes.emplace_back(name, std::string(val.as_string()));
            } else {
              if (!val.is_bool()) co_return adminError(400, name + " must be true, false or null", name.c_str());
              writes.emplace_back(name, val.as_bool() ? "true" : "false");
            }
          }
        }
        if (!snap.safety->webhook())
          for (const auto& w : writes)
            if (w.first == "guardrail.enabled" && w.second == "true")
              co_return adminError(400, "no guardrail webhook is configured: set guardrail.url in the config file",
                                   "guardrail.enabled");
        // Written and then waited for on the store thread, so the worker never blocks.
        auto write = [this, writes](store::Store& st) {
          for (const auto& [name, value] : writes) {
            if (value) st.putGatewaySetting(name, *value);
            else st.deleteGatewaySetting(name);
          }
          control_->refreshNowAndWait();
        };
        std::optional<std::string> err = co_await onStoreThread(std::move(write));
        if (err) co_return adminError(503, "store: " + *err);
      }
      auto cur = control_->current();
      const auto& c = *cur->cfg;
      const auto& sw = cur->switches;
      auto source = [](bool overridden) { return overridden ? "admin" : "config"; };
      const auto stats = cache_ ? cache_->stats() : cache::CacheStats{};
      json::object cacheJ{{"enabled", cur->cacheOn()},
                          {"source", source(sw.cache.has_value())},
                          {"backend", cache_ ? cache_->backendName() : "none"},
                          {"ttl_ms", c.cache.ttl.count()},
                          {"max_bytes", c.cache.max_bytes},
                          {"shared", c.cache.shared},
                          {"stats", json::object{{"hits", stats.hits}, {"misses", stats.misses}, {"writes", stats.writes},
                                                 {"evictions", stats.evictions}, {"entries", stats.entries},
                                                 {"bytes", stats.bytes}, {"errors", stats.errors}}}};
      json::array rules;
      if (cur->safety->rules())
        for (const auto& r : cur->safety->rules()->rules())
          rules.push_back(json::object{{"name", r.name}, {"action", redact::actionName(r.action)}});
      json::object redactionJ{{"enabled", cur->redactionOn()}, {"source", source(sw.redaction.has_value())},
                              {"can_encrypt", cur->safety->canEncrypt()}, {"rules", std::move(rules)}};
      const auto action = cur->screeningDefault();
      json::object screeningJ{{"enabled", action != config::ScreenAction::Off},
                              {"action", config::screenActionName(action)},
                              {"source", source(sw.screening.has_value())},
                              {"threshold", cur->safety->threshold()},
                              {"deny", json::value_from(c.screening.deny)}};
      json::object guardrailJ{{"enabled", cur->guardrailOn()},
                              {"source", source(sw.guardrail.has_value())},
                              {"endpoint", cur->safety->webhook() ? cur->safety->webhook()->endpoint.pool_key : std::string()},
                              {"on_failure", c.guardrail.fail_open ? "fail_open" : "fail_closed"},
                              {"timeout_ms", c.guardrail.timeout.count()}};
      co_return adminJson(200, json::object{{"cache", std::move(cacheJ)}, {"redaction", std::move(redactionJ)},
                                            {"screening", std::move(screeningJ)}, {"guardrail", std::move(guardrailJ)}});
    }
    static constexpr std::string_view kKeys = "/upstream-keys";
    if (!path.starts_with(kKeys)) co_return std::nullopt;
    if (path == kKeys) {
      if (!get) co_return adminError(405, "/admin/api/upstream-keys takes GET");
      json::array data;
      for (const auto& ch : snap.router->channels())
        for (const auto& k : ch->keys) data.push_back(keyStatus(*ch, k));
      co_return adminJson(200, json::object{{"data", std::move(data)}});
    }
    // /upstream-keys/{ref}/{enable|disable|probe}
    std::string_view rest = std::string_view(path).substr(kKeys.size());
    auto slash = rest.find('/', 1);
    if (rest.size() < 2 || rest[0] != '/' || slash == std::string_view::npos) co_return adminError(404, "no admin endpoint " + path);
    std::string ref(rest.substr(1, slash - 1));
    std::string action(rest.substr(slash + 1));
    if (action != "enable" && action != "disable" && action != "probe") co_return adminError(404, "no admin endpoint " + path);
    if (!post) co_return adminError(405, "/admin/api/upstream-keys/{ref}/" + action + " takes POST");
    const routing::Channel* ch = nullptr;
    const routing::UpstreamKey* key = nullptr;
    for (const auto& c : snap.router->channels())
      for (const auto& k : c->keys)
        if (k.ref == ref) {
          ch = c.get();
          key = &k;
        }
    if (!key) co_return adminError(404, "no upstream key with ref \"" + ref + "\" (GET /admin/api/upstream-keys lists them)", "ref");

    if (action == "probe") {
      ProbeResult pr = co_await probeKey(ws.pool, *ch, *key, std::chrono::milliseconds(10'000), snap.scrubber);
      applyProbe(*ch, *key, pr);
      json::object o{{"ok", pr.ok}, {"status", pr.status}, {"latency_ms", pr.latency_ms}, {"message", pr.message},
                     {"key", keyStatus(*ch, *key)}};
      co_return adminJson(200, o);
    }
    std::string reason;
    if (action == "disable") {
      boost::system::error_code ec;
      auto body = sluice::parseJson(req.body().empty() ? std::string_view("{}") : std::string_view(req.body()), ec);
      if (ec || !body.is_object()) co_return adminError(400, "the body must be a JSON object such as {\"reason\": \"...\"}");
      if (const auto* r = body.as_object().if_contains("reason")) {
        if (!r->is_string()) co_return adminError(400, "reason must be a string", "reason");
        reason = std::string(r->as_string()).substr(0, 500);
      }
      if (reason.empty()) reason = "disabled by hand";
    }
    if (key->store_id) {
      const std::int64_t id = key->store_id;
      const bool disable = action == "disable";
      auto write = [id, disable, reason](store::Store& st) {
        st.setUpstreamKeyState(id, disable ? store::UpstreamKeyState::Disabled : store::UpstreamKeyState::Active, reason,
                               std::nullopt);
      };
      std::optional<std::string> err = co_await onStoreThread(std::move(write));
      if (err) co_return adminError(503, "store: " + *err);
      control_->poke();
    }
    if (action == "disable") {
      key->health->disable(reason);
      key->health->manual.store(true);
    } else {
      key->health->enable();
    }
    co_return adminJson(200, keyStatus(*ch, *key));
  }

  // A probe's verdict on a key: a working key that was cooling down or disabled by an upstream
  // answer is back; one the provider refuses is disabled. A key disabled by hand stays so.
  static void applyProbe(const routing::Channel& ch, const routing::UpstreamKey& k, const ProbeResult& pr) {
    auto& h = *k.health;
    if (h.manual.load()) return;
    if (pr.ok) {
      if (h.disabled.load() || h.cooldown_until_ms.load() > routing::nowMs()) {
        spdlog::info("upstream key {} of channel {}: probe succeeded; back in rotation", k.id, ch.cfg.name);
        h.enable();
      }
    } else if (pr.key_rejected() && !h.disabled.load()) {
      h.disable("probe: " + pr.message);
    }
  }

  // Maps a path to the API it belongs to. False: no such endpoint (call.wire still says
  // which format the 404 should take).
  static bool classify(const std::string& path, const http::Request& req, ClientCall& call) {
    std::string_view p = path;
    if (p.starts_with("/anthropic/")) {
      call.wire = Wire::Anthropic;
      p.remove_prefix(10);
    } else if (p.starts_with("/gemini/")) {
      call.wire = Wire::Gemini;
      p.remove_prefix(7);
    }
    if (p.starts_with("/v1beta/")) call.wire = Wire::Gemini;
    if (p == "/v1/messages" || p == "/v1/messages/count_tokens") {
      call.wire = Wire::Anthropic;
      call.op = std::string(p);
      return true;
    }
    if (p == "/v1/models") {
      // Anthropic's SDK lists models at the same path; its version header tells them apart.
      if (!req["anthropic-version"].empty()) call.wire = Wire::Anthropic;
      call.models_list = call.wire != Wire::Gemini;
      return call.models_list;
    }
    if (call.wire == Wire::Gemini) {
      if (p == "/v1beta/models") {
        call.models_list = true;
        return true;
      }
      static constexpr std::string_view kModels = "/v1beta/models/";
      if (!p.starts_with(kModels)) return false;
      auto rest = p.substr(kModels.size());
      auto colon = rest.rfind(':');
      if (colon == std::string_view::npos || colon == 0) return false;
      // The model segment arrives percent-encoded (an SDK encodes it; ':' and '/' may be too).
      // A bad escape keeps its '%', which the model-name rule then refuses with a 400.
      const std::string_view rawModel = rest.substr(0, colon);
      call.model = providers::percentDecode(rawModel).value_or(std::string(rawModel));
      call.op = std::string(rest.substr(colon + 1));
      static constexpr std::string_view kOps[] = {"generateContent", "streamGenerateContent", "countTokens",
                                                  "embedContent", "batchEmbedContents"};
      return std::find(std::begin(kOps), std::end(kOps), call.op) != std::end(kOps);
    }
    if (call.wire == Wire::OpenAI && isProxied(p)) {
      call.op = std::string(p.substr(3));
      return true;
    }
    return false;
  }

  static void renderKeyStates(const Snapshot& snap, std::string& out) {
    out += "# HELP sluice_upstream_key_state Upstream key health: 1 for the state the key is in.\n";
    out += "# TYPE sluice_upstream_key_state gauge\n";
    auto now = routing::nowMs();
    for (const auto& ch : snap.router->channels()) {
      for (const auto& k : ch->keys) {
        const char* state = k.health->disabled.load() ? "disabled" : k.health->available(now) ? "active" : "cooling";
        out += fmt::format("sluice_upstream_key_state{{channel=\"{}\",key=\"{}\",state=\"{}\"}} 1\n",
                           metrics::labelValue(ch->cfg.name), metrics::labelValue(k.id), state);
      }
    }
    out += "# HELP sluice_channel_breaker_open 1 while a channel's circuit breaker is open.\n";
    out += "# TYPE sluice_channel_breaker_open gauge\n";
    for (const auto& ch : snap.router->channels()) {
      auto until = ch->health->open_until_ms.load();
      out += fmt::format("sluice_channel_breaker_open{{channel=\"{}\"}} {}\n", metrics::labelValue(ch->cfg.name),
                         until > now ? 1 : 0);
    }
  }

  std::unique_ptr<store::LogWriter> logs_;  // declared first: outlives the server's workers
  std::unique_ptr<admin::AdminApi> admin_;
  std::string path_;
  std::string embedded_text_;
  net::ssl::context tls_;
  std::unique_ptr<http::Server> server_;
  std::vector<std::unique_ptr<WorkerState>> workers_;
  net::io_context control_ioc_;
  // Installed before the listening line is printed, so a signal sent right after is handled.
  net::signal_set signals_{control_ioc_, SIGINT, SIGTERM, SIGHUP};
  FileStamp stamp_;
  // The edge's certificate (null: plain HTTP), the files it came from and their stamps as last
  // loaded (control thread only, after start).
  std::shared_ptr<http::ServerTls> edge_tls_;
  config::ServerTlsConfig tls_files_;
  FileStamp tls_cert_stamp_;
  FileStamp tls_key_stamp_;
  std::atomic<std::uint64_t> tls_reloads_ok_{0};
  std::atomic<std::uint64_t> tls_reloads_failed_{0};
  bool split_admin_ = false;  // admin.listen was set at start (a reload cannot change it)
  std::unique_ptr<http::Server> embedded_mock_;
  std::thread embedded_mock_thread_;
  LineWriter access_;
  // Declared after server_: destroyed before the workers' io_contexts it holds sockets on.
  cluster::Limiter limiter_;
  // The response cache: in memory, or in Redis when redis.url is set. Its backend and sizes are
  // chosen at start (a reload changes whether and how long answers are cached, not where).
  std::unique_ptr<cache::ResponseCache> cache_;

  std::unique_ptr<ControlPlane> control_;  // after limiter_: uses it

  // Store work the live admin endpoints need, on its own thread.
  net::thread_pool ops_pool_{1};
  std::unique_ptr<store::Store> ops_store_;  // ops_pool_ only
  store::StoreProbe store_probe_;  // sluice_store_up, from a thread of its own

};

void setupLogging() {
  spdlog::set_default_logger(spdlog::stderr_logger_mt("sluice"));
  spdlog::set_pattern("%Y-%m-%dT%H:%M:%S.%e %^%l%$ %v");
}

}  // namespace

int runServe(const std::string& config_path) {
  setupLogging();
  std::shared_ptr<const config::Config> cfg;
  std::unique_ptr<http::Server> mock;
  std::string text;
  try {
    if (config_path.empty()) {
      // The embedded default: start the mock in-process on a free loopback port first.
      mock = std::make_unique<http::Server>(1, http::ServerLimits{}, mock::makeHandler(mock::MockOptions{}));
      auto ep = mock->listen("127.0.0.1", 0);
      text = embeddedConfig(fmt::format("127.0.0.1:{}", ep.port()));
      cfg = config::parseConfig(text, "(embedded default)");
    } else {
      cfg = config::loadConfigFile(config_path);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 2;
  }
  if (cfg->auth.master_key.empty()) {
    std::fprintf(stderr, "%s: auth.master_key is empty: set it, e.g. master_key: \"${SLUICE_MASTER_KEY}\"\n",
                 config_path.c_str());
    return 2;
  }
  // The request log: the schema is checked (and migrated) now so a bad store URL stops the
  // start; a database that is merely down does not: rows wait in the queue meanwhile.
  std::unique_ptr<store::LogWriter> logs;
  if (cfg->store.request_logs) {
    const std::string url = cfg->store.url;
    auto factory = [url] {
      auto s = store::Store::open(url);
      s->migrate();
      return s;
    };
    try {
      factory();
    } catch (const store::StoreError& e) {
      if (!e.transient()) {
        std::fprintf(stderr, "store.url: %s\n", e.what());
        return 2;
      }
      spdlog::warn("store: {} (serving anyway; request logs wait in the queue)", e.what());
    }
    store::LogWriter::Options opts;
    opts.retention_days = cfg->store.log_retention_days;
    logs = std::make_unique<store::LogWriter>(factory, opts);
  }
  try {
    Gateway gw(cfg, config_path, text, std::move(mock), std::move(logs));
    gw.startEmbeddedMock();
    return gw.run();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 2;
  }
}

}  // namespace sluice::gateway
