// The answers of cloud token endpoints and the service-account key files a channel names
// (cloud/OAuthToken.hpp): an upstream's or an operator's bytes. Checks: no crash; an accepted
// token can go in a header as it is (visible ASCII, nothing else) and expires after it was
// received; a refused answer says why; a key file is refused with a reason or parsed into an
// account whose token_uri is an http(s) URL.
#include <string>

#include "FuzzUtil.hpp"
#include "cloud/OAuthToken.hpp"

using namespace sluice;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view in(reinterpret_cast<const char*>(data), size);
  std::string why;
  if (auto t = cloud::parseTokenResponse(in, 1000, &why)) {
    if (t->token.empty()) fuzz::fail("an empty token accepted");
    for (char c : t->token) {
      auto u = static_cast<unsigned char>(c);
      if (u <= 0x20 || u >= 0x7f) fuzz::fail("a token that cannot go in a header", t->token);
    }
    if (t->expires_at <= 1000 || t->lifetime <= 0) fuzz::fail("a token that expired before it arrived");
    if (cloud::needsRefresh(*t, t->expires_at) == false) fuzz::fail("a token not refreshed at its expiry");
  } else if (why.empty()) {
    fuzz::fail("a token answer refused without a reason");
  }
  why.clear();
  if (auto sa = cloud::ServiceAccount::parse(in, &why)) {
    if (!sa->tokenUri().starts_with("http://") && !sa->tokenUri().starts_with("https://"))
      fuzz::fail("a token_uri that is not http(s)", sa->tokenUri());
  } else if (why.empty()) {
    fuzz::fail("a key file refused without a reason");
  }
  return 0;
}
