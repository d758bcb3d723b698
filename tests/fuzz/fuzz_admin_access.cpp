// What the admin plane parses of a caller's bytes before any handler: the request path matched
// against the role table (admin/Roles), and a new admin token's body (admin/TokenOps). Input:
// [verb byte] then the bytes: taken as a path, and as a token body when it parses as an object.
// Checks: no crash; a path that matches has the segment count of a table entry and no empty
// segment; a token is only made with a valid role, a name of 1-128 bytes and a secret of the
// scheme whose hash and prefix it carries; every refusal names a field.
#include <boost/json/parse.hpp>

#include <string>
#include <string_view>

#include "FuzzUtil.hpp"
#include "admin/Fields.hpp"
#include "admin/Roles.hpp"
#include "admin/TokenOps.hpp"
#include "pipeline/VirtualKeySecret.hpp"

using namespace sluice;
namespace bhttp = boost::beast::http;

namespace {

std::size_t segmentsOf(std::string_view p) {
  std::size_t n = 0;
  for (char c : p) n += c == '/';
  return n;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1) return 0;
  static constexpr bhttp::verb kVerbs[] = {bhttp::verb::get,     bhttp::verb::post, bhttp::verb::patch,
                                           bhttp::verb::delete_, bhttp::verb::put,  bhttp::verb::head};
  const bhttp::verb verb = kVerbs[data[0] % std::size(kVerbs)];
  const std::string_view body(reinterpret_cast<const char*>(data) + 1, size - 1);

  if (const auto role = admin::requiredRole(verb, body)) {
    if (body.empty() || body.front() != '/' || body.find("//") != std::string_view::npos || body.back() == '/')
      fuzz::fail("a path with an empty segment matched the role table", body);
    bool same_shape = false;
    for (const auto& r : admin::roleTable())
      if (r.method == verb && r.role == *role && segmentsOf(r.path) == segmentsOf(body)) same_shape = true;
    if (!same_shape) fuzz::fail("a path matched no entry of its shape", body);
  }

  boost::system::error_code ec;
  const boost::json::value v = boost::json::parse(body, ec);
  if (ec || !v.is_object()) return 0;
  try {
    std::string secret;
    const store::AdminToken t = admin::newToken(v.as_object(), "fuzz", 1'700'000'000'000, secret);
    if (!admin::parseRole(t.role)) fuzz::fail("a token with a role it may not have", t.role);
    // A member token names its team (resolved by the caller); the other roles never do.
    const auto* team = v.as_object().if_contains("team");
    if ((t.role == "member") != (team && !team->is_null())) fuzz::fail("a team on the wrong role", body);
    if (t.name.empty() || t.name.size() > 128) fuzz::fail("a token name out of bounds", t.name);
    if (!secret.starts_with(admin::kAdminTokenScheme) ||
        secret.size() != admin::kAdminTokenScheme.size() + admin::kAdminTokenRandomChars)
      fuzz::fail("a token secret of another shape", secret);
    if (t.token_hash != pipeline::hashVirtualKeySecret(secret) || !secret.starts_with(t.token_prefix))
      fuzz::fail("a token row that does not match its secret");
    if (t.expires_at_ms && *t.expires_at_ms <= 1'700'000'000'000) fuzz::fail("a token that expires before it is made");
  } catch (const admin::FieldError& e) {
    // An unknown member named "" is refused under its own (empty) name.
    if ((e.param().empty() && !v.as_object().contains("")) || std::string_view(e.what()).empty())
      fuzz::fail("a refusal that names no field");
  }
  return 0;
}
