// The client's address behind reverse proxies: server.trusted_proxies (a parsed CIDR list, built
// with the config snapshot) and the resolver the gateway calls once per request.
//
// The rule. Forwarding headers are read only when the TCP peer is a trusted proxy; otherwise the
// peer is the client, whatever the headers say. The hops of one header kind are walked right to
// left (header lines last to first), skipping trusted ones: the right-most untrusted hop is the
// client; when every hop is trusted, the left-most is. A hop that cannot be read (garbage, an
// obfuscated `_name`, `unknown`, a Forwarded element without `for=`, anything past the caps
// below) ends the walk: the client is then the hop to its right, the last address a trusted hop
// reported (the peer itself when that is the first hop).
//
// Which header: RFC 7239 Forwarded when the request has one, else X-Forwarded-For. Both are
// never mixed. A trusted proxy must therefore write (or strip) the header it does not use: a
// proxy that appends X-Forwarded-For but passes a client's own Forwarded header through lets
// that client choose its address.
//
// Work is capped whatever the client sends: at most kMaxHops hops and the last kMaxBytes bytes
// of a header kind (all its lines) are looked at, from the right.
//
// Thread-safety: TrustedProxies is immutable once built; everything here is safe to call from
// any thread.
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace sluice::http {

// An IPv4 or IPv6 address as 16 bytes; IPv4 is held IPv4-mapped (::ffff:a.b.c.d), so an IPv4
// CIDR also matches a dual-stack socket's ::ffff:a.b.c.d peer.
struct IpAddress {
  std::array<std::uint8_t, 16> bytes{};
  bool v4 = false;  // written as a dotted quad (mapped addresses are shown as IPv4 too)

  std::string text() const;  // "10.0.0.1", "2001:db8::1"
};

// A bare IPv4 or IPv6 address (no brackets, no port, no zone); nullopt otherwise.
std::optional<IpAddress> parseIpAddress(std::string_view s);

struct Cidr {
  IpAddress base;    // host bits zero
  int prefix = 128;  // over the 128-bit (mapped) form: an IPv4 /8 is 104 here
  bool contains(const IpAddress& a) const;
  std::string text() const;  // "10.0.0.0/8", "2001:db8::/32", "127.0.0.1/32"
};

// "10.0.0.0/8", "2001:db8::/32", or a bare address (/32 or /128). Host bits past the prefix are
// refused ("10.1.0.0/8" is likely a typo). On failure, `why` says what is wrong.
std::optional<Cidr> parseCidr(std::string_view s, std::string& why);

class TrustedProxies {
 public:
  TrustedProxies() = default;
  explicit TrustedProxies(std::vector<Cidr> cidrs) : cidrs_(std::move(cidrs)) {}

  bool empty() const { return cidrs_.empty(); }
  const std::vector<Cidr>& cidrs() const { return cidrs_; }
  bool trusts(const IpAddress& a) const;
  bool trusts(std::string_view address_text) const;  // false when it is not an address

 private:
  std::vector<Cidr> cidrs_;
};

inline constexpr std::size_t kMaxForwardedHops = 32;
inline constexpr std::size_t kMaxForwardedBytes = 8 * 1024;

// The client of a request from `peer` (the TCP peer's address as text) carrying these header
// lines, in the order received. Returns `peer` unchanged when it is not trusted or no hop
// names anyone else; a hop's address otherwise (as IpAddress::text(), no port).
std::string resolveClientAddress(const TrustedProxies& trusted, std::string_view peer,
                                 std::span<const std::string_view> forwarded_lines,
                                 std::span<const std::string_view> x_forwarded_for_lines);

// The same over a request's header fields (Beast's http::fields, or anything with
// equal_range(string_view) yielding value()s). Reads no header unless the peer is trusted.
template <class Fields>
std::string clientAddress(const TrustedProxies& trusted, std::string_view peer, const Fields& headers) {
  if (trusted.empty() || !trusted.trusts(peer)) return std::string(peer);
  std::vector<std::string_view> forwarded, xff;
  for (auto [it, end] = headers.equal_range("Forwarded"); it != end; ++it) forwarded.push_back(it->value());
  if (forwarded.empty()) {
    for (auto [it, end] = headers.equal_range("X-Forwarded-For"); it != end; ++it) xff.push_back(it->value());
  }
  return resolveClientAddress(trusted, peer, forwarded, xff);
}

}  // namespace sluice::http
