// AdminGate: the way into /admin/api. It says who the caller is (the master key, or a scoped
// admin token), checks the role the endpoint needs against the one table (admin/Roles), sends
// the call to the live endpoints (LiveAdmin) or the stored ones (AdminApi), and records every
// write that succeeded in the audit log: who, from where, what, and the object before and after
// (as the API shows it: secrets masked; a new key's or token's secret left out).
// Thread-safety: handle() may run on any worker concurrently; it holds no state of its own.
#pragma once
#include <boost/asio/awaitable.hpp>

#include <string>

#include "http/Server.hpp"
#include "upstream/Client.hpp"

namespace sluice::admin {
class AdminApi;
}
namespace sluice::auth {
class OidcService;
}

namespace sluice::gateway {

class LiveAdmin;
struct Snapshot;

class AdminGate {
 public:
  // `oidc` (may be null) authenticates console sessions (auth.oidc) when no key is presented.
  AdminGate(admin::AdminApi& api, LiveAdmin& live, auth::OidcService* oidc = nullptr)
      : api_(api), live_(live), oidc_(oidc) {}

  // The answer to METHOD /admin/api{path}; `remote` is the client's address.
  boost::asio::awaitable<http::Response> handle(const Snapshot& snap, upstream::Pool& pool, const http::Request& req,
                                                const std::string& path, const std::string& query,
                                                const std::string& remote);

 private:
  admin::AdminApi& api_;
  LiveAdmin& live_;
  auth::OidcService* oidc_;
};

}  // namespace sluice::gateway
