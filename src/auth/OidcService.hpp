// OidcService: console sign-in through an OpenID Provider (auth.oidc). It serves
//   GET  /auth/info      whether SSO is configured (unauthenticated: the console's sign-in page asks)
//   GET  /auth/login     a new sign-in: state, nonce and PKCE verifier kept in the store, 302 to the IdP
//   GET  /auth/callback  the IdP's answer: state checked, the code exchanged, the ID token verified,
//                        the role mapped, a session made and its cookie set
//   POST /auth/logout    the session deleted (CSRF-checked), and the IdP's end_session URL answered
// and authenticates admin API calls that carry the session cookie (AdminGate). Sessions live in
// the store (migration 12), so every instance behind a load balancer shares them; only the
// SHA-256 of the cookie's value is kept. The IdP's discovery document and JWKS are cached per
// process; an ID token signed with an unknown kid makes it fetch the JWKS again (at most every
// few seconds). Calls to the IdP go through the worker's upstream pool (TLS verified), bounded
// in time (auth.oidc.timeout) and size.
// Thread-safety: every method may be called from any worker concurrently.
#pragma once
#include <boost/asio/awaitable.hpp>
#include <boost/asio/thread_pool.hpp>

#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "admin/Roles.hpp"
#include "http/Server.hpp"
#include "upstream/Client.hpp"

namespace sluice::config {
struct Config;
}
namespace sluice::store {
class Store;
}

namespace sluice::auth {

struct Discovery;
struct Jwk;

inline constexpr const char* kSessionCookie = "sluice_session";
inline constexpr const char* kLoginCookie = "sluice_login";
inline constexpr const char* kCsrfHeader = "x-sluice-csrf";

// The value of cookie `name` in the request's Cookie headers ("" when absent). Pure.
std::string cookieValue(const http::Request& req, std::string_view name);

class OidcService {
 public:
  explicit OidcService(std::string store_url);
  ~OidcService();
  OidcService(const OidcService&) = delete;
  OidcService& operator=(const OidcService&) = delete;

  // The answer to an /auth/... path.
  boost::asio::awaitable<http::Response> handle(const config::Config& cfg, upstream::Pool& pool,
                                                const http::Request& req, const std::string& path,
                                                const std::string& query);

  // The console session the request's cookie names.
  struct SessionCheck {
    bool present = false;  // the request carries the session cookie (and OIDC is on)
    std::optional<admin::Caller> caller;
    std::string csrf_token;
    std::string why;  // when present and refused
  };
  boost::asio::awaitable<SessionCheck> authenticate(const config::Config& cfg, const http::Request& req,
                                                    std::string remote);

  // True when a state-changing request authenticated by the session may go on: it carries the
  // session's CSRF token, and the browser did not mark it cross-site.
  static bool csrfAllows(const http::Request& req, const std::string& csrf_token);

 private:
  struct Idp;
  boost::asio::awaitable<http::Response> login(const config::Config& cfg, upstream::Pool& pool);
  boost::asio::awaitable<http::Response> callback(const config::Config& cfg, upstream::Pool& pool,
                                                  const http::Request& req, const std::string& query);
  boost::asio::awaitable<http::Response> logout(const config::Config& cfg, const http::Request& req);
  // The discovery document (cached an hour; a stale one serves while the IdP is down).
  boost::asio::awaitable<std::optional<Discovery>> discovery(const config::Config& cfg, upstream::Pool& pool,
                                                             std::string& why);
  // The keys; `refresh` asks for a fresh JWKS (granted at most every kJwksRefetch).
  boost::asio::awaitable<std::vector<Jwk>> keys(const config::Config& cfg, upstream::Pool& pool, const Discovery& d,
                                                bool refresh, std::string& why);
  // Runs `work` on the store's thread; false (and `why`) when the store failed. Callers pass a
  // named StoreWork: a temporary closure in a co_await expression is destroyed twice by g++ 12.
  using StoreWork = std::function<void(store::Store&)>;
  boost::asio::awaitable<bool> withStore(StoreWork work, std::string& why);

  std::unique_ptr<Idp> idp_;  // under mu_
  std::mutex mu_;
  std::string store_url_;
  struct StoreState;
  std::unique_ptr<StoreState> db_;  // db_pool_'s thread only
  boost::asio::thread_pool db_pool_{1};
};

}  // namespace sluice::auth
