#include "upstream/Post.hpp"

#include <stdexcept>

namespace sluice::upstream {

using Clock = std::chrono::steady_clock;

PostTarget makePostTarget(const std::string& url, const std::map<std::string, std::string>& headers,
                          std::chrono::milliseconds timeout, const std::string& what) {
  PostTarget t;
  // parseBaseUrl keeps the path as a base path; a query stays part of the target.
  std::string base = url;
  std::string query;
  if (auto q = base.find('?'); q != std::string::npos) {
    query = base.substr(q);
    base.resize(q);
  }
  if (auto why = parseBaseUrl(base, t.endpoint); !why.empty()) throw std::invalid_argument(what + ": " + why);
  t.path = t.endpoint.base_path.empty() ? "/" : t.endpoint.base_path;
  t.path += query;
  for (const auto& [k, v] : headers) t.extra_headers.append(k).append(": ").append(v).append("\r\n");
  t.timeout = timeout;
  return t;
}

boost::asio::awaitable<PostResult> post(Pool& pool, const PostTarget& target, std::string_view type,
                                        const std::string& payload, std::size_t body_limit) {
  PostResult out;
  const auto deadline = Clock::now() + target.timeout;
  auto left = [&] {
    auto d = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    return std::max(d, std::chrono::milliseconds(1));
  };
  std::string head;
  head.reserve(256);
  head.append(target.get ? "GET " : "POST ").append(target.path).append(" HTTP/1.1\r\nHost: ");
  head.append(target.endpoint.host_header);
  if (!target.get) head.append("\r\nContent-Type: ").append(type);
  head.append("\r\nAccept: ").append(target.accept).append("\r\n");
  head.append(target.extra_headers);
  if (target.get)
    head.append("\r\n");
  else
    head.append("Content-Length: ").append(std::to_string(payload.size())).append("\r\n\r\n");

  for (int fresh = 0; fresh < 2; ++fresh) {
    auto [cec, conn] = co_await pool.acquire(target.endpoint, left(), fresh == 0);
    if (cec) {
      out.failure = PostResult::Failure::Connect;
      out.timed_out = cec == boost::beast::error::timeout;
      out.error = cec.message();
      co_return out;
    }
    auto ec = co_await conn->writeRaw(head, payload, left());
    ResponseParser parser;
    parser.body_limit(body_limit);
    if (!ec) ec = co_await conn->readHeader(parser, left());
    if (ec) {
      const bool stale = conn->reused && ec != boost::beast::error::timeout;
      conn->close();
      if (stale && fresh == 0) continue;  // a pooled connection the server had closed
      out.failure = PostResult::Failure::Send;
      out.timed_out = ec == boost::beast::error::timeout;
      out.error = ec.message();
      co_return out;
    }
    while (!parser.is_done()) {
      auto [rec, got] = co_await conn->readBody(parser, left());
      out.body.append(got);
      if (rec) {
        conn->close();
        out.failure = PostResult::Failure::Body;
        out.timed_out = rec == boost::beast::error::timeout;
        out.error = rec.message();
        co_return out;
      }
    }
    out.status = static_cast<int>(parser.get().result_int());
    out.content_type = std::string(parser.get()[boost::beast::http::field::content_type]);
    if (target.keep_headers) {
      for (const auto& f : parser.get()) out.headers.emplace_back(std::string(f.name_string()), std::string(f.value()));
    }
    if (parser.get().keep_alive())
      pool.release(std::move(conn));
    else
      conn->close();
    co_return out;
  }
  co_return out;
}

}  // namespace sluice::upstream
