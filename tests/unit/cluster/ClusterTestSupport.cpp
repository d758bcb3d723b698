#include "ClusterTestSupport.hpp"

#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <random>
#include <thread>

#include "cluster/Redis.hpp"

extern char** environ;

namespace sluice::cluster::testing {

std::string sharedRedisUrl() {
  const char* u = std::getenv("SLUICE_TEST_REDIS_URL");
  return u ? u : "";
}

void requireRedis() {
  if (!sharedRedisUrl().empty()) return;
  FAIL() << "SLUICE_TEST_REDIS_URL is unset, so Redis cannot be tested. Run the unit tests under "
            "tests/scripts/with-redis.sh (tests/run.sh does).";
}

std::string uniquePrefix() {
  static std::mt19937_64 rng{std::random_device{}()};
  return "sluicetest:" + std::to_string(rng()) + ":";
}

int freePort() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  socklen_t len = sizeof addr;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  ::close(fd);
  return ntohs(addr.sin_port);
}

RedisProcess::RedisProcess() : port_(freePort()) {}

RedisProcess::~RedisProcess() {
  kill();
}

bool RedisProcess::start() {
  auto port = std::to_string(port_);
  std::vector<std::string> args{"redis-server", "--bind", "127.0.0.1", "--port", port,        "--save",   "",
                                "--appendonly", "no",     "--dir",     "/tmp",   "--logfile", "/dev/null"};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  if (posix_spawnp(&pid_, "redis-server", nullptr, nullptr, argv.data(), environ) != 0) {
    pid_ = -1;
    ADD_FAILURE() << "cannot run redis-server";
    return false;
  }
  RedisSyncClient probe(parseRedisUrl(url()), std::chrono::milliseconds(200));
  for (int i = 0; i < 200; ++i) {
    auto r = probe.command({"PING"});
    if (r.ok() && r.reply.str == "PONG") return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
  }
  ADD_FAILURE() << "redis-server on port " << port_ << " did not answer";
  return false;
}

void RedisProcess::kill() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGKILL);
  ::waitpid(pid_, nullptr, 0);
  pid_ = -1;
}

}  // namespace sluice::cluster::testing
