#include "mock/MockServer.hpp"

#include "http/Server.hpp"
#include "mock/MockKnobs.hpp"
#include "mock/MockService.hpp"

#include <boost/asio/signal_set.hpp>
#include <spdlog/spdlog.h>

#include <csignal>
#include <iostream>
#include <memory>
#include <thread>

namespace sluice::mock {

http::Handler makeHandler(const MockOptions& options, const http::Server& server) {
  auto service = std::make_shared<MockService>(options);
  service->stats().countConnectionsWith([&server] { return server.acceptedConnections(); });
  return [service](http::Request& req, http::Responder& r) { return service->handle(req, r); };
}

int runMock(const MockOptions& options) {
  if (auto bad = validateOptions(options)) {
    std::cerr << "sluice mock: " << *bad << "\n";
    return 2;
  }
  std::string host;
  std::uint16_t port = 0;
  if (!http::splitHostPort(options.listen, host, port)) {
    std::cerr << "sluice mock: --listen must be HOST:PORT or [V6]:PORT, got '" << options.listen << "'\n";
    return 2;
  }
  if (host == "localhost") host = "127.0.0.1";

  http::Server server(options.workers, http::ServerLimits{}, {});
  server.setHandler(makeHandler(options, server));

  http::tcp::endpoint bound;
  try {
    bound = server.listen(host, port);
  } catch (const std::exception& e) {
    std::cerr << "sluice mock: cannot listen on " << options.listen << ": " << e.what() << "\n";
    return 1;
  }

  // Signals are waited for on their own small context, so stop() never competes with a worker.
  net::io_context signal_ctx(1);
  net::signal_set signals(signal_ctx, SIGINT, SIGTERM);
  const auto grace = std::chrono::milliseconds(std::max(0, options.shutdown_grace_ms));
  signals.async_wait([&server, grace](const boost::system::error_code& ec, int signo) {
    if (ec) return;
    spdlog::info("sluice mock: signal {}, stopping (grace {} ms)", signo, grace.count());
    server.stop(grace);
  });
  std::thread signal_thread([&signal_ctx] { signal_ctx.run(); });

  const std::string shown =
      bound.address().is_v6() ? "[" + bound.address().to_string() + "]" : bound.address().to_string();
  std::cout << "sluice mock listening on " << shown << ":" << bound.port() << std::endl;

  server.run();

  signal_ctx.stop();
  signal_thread.join();
  return 0;
}

}  // namespace sluice::mock
