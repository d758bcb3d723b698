// AdminApi: the JSON API under /admin/api/ (master key only). Its handlers run database work on
// their own thread, never on a gateway worker, and answer on the worker that received the
// request. Thread-safety: handle() may be called from any worker concurrently.
#pragma once
#include <boost/asio/awaitable.hpp>
#include <boost/asio/thread_pool.hpp>
#include <memory>
#include <string>

#include "http/Server.hpp"

namespace sluice::admin {

class AdminApi {
 public:
  explicit AdminApi(std::string store_url);
  ~AdminApi();

  // `path` is under /admin/api (e.g. "/logs"), `query` without the '?'. Returns the response.
  boost::asio::awaitable<http::Response> handle(const http::Request& req, std::string path, std::string query);

 private:
  http::Response serve(bool get, const std::string& path, const std::string& query);  // on pool_
  struct State;
  std::unique_ptr<State> state_;  // the store connection: touched only on pool_'s thread
  boost::asio::thread_pool pool_{1};
};

}  // namespace sluice::admin
