// Redis clients for the cluster state. hiredis only encodes commands and parses replies; the I/O
// is ours: RedisAsyncClient runs on Boost.Asio coroutines (a worker never blocks on Redis),
// RedisSyncClient is a plain blocking hiredis connection for the control thread.
#pragma once
#include <boost/asio/awaitable.hpp>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "cluster/RedisUrl.hpp"

struct redisContext;

namespace sluice::cluster {


struct RedisReply {
  enum class Type { Nil, Integer, String, Status, Error, Array };
  Type type = Type::Nil;
  std::int64_t integer = 0;
  std::string str;  // String, Status, Error
  std::vector<RedisReply> elements;
  bool isError() const { return type == Type::Error; }
};

// One command's outcome: `error` is set when no reply came (connect, I/O, timeout); a reply
// may still be a Redis error (reply.isError()).
struct RedisResult {
  std::string error;
  RedisReply reply;
  bool ok() const { return error.empty(); }
};

// A Lua script sent as EVALSHA, and as EVAL when the server answers NOSCRIPT.
class RedisScript {
 public:
  explicit RedisScript(std::string source);
  const std::string& source() const { return source_; }
  const std::string& sha() const { return sha_; }
  // {"EVALSHA", sha, numkeys, keys..., args...}
  std::vector<std::string> evalshaArgs(const std::vector<std::string>& keys,
                                       const std::vector<std::string>& args) const;

 private:
  std::string source_;
  std::string sha_;
};
bool isNoScript(const RedisResult& r);

// A few connections per io_context, made lazily, one command in flight on each; every command
// has a deadline. Connections belong to the io_context they were made on (an Asio service holds
// them), so either may be destroyed first; a destroyed client's connections are closed the next
// time any client runs on that io_context. Each io_context that calls command() must be run by
// one thread (the gateway's thread-per-core model). Thread-safe otherwise.
class RedisAsyncClient {
 public:
  RedisAsyncClient(RedisEndpoint endpoint, std::chrono::milliseconds timeout);
  ~RedisAsyncClient();
  RedisAsyncClient(const RedisAsyncClient&) = delete;
  RedisAsyncClient& operator=(const RedisAsyncClient&) = delete;

  boost::asio::awaitable<RedisResult> command(const std::vector<std::string>& args);
  // EVALSHA, then EVAL on NOSCRIPT.
  boost::asio::awaitable<RedisResult> eval(const RedisScript& script, const std::vector<std::string>& keys,
                                           const std::vector<std::string>& args);

 private:
  std::shared_ptr<const RedisEndpoint> endpoint_;
  std::chrono::milliseconds timeout_;
  std::uint64_t id_;
  std::shared_ptr<int> alive_;  // pools of a destroyed client see it expire
};

// One blocking connection, reconnected on the next call after an error. Thread-safe (one mutex).
class RedisSyncClient {
 public:
  RedisSyncClient(RedisEndpoint endpoint, std::chrono::milliseconds timeout);
  ~RedisSyncClient();
  RedisSyncClient(const RedisSyncClient&) = delete;
  RedisSyncClient& operator=(const RedisSyncClient&) = delete;

  RedisResult command(const std::vector<std::string>& args);
  RedisResult eval(const RedisScript& script, const std::vector<std::string>& keys,
                   const std::vector<std::string>& args);

 private:
  RedisResult commandLocked(const std::vector<std::string>& args);
  std::string connectLocked();

  RedisEndpoint endpoint_;
  std::chrono::milliseconds timeout_;
  std::mutex mu_;
  redisContext* ctx_ = nullptr;
};

}  // namespace sluice::cluster
