#include "cluster/Redis.hpp"

#include <hiredis/hiredis.h>
#include <openssl/evp.h>

#include <array>
#include <atomic>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/url/parse.hpp>
#include <charconv>
#include <deque>
#include <stdexcept>
#include <unordered_map>

namespace sluice::cluster {

namespace net = boost::asio;
namespace beast = boost::beast;
using tcp = net::ip::tcp;
using Clock = std::chrono::steady_clock;

namespace {

constexpr auto kTuple = net::as_tuple(net::use_awaitable);
// Enough for the handful of coroutines a worker has waiting on Redis at once; more would only
// move the queue from here into Redis.
constexpr std::size_t kMaxConnsPerContext = 8;

RedisReply convert(const redisReply* r) {
  RedisReply out;
  switch (r->type) {
    case REDIS_REPLY_INTEGER:
      out.type = RedisReply::Type::Integer;
      out.integer = r->integer;
      break;
    case REDIS_REPLY_STRING:
    case REDIS_REPLY_STATUS:
    case REDIS_REPLY_ERROR:
      out.type = r->type == REDIS_REPLY_STRING   ? RedisReply::Type::String
                 : r->type == REDIS_REPLY_STATUS ? RedisReply::Type::Status
                                                 : RedisReply::Type::Error;
      out.str.assign(r->str, r->len);
      break;
    case REDIS_REPLY_ARRAY:
      out.type = RedisReply::Type::Array;
      out.elements.reserve(r->elements);
      for (std::size_t i = 0; i < r->elements; ++i) out.elements.push_back(convert(r->element[i]));
      break;
    default:
      break;  // Nil
  }
  return out;
}

struct Argv {
  explicit Argv(const std::vector<std::string>& args) {
    for (const auto& a : args) {
      ptrs.push_back(a.data());
      lens.push_back(a.size());
    }
  }
  std::vector<const char*> ptrs;
  std::vector<std::size_t> lens;
};

std::string where(const RedisEndpoint& ep) {
  return ep.host + ":" + std::to_string(ep.port);
}

std::vector<std::vector<std::string>> handshake(const RedisEndpoint& ep) {
  std::vector<std::vector<std::string>> cmds;
  if (!ep.password.empty()) {
    if (ep.user.empty()) {
      cmds.push_back({"AUTH", ep.password});
    } else {
      cmds.push_back({"AUTH", ep.user, ep.password});
    }
  }
  if (ep.db != 0) cmds.push_back({"SELECT", std::to_string(ep.db)});
  return cmds;
}

struct ReaderFree {
  void operator()(redisReader* r) const { redisReaderFree(r); }
};
struct CommandFree {
  void operator()(char* c) const { redisFreeCommand(c); }
};

struct Conn {
  explicit Conn(const net::any_io_executor& ex) : stream(ex) {}
  beast::tcp_stream stream;
  std::unique_ptr<redisReader, ReaderFree> reader;
  bool connected = false;
  bool busy = false;
  std::array<char, 16384> buf{};
};

struct Pool {
  std::weak_ptr<int> owner;
  std::vector<std::unique_ptr<Conn>> conns;
  std::deque<net::steady_timer*> waiters;  // coroutines waiting for a free connection

  Conn* take(const net::any_io_executor& ex) {
    for (auto& c : conns) {
      if (!c->busy) {
        c->busy = true;
        return c.get();
      }
    }
    if (conns.size() >= kMaxConnsPerContext) return nullptr;
    conns.push_back(std::make_unique<Conn>(ex));
    conns.back()->busy = true;
    return conns.back().get();
  }
  void give(Conn* c, bool healthy) {
    if (!healthy) {
      beast::error_code ignored;
      c->stream.socket().close(ignored);
      c->connected = false;
    }
    c->busy = false;
    if (!waiters.empty()) {
      waiters.front()->cancel();
      waiters.pop_front();
    }
  }
};

// The connections live in their io_context, so they are closed on that context's thread and
// before the context goes away, whichever of client and context is destroyed first.
class PoolService : public net::execution_context::service {
 public:
  static inline net::execution_context::id id;
  explicit PoolService(net::execution_context& ctx) : net::execution_context::service(ctx) {}

  std::shared_ptr<Pool> pool(std::uint64_t client, const std::shared_ptr<int>& alive) {
    std::lock_guard lock(mu_);
    if (auto it = pools_.find(client); it != pools_.end()) return it->second;
    // A new client (a config reload made a new limiter): drop the pools of destroyed ones.
    std::erase_if(pools_, [](const auto& kv) { return kv.second->owner.expired(); });
    auto p = std::make_shared<Pool>();
    p->owner = alive;
    pools_.emplace(client, p);
    return p;
  }

 private:
  void shutdown() override {
    std::lock_guard lock(mu_);
    pools_.clear();
  }
  std::mutex mu_;
  std::unordered_map<std::uint64_t, std::shared_ptr<Pool>> pools_;
};

net::awaitable<RedisResult> exchange(Conn& c, const std::vector<std::string>& args, Clock::time_point deadline) {
  RedisResult out;
  Argv argv(args);
  char* raw = nullptr;
  int len = redisFormatCommandArgv(&raw, static_cast<int>(args.size()), argv.ptrs.data(), argv.lens.data());
  if (len < 0) {
    out.error = "cannot encode the command";
    co_return out;
  }
  std::unique_ptr<char, CommandFree> cmd(raw);
  c.stream.expires_at(deadline);
  auto wbuf = net::buffer(cmd.get(), static_cast<std::size_t>(len));
  auto [wec, wn] = co_await net::async_write(c.stream, wbuf, kTuple);
  if (wec) {
    out.error = wec == beast::error::timeout ? "timed out" : wec.message();
    co_return out;
  }
  for (;;) {
    void* reply = nullptr;
    if (redisReaderGetReply(c.reader.get(), &reply) != REDIS_OK) {
      out.error = std::string("protocol error: ") + c.reader->errstr;
      co_return out;
    }
    if (reply) {
      out.reply = convert(static_cast<redisReply*>(reply));
      freeReplyObject(reply);
      co_return out;
    }
    auto rbuf = net::buffer(c.buf);
    auto [rec, n] = co_await c.stream.async_read_some(rbuf, kTuple);
    if (rec) {
      out.error = rec == beast::error::timeout ? "timed out" : rec.message();
      co_return out;
    }
    redisReaderFeed(c.reader.get(), c.buf.data(), n);
  }
}

net::awaitable<std::string> connect(Conn& c, const RedisEndpoint& ep, Clock::time_point deadline) {
  auto ex = co_await net::this_coro::executor;
  std::vector<tcp::endpoint> eps;
  beast::error_code aec;
  auto addr = net::ip::make_address(ep.host, aec);
  if (!aec) {
    eps.emplace_back(addr, static_cast<unsigned short>(ep.port));
  } else {
    tcp::resolver resolver(ex);
    auto service = std::to_string(ep.port);
    auto [rec, results] = co_await resolver.async_resolve(ep.host, service, kTuple);
    if (rec) co_return "cannot resolve " + ep.host + ": " + rec.message();
    for (const auto& r : results) eps.push_back(r.endpoint());
  }
  c.stream.expires_at(deadline);
  auto [cec, chosen] = co_await c.stream.async_connect(eps, kTuple);
  if (cec) co_return cec == beast::error::timeout ? std::string("connect timed out") : cec.message();
  beast::error_code ignored;
  c.stream.socket().set_option(tcp::no_delay(true), ignored);
  c.reader.reset(redisReaderCreate());
  for (const auto& cmd : handshake(ep)) {
    auto r = co_await exchange(c, cmd, deadline);
    if (!r.ok()) co_return r.error;
    if (r.reply.isError()) co_return cmd[0] + ": " + r.reply.str;
  }
  c.connected = true;
  co_return std::string();
}

std::atomic<std::uint64_t> g_next_client{1};

}  // namespace

// ---------------------------------------------------------------- scripts

RedisScript::RedisScript(std::string source) : source_(std::move(source)) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  EVP_Digest(source_.data(), source_.size(), md, &n, EVP_sha1(), nullptr);
  static constexpr char kHex[] = "0123456789abcdef";
  for (unsigned int i = 0; i < n; ++i) {
    sha_ += kHex[md[i] >> 4];
    sha_ += kHex[md[i] & 15];
  }
}

std::vector<std::string> RedisScript::evalshaArgs(const std::vector<std::string>& keys,
                                                  const std::vector<std::string>& args) const {
  std::vector<std::string> out{"EVALSHA", sha_, std::to_string(keys.size())};
  out.insert(out.end(), keys.begin(), keys.end());
  out.insert(out.end(), args.begin(), args.end());
  return out;
}

bool isNoScript(const RedisResult& r) {
  return r.ok() && r.reply.isError() && r.reply.str.starts_with("NOSCRIPT");
}

// ---------------------------------------------------------------- async

RedisAsyncClient::RedisAsyncClient(RedisEndpoint endpoint, std::chrono::milliseconds timeout)
    : endpoint_(std::make_shared<const RedisEndpoint>(std::move(endpoint))),
      timeout_(timeout),
      id_(g_next_client.fetch_add(1)),
      alive_(std::make_shared<int>(0)) {}

RedisAsyncClient::~RedisAsyncClient() = default;

net::awaitable<RedisResult> RedisAsyncClient::command(const std::vector<std::string>& args) {
  auto ex = co_await net::this_coro::executor;
  auto& ctx = net::query(ex, net::execution::context);
  auto pool = net::use_service<PoolService>(ctx).pool(id_, alive_);
  auto endpoint = endpoint_;  // the frame keeps what it uses alive
  const auto deadline = Clock::now() + timeout_;
  Conn* conn = nullptr;
  while (!(conn = pool->take(ex))) {
    net::steady_timer wait(ex);
    wait.expires_at(deadline);
    pool->waiters.push_back(&wait);
    auto [ec] = co_await wait.async_wait(kTuple);
    std::erase(pool->waiters, &wait);
    if (!ec && !(conn = pool->take(ex))) {
      RedisResult timed_out;
      timed_out.error = "timed out waiting for a connection";
      co_return timed_out;
    }
    if (conn) break;
  }
  RedisResult result;
  if (!conn->connected) result.error = co_await connect(*conn, *endpoint, deadline);
  if (result.ok()) result = co_await exchange(*conn, args, deadline);
  if (!result.ok()) result.error = where(*endpoint) + ": " + result.error;
  pool->give(conn, result.ok());
  co_return result;
}

net::awaitable<RedisResult> RedisAsyncClient::eval(const RedisScript& script, const std::vector<std::string>& keys,
                                                   const std::vector<std::string>& args) {
  auto cmd = script.evalshaArgs(keys, args);
  auto r = co_await command(cmd);
  if (!isNoScript(r)) co_return r;
  cmd[0] = "EVAL";
  cmd[1] = script.source();
  co_return co_await command(cmd);
}

// ---------------------------------------------------------------- sync

namespace {

RedisResult rawCommand(redisContext* ctx, const std::vector<std::string>& args) {
  RedisResult out;
  Argv argv(args);
  auto* r = static_cast<redisReply*>(
      redisCommandArgv(ctx, static_cast<int>(args.size()), argv.ptrs.data(), argv.lens.data()));
  if (!r) {
    out.error = ctx->errstr[0] ? ctx->errstr : "connection lost";
    return out;
  }
  out.reply = convert(r);
  freeReplyObject(r);
  return out;
}

}  // namespace

RedisSyncClient::RedisSyncClient(RedisEndpoint endpoint, std::chrono::milliseconds timeout)
    : endpoint_(std::move(endpoint)), timeout_(timeout) {}

RedisSyncClient::~RedisSyncClient() {
  if (ctx_) redisFree(ctx_);
}

std::string RedisSyncClient::connectLocked() {
  auto us = std::chrono::duration_cast<std::chrono::microseconds>(timeout_).count();
  timeval tv{static_cast<time_t>(us / 1000000), static_cast<suseconds_t>(us % 1000000)};
  ctx_ = redisConnectWithTimeout(endpoint_.host.c_str(), endpoint_.port, tv);
  std::string err;
  if (!ctx_) {
    err = "cannot allocate a connection";
  } else if (ctx_->err) {
    err = ctx_->errstr;
  } else if (redisSetTimeout(ctx_, tv) != REDIS_OK) {
    err = "cannot set the timeout";
  } else {
    for (const auto& cmd : handshake(endpoint_)) {
      auto r = rawCommand(ctx_, cmd);
      if (!r.ok())
        err = r.error;
      else if (r.reply.isError())
        err = cmd[0] + ": " + r.reply.str;
      if (!err.empty()) break;
    }
  }
  if (!err.empty() && ctx_) {
    redisFree(ctx_);
    ctx_ = nullptr;
  }
  return err;
}

RedisResult RedisSyncClient::commandLocked(const std::vector<std::string>& args) {
  RedisResult out;
  if (!ctx_) out.error = connectLocked();
  if (out.ok()) out = rawCommand(ctx_, args);
  if (!out.ok()) {
    out.error = where(endpoint_) + ": " + out.error;
    if (ctx_) {
      redisFree(ctx_);  // the stream may be mid-reply: start afresh next time
      ctx_ = nullptr;
    }
  }
  return out;
}

RedisResult RedisSyncClient::command(const std::vector<std::string>& args) {
  std::lock_guard lock(mu_);
  return commandLocked(args);
}

RedisResult RedisSyncClient::eval(const RedisScript& script, const std::vector<std::string>& keys,
                                  const std::vector<std::string>& args) {
  std::lock_guard lock(mu_);
  auto cmd = script.evalshaArgs(keys, args);
  auto r = commandLocked(cmd);
  if (!isNoScript(r)) return r;
  cmd[0] = "EVAL";
  cmd[1] = script.source();
  return commandLocked(cmd);
}

}  // namespace sluice::cluster
