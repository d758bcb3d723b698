#include "cluster/RedisUrl.hpp"

#include <boost/url/parse.hpp>

#include <charconv>
#include <stdexcept>

namespace sluice::cluster {

RedisEndpoint parseRedisUrl(const std::string& url) {
  auto bad = [&](const std::string& why) {
    return std::invalid_argument("redis url \"" + url + "\": " + why +
                                 " (expected redis://[[user]:password@]host[:port][/db])");
  };
  auto parsed = boost::urls::parse_uri(url);
  if (!parsed) throw bad("not a URL");
  const auto& u = *parsed;
  if (u.scheme() != "redis") throw bad("scheme must be redis://");
  if (u.host().empty()) throw bad("no host");
  if (u.has_query() || u.has_fragment()) throw bad("unexpected query or fragment");
  RedisEndpoint ep;
  ep.host = u.host_address();  // IPv6 literals without their brackets
  if (u.has_port()) {
    if (u.port_number() == 0) throw bad("bad port");
    ep.port = u.port_number();
  }
  if (u.has_userinfo()) {
    ep.user = u.user();
    ep.password = u.password();
    if (!u.has_password()) {  // redis://secret@host: the classic form with only a password
      ep.password = ep.user;
      ep.user.clear();
    }
  }
  auto path = std::string(u.path());
  if (!path.empty() && path != "/") {
    auto digits = std::string_view(path).substr(1);
    int db = -1;
    auto [p, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), db);
    if (ec != std::errc() || p != digits.data() + digits.size() || db < 0) throw bad("database must be a number");
    ep.db = db;
  }
  return ep;
}

}  // namespace sluice::cluster
