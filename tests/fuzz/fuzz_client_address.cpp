// The client-address parser (http/ClientAddress): forwarding header lines from a trusted peer,
// walked right to left, and the CIDR parser the config uses. Input: [flags] then '\n'-separated
// lines; flags bit 0 picks Forwarded (else X-Forwarded-For), bit 1 an IPv6 peer; the first line
// is also parsed as a CIDR.
// Checks: no crash; the answer is the peer or an address that parses and is shown canonically;
// a CIDR that parses prints back to itself and contains its own base.
#include <string>
#include <string_view>
#include <vector>

#include "FuzzUtil.hpp"
#include "http/ClientAddress.hpp"

using namespace sluice;

namespace {
const http::TrustedProxies& proxies() {
  static const http::TrustedProxies t = [] {
    std::vector<http::Cidr> v;
    std::string why;
    for (const char* c : {"127.0.0.1", "10.0.0.0/8", "::1", "2001:db8:1::/48"}) v.push_back(*http::parseCidr(c, why));
    return http::TrustedProxies(std::move(v));
  }();
  return t;
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1) return 0;
  const std::uint8_t flags = data[0];
  std::string_view rest(reinterpret_cast<const char*>(data) + 1, size - 1);
  std::vector<std::string_view> lines;
  for (std::size_t start = 0;;) {
    auto nl = rest.find('\n', start);
    lines.push_back(rest.substr(start, nl == std::string_view::npos ? std::string_view::npos : nl - start));
    if (nl == std::string_view::npos) break;
    start = nl + 1;
  }

  std::string why;
  if (auto cidr = http::parseCidr(lines.front(), why)) {
    std::string again_why;
    auto again = http::parseCidr(cidr->text(), again_why);
    if (!again || again->text() != cidr->text()) fuzz::fail("a parsed CIDR does not print back to itself", cidr->text());
    if (!cidr->contains(cidr->base)) fuzz::fail("a CIDR does not contain its own base", cidr->text());
  } else if (why.empty()) {
    fuzz::fail("a refused CIDR without a reason", lines.front());
  }

  const std::string_view peer = (flags & 2) ? "::1" : "10.0.0.1";
  const std::vector<std::string_view> none;
  const bool forwarded = (flags & 1) != 0;
  auto client = http::resolveClientAddress(proxies(), peer, forwarded ? lines : none, forwarded ? none : lines);
  if (client != peer) {
    auto a = http::parseIpAddress(client);
    if (!a) fuzz::fail("the client is neither the peer nor an address", client);
    if (a->text() != client) fuzz::fail("the client address is not in canonical form", client);
  }
  // Untrusted peers never read headers.
  if (http::resolveClientAddress(proxies(), "203.0.113.1", lines, lines) != "203.0.113.1")
    fuzz::fail("an untrusted peer's headers were used");
  return 0;
}
