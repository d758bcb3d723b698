// An HTTP/1.1 server on loopback, on a thread of its own, for unit tests of the gateway's own
// calls out (the guardrail's webhook, the trace exporter): every request is recorded and
// answered by `respond`, on connections kept alive as long as the client keeps them.
#pragma once
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>

#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace sluice::loopback {

struct Received {
  std::string target;
  std::string content_type;
  std::string authorization;
  std::string body;
};

struct Reply {
  int status = 200;
  std::string body = "{}";  // sent as application/json
};

class Server {
 public:
  using Respond = std::function<Reply(const Received&)>;

  explicit Server(Respond respond)
      : respond_(std::move(respond)), acceptor_(ioc_, {boost::asio::ip::make_address("127.0.0.1"), 0}) {
    boost::asio::co_spawn(ioc_, serve(), boost::asio::detached);
    thread_ = std::thread([this] { ioc_.run(); });
  }
  ~Server() {
    boost::asio::post(ioc_, [this] {
      acceptor_.close();
      ioc_.stop();
    });
    thread_.join();
  }
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  unsigned short port() const { return port_; }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  std::vector<Received> received() {
    std::lock_guard lk(mu_);
    return received_;
  }

 private:
  boost::asio::awaitable<void> serve() {
    for (;;) {
      auto [ec, socket] = co_await acceptor_.async_accept(boost::asio::as_tuple(boost::asio::use_awaitable));
      if (ec) co_return;
      boost::asio::co_spawn(ioc_, session(std::move(socket)), boost::asio::detached);
    }
  }

  boost::asio::awaitable<void> session(boost::asio::ip::tcp::socket socket) {
    namespace bhttp = boost::beast::http;
    boost::beast::flat_buffer buf;
    for (;;) {
      bhttp::request<bhttp::string_body> req;
      auto [rec, n] = co_await bhttp::async_read(socket, buf, req, boost::asio::as_tuple(boost::asio::use_awaitable));
      if (rec) co_return;
      Received got{std::string(req.target()), std::string(req[bhttp::field::content_type]),
                   std::string(req[bhttp::field::authorization]), req.body()};
      Reply reply;
      {
        std::lock_guard lk(mu_);
        received_.push_back(got);
        reply = respond_(got);
      }
      bhttp::response<bhttp::string_body> res{static_cast<bhttp::status>(reply.status), 11};
      res.set(bhttp::field::content_type, "application/json");
      res.keep_alive(req.keep_alive());
      res.body() = std::move(reply.body);
      res.prepare_payload();
      auto [wec, w] = co_await bhttp::async_write(socket, res, boost::asio::as_tuple(boost::asio::use_awaitable));
      if (wec || !req.keep_alive()) co_return;
    }
  }

  Respond respond_;
  boost::asio::io_context ioc_;
  boost::asio::ip::tcp::acceptor acceptor_;
  unsigned short port_ = acceptor_.local_endpoint().port();
  std::thread thread_;
  std::mutex mu_;
  std::vector<Received> received_;
};

}  // namespace sluice::loopback
