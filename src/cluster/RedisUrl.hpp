// Redis URLs as redis.url takes them. Pure; shared by the config loader (which checks the URL
// at load time) and the Redis clients.
#pragma once
#include <string>

namespace sluice::cluster {

// redis://[[user]:password@]host[:port][/db]. Throws std::invalid_argument saying what is wrong.
struct RedisEndpoint {
  std::string host;
  int port = 6379;
  std::string user;  // "" with a password: AUTH password (the default user)
  std::string password;
  int db = 0;
};
RedisEndpoint parseRedisUrl(const std::string& url);

}  // namespace sluice::cluster
