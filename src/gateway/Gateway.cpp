#include "gateway/Gateway.hpp"

#include <fmt/format.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/websocket/rfc6455.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>
#include <boost/json/value_from.hpp>

#include <algorithm>
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
#include "gateway/Classify.hpp"
#include "gateway/ControlPlane.hpp"
#include "gateway/EmbeddedConfig.hpp"
#include "gateway/GatewayMetrics.hpp"
#include "auth/OidcService.hpp"
#include "gateway/AdminGate.hpp"
#include "gateway/LiveAdmin.hpp"
#include "gateway/McpEndpoint.hpp"
#include "gateway/ObjectRoutes.hpp"
#include "gateway/Probe.hpp"
#include "gateway/Proxy.hpp"
#include "gateway/RequestLog.hpp"
#include "gateway/ResponseStoreService.hpp"
#include "gateway/SubscriptionService.hpp"
#include "gateway/ResponsesSocket.hpp"
#include "http/Server.hpp"
#include "http/ServerTls.hpp"
#include "mcp/McpHub.hpp"
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
#include "telemetry/Tracer.hpp"
#include "upstream/Client.hpp"

namespace sluice::gateway {

namespace net = boost::asio;
namespace bhttp = boost::beast::http;
namespace json = boost::json;
using Clock = std::chrono::steady_clock;

namespace {

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
        embedded_mock_(std::move(embeddedMock)),
        access_(STDOUT_FILENO),
        limiter_(cluster::Limiter::Options{cfg->redis.url}),
        cache_(makeCache(*cfg)),
        control_(std::make_unique<ControlPlane>(cfg, limiter_, healthRegistry())),
        store_probe_(cfg->store.url),
        responses_(std::make_unique<ResponseStoreService>(cfg->store.url)),
        subscriptions_(std::make_unique<SubscriptionService>(cfg->store.url, cfg->store.secret_key)) {
    if (cfg->store.responses.enabled) responses_->startSweeping();
    live_ = std::make_unique<LiveAdmin>(
        LiveAdmin::Host{*control_, control_ioc_, [this](const char* why) { return reload(why); }, path_, cache_.get()});
    admin_ = std::make_unique<admin::AdminApi>(cfg->store.url);
    admin_->setConfigSource([this] { return control_->fileConfig(); });
    admin_->onChange([this] { control_->refreshNowAndWait(); });
    admin_->setMcpSource([this] { return mcp_ ? mcp_->states() : std::vector<mcp::ServerState>{}; });
    oidc_ = std::make_unique<auth::OidcService>(cfg->store.url);
    admin_gate_ = std::make_unique<AdminGate>(*admin_, *live_, oidc_.get());
    auto first = control_->initial();
    warmClientTls(*first);
    configureTracing(first->cfg->telemetry);
    const auto& s = first->cfg->server;
    http::ServerLimits limits;
    limits.max_body_bytes = s.max_body_bytes;
    limits.max_header_bytes = s.max_header_bytes;
    limits.header_timeout = s.header_timeout;
    limits.pack_connections = s.pack_connections;
    limits.keepalive_timeout = s.keepalive_timeout;
    server_ = std::make_unique<http::Server>(s.workers, limits,
                                             [this](http::Request& req, http::Responder& r) { return handle(req, r); });
    server_->setStreamBody(streamsBody);  // large uploads stream through to the provider
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
    net::co_spawn(server_->workerContext(0), discoveryLoop(*workers_[0]), net::detached);
    // The MCP servers: the config's and the store's; each published snapshot may change the set.
    mcp_ = std::make_unique<mcp::McpHub>(first->cfg->mcp.servers, tls_);
    mcp_endpoint_ = std::make_unique<McpEndpoint>(*mcp_, limiter_);
    mcp_->onListChanged([ep = mcp_endpoint_.get()](const std::string& method) { ep->broadcast(method); });
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
                server_->workerCount(), current->cfg->channels.size(),
                path_.empty() ? "embedded default" : path_.c_str());
    if (path_.empty()) {
      bool devKey = current->cfg->auth.master_key == kDevMasterKey;
      std::printf("  master key: %s%s\n", current->cfg->auth.master_key.c_str(),
                  devKey ? "  (the demo key; set SLUICE_MASTER_KEY to choose your own)" : "");
      std::printf(
          "  try: curl -N http://%s/v1/chat/completions -H 'Authorization: Bearer %s' \\\n"
          "         -H 'Content-Type: application/json' \\\n"
          "         -d "
          "'{\"model\":\"mock-1\",\"stream\":true,\"messages\":[{\"role\":\"user\",\"content\":\"Hello\"}]}'\n",
          addr.c_str(), devKey ? kDevMasterKey : "$SLUICE_MASTER_KEY");
    }
    std::fflush(stdout);

    // Control thread: signals and config-file watching, off the workers. Refresher: the
    // store's keys and channels, off both (a slow database must not delay a signal).
    mcp_->start();
    std::thread control([this] { controlLoop(); });
    control_->start([this](const std::shared_ptr<const Snapshot>& next) { publish(next); });
    server_->run();
    mcp_->stop();  // stdio servers' processes end with the gateway
    control_ioc_.stop();
    control.join();
    control_->stop();
    if (embedded_mock_) {
      embedded_mock_->stop(std::chrono::milliseconds(100));
      embedded_mock_thread_.join();
    }
    access_.drain();
    // The spans of the requests served go to the collector before exit (a bounded wait).
    tracer_.stop(std::chrono::seconds(5));
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
    WorkerState(net::io_context& ioc, upstream::ClientTls& tls) : pool(ioc, tls) {}
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
        // A subscription key rests until its usage window resets, or stays off until its owner
        // signs in again: no probe brings it back early (nor may carry its credential file).
        if (!ch->cfg.subscription.empty()) continue;
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

  // Model discovery: a channel whose `models` hold globs has its provider's model list read at
  // start (or when a reload adds or changes it) and every routing.discovery_interval, with a key
  // that is not disabled; a failed read keeps the last good list. One channel at a time, on
  // worker 0, checked every second.
  net::awaitable<void> discoveryLoop(WorkerState& ws) {
    net::steady_timer t(co_await net::this_coro::executor);
    for (;;) {
      const auto snap = ws.snap;  // keeps every channel below alive across the reads
      const auto every = snap->cfg->routing.discovery_interval;
      for (const auto& ch : snap->router->channels()) {
        if (every.count() == 0 || !ch->discovers() || ch->keys.empty()) continue;
        std::string source = std::string(config::channelTypeName(ch->cfg.type)) + ' ' + ch->cfg.base_url;
        for (const auto& m : ch->cfg.models) source.append(" ").append(m);
        if (!ch->health->discoveryDue(source, routing::nowMs(), every.count())) continue;
        const auto key = std::find_if(ch->keys.begin(), ch->keys.end(),
                                      [](const routing::UpstreamKey& k) { return !k.health->disabled.load(); });
        if (key == ch->keys.end()) {
          ch->health->discoveryFailed("every key of the channel is disabled");
          continue;
        }
        ModelListing l = co_await listModels(ws.pool, *ch, *key, snap->cfg->routing.timeouts.first_byte, snap->scrubber);
        if (!l.ok) {
          spdlog::warn("channel {}: model discovery failed ({}); its last list is kept", ch->cfg.name, l.message);
          ch->health->discoveryFailed(std::move(l.message));
          continue;
        }
        const std::size_t n = l.models.size();
        const auto unixMs = std::chrono::duration_cast<std::chrono::milliseconds>(
                                std::chrono::system_clock::now().time_since_epoch())
                                .count();
        if (ch->health->discoverySucceeded(std::move(l.models), unixMs))
          spdlog::info("channel {}: the provider lists {} models its globs match", ch->cfg.name, n);
      }
      t.expires_after(std::chrono::seconds(1));
      auto [ec] = co_await t.async_wait(net::as_tuple(net::use_awaitable));
      if (ec) co_return;
    }
  }

  // The trust store is loaded here, on the control thread, as soon as a config has an https
  // channel, never on a worker in the middle of a request.
  void warmClientTls(const Snapshot& snap) {
    if (tls_.loaded()) return;
    for (const auto& ch : snap.router->channels()) {
      if (ch->endpoint.tls) {
        tls_.get();
        return;
      }
    }
  }

  // Makes `next` the snapshot every worker uses from its next request on.
  void publish(const std::shared_ptr<const Snapshot>& next) {
    warmClientTls(*next);
    if (mcp_) mcp_->setServers(next->cfg->mcp.servers);
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
        if (mcp_endpoint_) mcp_endpoint_->shutdown();  // open /mcp streams end, cleanly
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

  // The loader checked the endpoint already; should the exporter still refuse it, the gateway
  // serves on untraced rather than stopping.
  void configureTracing(const config::TelemetryConfig& t) {
    try {
      tracer_.configure(t);
    } catch (const std::exception& e) {
      spdlog::error("telemetry: tracing stays off: {}", e.what());
      tracer_.configure(config::TelemetryConfig{});
    }
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
    configureTracing(after.telemetry);
    if (before->server.listen != after.server.listen || before->server.workers != after.server.workers ||
        before->server.pack_connections != after.server.pack_connections)
      spdlog::warn("reload: server.listen, server.workers and server.pack_connections take effect only after a restart");
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
    ctx.remote =
        http::clientAddress(snap->cfg->server.trusted_proxies, r.remote(), req);  // behind proxies: their client

    RequestRecord rec;
    auto& reg = metrics::registry();
    reg.active_requests.fetch_add(1, std::memory_order_relaxed);
    // Everything but the proxy API is answered in route(), whose frame (every branch's locals:
    // about 3 KB) is gone again before a stream begins; the proxy API runs in proxyApi(), whose
    // frame is what each open stream holds.
    ClientCall call;
    if (!co_await route(*snap, ws, req, r, ctx, rec, call)) co_await proxyApi(*snap, ws, req, r, ctx, call, rec);
    reg.active_requests.fetch_sub(1, std::memory_order_relaxed);
    if (!rec.status) co_return;  // an unlogged housekeeping endpoint
    scrubRecord(*snap, rec);
    rec.duration_ms = std::chrono::duration<double, std::milli>(Clock::now() - ctx.start).count();
    reg.record(metrics::RequestSample{rec.channel, rec.model, rec.status, rec.ttfb_ms, rec.duration_ms,
                                      rec.input_tokens, rec.output_tokens, rec.attempts});
    access_.append(accessLogLine(req, ctx, rec));
    if (logs_) logs_->enqueue(logRecord(req, ctx, rec));  // never waits on the database
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

  // Answers what is not the proxy API (true); for the proxy API, says which call it is (false).
  net::awaitable<bool> route(const Snapshot& snap, WorkerState& ws, http::Request& req, http::Responder& r,
                             const RequestContext& ctx, RequestRecord& rec, ClientCall& call) {
    const auto& path = ctx.path;
    auto method = req.method();

    // Housekeeping: no auth, not logged.
    if (path == "/healthz") {
      json::value ok = json::object{{"status", "ok"}};
      co_await sendJson(r, ctx, 200, ok);
      co_return true;
    }
    if (path == "/metrics" && method == bhttp::verb::get) {
      http::Response res{bhttp::status::ok, 11};
      res.set(bhttp::field::content_type, "text/plain; version=0.0.4");
      res.body() = metrics::registry().render([&](std::string& out) {
        renderKeyStates(snap, out);
        limiter_.renderMetrics(out);
        store_probe_.renderMetrics(out);
        if (cache_) renderCacheMetrics(cache_->stats(), out);
        if (edge_tls_) renderTlsMetrics(tls_reloads_ok_.load(), tls_reloads_failed_.load(), out);
        renderLogMetrics(access_.dropped(), logs_ ? std::optional(logs_->stats()) : std::nullopt, out);
        tracer_.renderMetrics(out);
        renderStoredResponseMetrics(responses_->stored(), responses_->expired(), out);
        mcp_->renderMetrics(out);
        out += "# HELP sluice_mcp_streams_open GET /mcp streams open (server-to-client notifications).\n";
        out += "# TYPE sluice_mcp_streams_open gauge\n";
        out += "sluice_mcp_streams_open " + std::to_string(mcp_endpoint_->openStreams()) + "\n";
        out += "# HELP sluice_connections_open Client connections open, by the worker thread serving them.\n";
        out += "# TYPE sluice_connections_open gauge\n";
        const std::vector<int> open = server_->openConnections();
        for (std::size_t i = 0; i < open.size(); ++i)
          out += fmt::format("sluice_connections_open{{worker=\"{}\"}} {}\n", i, open[i]);
      });
      co_await r.send(std::move(res));
      co_return true;
    }
    // With admin.listen set, the console and the admin API live on that listener only, and the
    // proxy API only on the public one; each answers the other's paths as unknown routes.
    const bool onAdmin = split_admin_ && r.listener() == kAdminListener;
    const bool adminPlane = !split_admin_ || onAdmin;
    const bool adminApi = path.starts_with("/admin/api/");
    // The console's single sign-on (auth.oidc): the IdP redirects, the session cookie.
    if (adminPlane && path.starts_with("/auth/")) {
      http::Response res = co_await oidc_->handle(*snap.cfg, ws.pool, req, path, ctx.query);
      res.set("x-request-id", ctx.id);
      co_await r.send(std::move(res));
      co_return true;
    }
    if (adminPlane && !adminApi && (method == bhttp::verb::head || method == bhttp::verb::get)) {
      if (std::optional<http::Response> page = console::serve(req, path)) {
        co_await r.send(std::move(*page));
        co_return true;
      }
    }
    if (onAdmin && !adminApi) {
      std::string message = fmt::format(
          "no route for {} {} on the admin listener (it serves the admin API, the console, /healthz and /metrics)",
          std::string(req.method_string()), path);
      co_await sendError(r, ctx, rec, Wire::OpenAI, 404, "invalid_request_error", "not_found", message);
      co_return true;
    }

    if (adminPlane && adminApi) {
      // The control plane: the master key or an admin token, within its role; writes audited.
      http::Response res = co_await admin_gate_->handle(snap, ws.pool, req, path.substr(10), ctx.query, ctx.remote);
      // A refused credential or role is logged as the proxy's refusals are; admin calls otherwise not.
      if (res.result_int() == 401 || res.result_int() == 403) {
        rec.status = res.result_int();
        rec.error = res.result_int() == 401 ? "admin API: credential refused" : "admin API: role refused";
      }
      res.set("x-request-id", ctx.id);
      co_await r.send(std::move(res));
      co_return true;
    }

    // The MCP gateway: JSON-RPC to the configured MCP servers, not a model request (no chain).
    if (path == "/mcp") {
      co_await mcp_endpoint_->handle(snap, req, r, ctx, rec);
      co_return true;
    }

    // The Responses API's WebSocket mode: each message runs the request path as a POST.
    if (path == "/v1/responses" && method == bhttp::verb::get && boost::beast::websocket::is_upgrade(req)) {
      co_await responsesSocket(snap, req, r, ctx, rec);
      co_return true;
    }

    // Which API the client speaks decides the error format from here on.
    if (!classify(path, req, call)) {
      std::string message = fmt::format("no route for {} {}", std::string(req.method_string()), path);
      co_await sendError(r, ctx, rec, call.wire, 404, "invalid_request_error", "not_found", message);
      co_return true;
    }
    co_return false;
  }

  // The request path, stage by stage (gateway/Chain.cpp).
  net::awaitable<void> proxyApi(const Snapshot& snap, WorkerState& ws, http::Request& req, http::Responder& r,
                                const RequestContext& ctx, ClientCall& call, RequestRecord& rec) {
    Services svc{ws.pool, limiter_, cache_.get(), &tracer_, responses_.get(), &objects_, subscriptions_.get()};
    Exchange ex(snap, svc, req, r, ctx, call, rec);
    co_await runChain(ex);
  }

  // Authenticates the upgrade (a refused key gets its 401 before any socket), then serves it.
  // Logged once, as a 101, when the socket closes; each response on it is logged as a POST.
  net::awaitable<void> responsesSocket(const Snapshot& snap, http::Request& req, http::Responder& r,
                                       const RequestContext& ctx, RequestRecord& rec) {
    KeyCheck check = checkKey(snap, presentedKey(req, ctx.query));
    if (!check.ok()) {
      co_await sendError(r, ctx, rec, Wire::OpenAI, 401, "invalid_request_error", check.code, check.message);
      co_return;
    }
    rec.status = 101;
    if (check.vk) rec.virtual_key_id = check.vk->id;
    ResponsesSocketOptions o;
    o.max_message_bytes = snap.cfg->server.max_body_bytes;
    o.idle_timeout = snap.cfg->server.keepalive_timeout;
    co_await serveResponsesSocket(req, r, o, [this](http::Request& q, http::Responder& rr) { return handle(q, rr); });
  }

  static std::unique_ptr<cache::ResponseCache> makeCache(const config::Config& cfg) {
    cache::CacheBackendOptions o;
    o.redis_url = cfg.redis.url;
    o.memory_max_bytes = cfg.cache.max_bytes;
    o.max_entry_bytes = cfg.cache.max_entry_bytes;
    return cache::makeResponseCache(o);
  }

  std::unique_ptr<store::LogWriter> logs_;  // declared first: outlives the server's workers
  telemetry::Tracer tracer_;                // idem: the workers hand it their spans
  ObjectRoutes objects_;                    // idem: which channel holds each file and batch
  std::unique_ptr<admin::AdminApi> admin_;
  std::string path_;
  std::string embedded_text_;
  upstream::ClientTls tls_;  // the upstream trust store, loaded when a channel needs it
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

  std::unique_ptr<LiveAdmin> live_;  // after control_ and cache_: acts on them
  std::unique_ptr<auth::OidcService> oidc_;  // console sign-in through auth.oidc; sessions in the store
  std::unique_ptr<AdminGate> admin_gate_;  // after admin_, live_ and oidc_: sends calls to them
  store::StoreProbe store_probe_;    // sluice_store_up, from a thread of its own
  // Stored responses (store.responses), on a thread of its own; the store URL is fixed at start.
  std::unique_ptr<ResponseStoreService> responses_;
  std::unique_ptr<SubscriptionService> subscriptions_;  // subscription channels' live credentials
  // The MCP servers (their own thread) and /mcp; after limiter_ and tls_, which they use.
  std::unique_ptr<mcp::McpHub> mcp_;
  std::unique_ptr<McpEndpoint> mcp_endpoint_;
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
      mock = std::make_unique<http::Server>(1, http::ServerLimits{}, http::Handler{});
      mock->setHandler(mock::makeHandler(mock::MockOptions{}, *mock));
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
