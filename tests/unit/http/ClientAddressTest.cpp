// The client address behind trusted proxies: CIDR parsing and matching, and an attack table
// for the X-Forwarded-For / Forwarded walk (spoofing, chains, garbage, caps, IPv6, injection).
#include "http/ClientAddress.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "http/Server.hpp"

namespace sluice::http {
namespace {
namespace client_address_test {

TrustedProxies trusted(std::initializer_list<const char*> cidrs) {
  std::vector<Cidr> out;
  for (const char* c : cidrs) {
    std::string why;
    auto parsed = parseCidr(c, why);
    EXPECT_TRUE(parsed) << c << ": " << why;
    if (parsed) out.push_back(*parsed);
  }
  return TrustedProxies(std::move(out));
}

const TrustedProxies& proxies() {
  static const TrustedProxies t = trusted({"127.0.0.1/32", "10.0.0.0/8", "2001:db8:1::/48", "::1"});
  return t;
}

TEST(Cidr, MatchesOnPrefixBitsForBothFamilies) {
  std::string why;
  auto c = parseCidr("10.0.0.0/8", why);
  ASSERT_TRUE(c);
  EXPECT_TRUE(c->contains(*parseIpAddress("10.255.255.255")));
  EXPECT_FALSE(c->contains(*parseIpAddress("11.0.0.0")));
  EXPECT_TRUE(c->contains(*parseIpAddress("::ffff:10.1.2.3"))) << "a dual-stack socket's IPv4 peer";
  EXPECT_FALSE(c->contains(*parseIpAddress("::a01:203"))) << "IPv4-compatible is not IPv4-mapped";

  auto odd = parseCidr("192.168.1.2/31", why);
  ASSERT_TRUE(odd);
  EXPECT_TRUE(odd->contains(*parseIpAddress("192.168.1.3")));
  EXPECT_FALSE(odd->contains(*parseIpAddress("192.168.1.4")));

  auto v6 = parseCidr("2001:db8::/127", why);
  ASSERT_TRUE(v6);
  EXPECT_TRUE(v6->contains(*parseIpAddress("2001:db8::1")));
  EXPECT_FALSE(v6->contains(*parseIpAddress("2001:db8::2")));

  auto all4 = parseCidr("0.0.0.0/0", why);
  ASSERT_TRUE(all4);
  EXPECT_TRUE(all4->contains(*parseIpAddress("203.0.113.1")));
  EXPECT_FALSE(all4->contains(*parseIpAddress("2001:db8::1"))) << "an IPv4 /0 is every IPv4 address only";
  auto all = parseCidr("::/0", why);
  ASSERT_TRUE(all);
  EXPECT_TRUE(all->contains(*parseIpAddress("203.0.113.1")));

  auto bare = parseCidr("127.0.0.1", why);
  ASSERT_TRUE(bare);
  EXPECT_EQ(bare->text(), "127.0.0.1/32");
  EXPECT_FALSE(bare->contains(*parseIpAddress("127.0.0.2")));
  EXPECT_EQ(parseCidr("::1", why)->text(), "::1/128");
}

TEST(Cidr, RefusesWhatIsNotACidr) {
  for (const char* bad : {"", "/8", "10.0.0.0/", "10.0.0.0/33", "10.0.0.0/x", "10.0.0.0/08a", "10.0.0/8", "010.0.0.1",
                          "10.0.0.1/8", "::1/129", "[::1]", "[::1]/128", "::1%lo", "1.2.3.4:80", "host", "1.2.3.4/-0",
                          "2001:db8::1/64"}) {
    std::string why;
    EXPECT_FALSE(parseCidr(bad, why)) << bad;
    EXPECT_FALSE(why.empty()) << bad;
  }
}

struct Case {
  const char* name;
  const char* peer;
  std::vector<std::string> forwarded;
  std::vector<std::string> xff;
  const char* client;
};

std::string resolve(const TrustedProxies& t, const Case& c) {
  std::vector<std::string_view> f(c.forwarded.begin(), c.forwarded.end());
  std::vector<std::string_view> x(c.xff.begin(), c.xff.end());
  return resolveClientAddress(t, c.peer, f, x);
}

TEST(ClientAddress, AttackTable) {
  const std::string long_token(9000, 'a');
  std::string forty_trusted;
  for (int i = 40; i >= 1; --i) forty_trusted += (forty_trusted.empty() ? "" : ", ") + std::string("10.0.0.") + std::to_string(i);
  const std::vector<Case> cases = {
      // Spoofing: only a trusted peer's headers count.
      {"untrusted peer, spoofed XFF", "203.0.113.9", {}, {"198.51.100.1"}, "203.0.113.9"},
      {"untrusted peer, spoofed trusted-looking XFF", "203.0.113.9", {}, {"10.0.0.1"}, "203.0.113.9"},
      {"untrusted peer, spoofed Forwarded", "203.0.113.9", {"for=198.51.100.1"}, {}, "203.0.113.9"},
      {"untrusted IPv6 peer", "2001:db8:2::1", {}, {"198.51.100.1"}, "2001:db8:2::1"},
      {"a peer that is no address", "", {}, {"198.51.100.1"}, ""},
      // Chains.
      {"one hop", "127.0.0.1", {}, {"198.51.100.7"}, "198.51.100.7"},
      {"client spoofs a hop left of itself", "10.0.0.1", {}, {"1.1.1.1, 198.51.100.7, 10.0.0.2"}, "198.51.100.7"},
      {"every hop trusted: the left-most", "10.0.0.1", {}, {"10.0.0.3, 10.0.0.2"}, "10.0.0.3"},
      {"no header: the peer", "10.0.0.1", {}, {}, "10.0.0.1"},
      {"only empty elements: the peer", "10.0.0.1", {}, {" , ,"}, "10.0.0.1"},
      {"empty elements are skipped", "10.0.0.1", {}, {"198.51.100.7,, ,"}, "198.51.100.7"},
      {"several XFF lines, in order", "10.0.0.1", {}, {"203.0.113.1", "10.0.0.5, 10.0.0.6"}, "203.0.113.1"},
      {"spoofed line before the real ones", "10.0.0.1", {}, {"1.1.1.1", "203.0.113.1, 10.0.0.5"}, "203.0.113.1"},
      {"tabs and spaces around hops", "10.0.0.1", {}, {"\t198.51.100.7 \t,  10.0.0.2 "}, "198.51.100.7"},
      // Garbage ends the walk: the hop to its right reported the client.
      {"garbage right-most: the peer", "10.0.0.1", {}, {"1.1.1.1, garbage"}, "10.0.0.1"},
      {"garbage behind a trusted hop", "10.0.0.1", {}, {"1.1.1.1, junk, 10.0.0.2"}, "10.0.0.2"},
      {"hostname", "10.0.0.1", {}, {"evil.example"}, "10.0.0.1"},
      {"bad octet", "10.0.0.1", {}, {"1.2.3.256"}, "10.0.0.1"},
      {"leading zeros", "10.0.0.1", {}, {"01.2.3.4"}, "10.0.0.1"},
      {"port out of range", "10.0.0.1", {}, {"1.2.3.4:99999"}, "10.0.0.1"},
      {"empty port", "10.0.0.1", {}, {"1.2.3.4:"}, "10.0.0.1"},
      {"v4 with a port", "10.0.0.1", {}, {"198.51.100.7:5678"}, "198.51.100.7"},
      {"unknown in XFF", "10.0.0.1", {}, {"unknown, 10.0.0.2"}, "10.0.0.2"},
      // Forwarded (RFC 7239).
      {"Forwarded for=", "10.0.0.1", {"for=192.0.2.43"}, {}, "192.0.2.43"},
      {"Forwarded quoted v6 with port", "10.0.0.1", {"for=\"[2001:db8:cafe::17]:4711\""}, {}, "2001:db8:cafe::17"},
      {"Forwarded quoted v4 with port", "10.0.0.1", {"for=\"192.0.2.43:47011\""}, {}, "192.0.2.43"},
      {"Forwarded obfuscated port", "10.0.0.1", {"for=\"192.0.2.43:_p1\""}, {}, "192.0.2.43"},
      {"Forwarded unquoted brackets", "10.0.0.1", {"for=[2001:db8::9]"}, {}, "2001:db8::9"},
      {"Forwarded v6 without brackets", "10.0.0.1", {"for=\"2001:db8::9\""}, {}, "10.0.0.1"},
      {"Forwarded params and elements", "10.0.0.1", {"for=192.0.2.43;proto=https;by=10.0.0.2, for=10.0.0.2;proto=http"}, {}, "192.0.2.43"},
      {"Forwarded names are case-insensitive", "10.0.0.1", {"For=192.0.2.43"}, {}, "192.0.2.43"},
      {"Forwarded several lines", "10.0.0.1", {"for=192.0.2.60", "for=10.0.0.5"}, {}, "192.0.2.60"},
      {"Forwarded unknown ends the walk", "10.0.0.1", {"for=192.0.2.1, for=unknown, for=10.0.0.2"}, {}, "10.0.0.2"},
      {"Forwarded _hidden right-most", "10.0.0.1", {"for=192.0.2.1, for=_hidden"}, {}, "10.0.0.1"},
      {"Forwarded element without for=", "10.0.0.1", {"for=192.0.2.1, proto=https"}, {}, "10.0.0.1"},
      {"Forwarded quoted unknown", "10.0.0.1", {"for=\"unknown\""}, {}, "10.0.0.1"},
      {"Forwarded preferred over XFF", "10.0.0.1", {"for=192.0.2.1"}, {"192.0.2.99"}, "192.0.2.1"},
      {"Forwarded all trusted", "10.0.0.1", {"for=10.0.0.7, for=10.0.0.8"}, {}, "10.0.0.7"},
      // IPv6 and mixed families.
      {"v6 peer, v6 client", "::1", {}, {"2001:db8::5"}, "2001:db8::5"},
      {"v6 client in brackets with port", "::1", {}, {"[2001:db8::5]:443"}, "2001:db8::5"},
      {"v6 client in brackets", "::1", {}, {"[2001:db8::5]"}, "2001:db8::5"},
      {"v6 trusted hop skipped", "::1", {}, {"198.51.100.3, 2001:db8:1::9"}, "198.51.100.3"},
      {"mapped peer matches an IPv4 CIDR", "::ffff:127.0.0.1", {}, {"198.51.100.7"}, "198.51.100.7"},
      {"mapped hop shown as IPv4", "10.0.0.1", {}, {"::ffff:198.51.100.1"}, "198.51.100.1"},
      {"mapped trusted hop skipped", "10.0.0.1", {}, {"198.51.100.2, ::ffff:10.0.0.9"}, "198.51.100.2"},
      {"v6 written compressed back", "::1", {}, {"2001:0DB8:0000:0000:0000:0000:0000:0001"}, "2001:db8::1"},
      {"v6 zone", "::1", {}, {"fe80::1%eth0"}, "::1"},
      {"unbalanced bracket", "::1", {}, {"[2001:db8::5"}, "::1"},
      {"bracketed v4", "::1", {}, {"[198.51.100.1]"}, "::1"},
      // Injection attempts.
      {"comma inside a quoted for", "10.0.0.1", {"for=\"1.2.3.4, for=5.6.7.8\""}, {}, "10.0.0.1"},
      {"two for= in one element", "10.0.0.1", {"for=5.6.7.8;for=1.2.3.4"}, {}, "10.0.0.1"},
      {"unterminated quote right-most", "10.0.0.1", {"for=1.2.3.4, for=\"10.0.0.2"}, {}, "10.0.0.1"},
      {"unterminated quote left of a trusted hop", "10.0.0.1", {"for=\"1.2.3.4, for=198.51.100.4"}, {}, "198.51.100.4"},
      {"quoted-pair", "10.0.0.1", {"for=\"\\\"1.2.3.4\""}, {}, "10.0.0.1"},
      {"comma in another param's quotes stays one element", "10.0.0.1", {"for=198.51.100.5;by=\"x,for=10.0.0.2\""}, {}, "198.51.100.5"},
      {"semicolon in XFF", "10.0.0.1", {}, {"1.2.3.4;5.6.7.8"}, "10.0.0.1"},
      {"quotes in XFF", "10.0.0.1", {}, {"\"1.2.3.4\""}, "10.0.0.1"},
      {"for= in XFF", "10.0.0.1", {}, {"for=1.2.3.4"}, "10.0.0.1"},
      {"CRLF in a value", "10.0.0.1", {}, {"1.2.3.4\r\nX-Evil: 1"}, "10.0.0.1"},
      {"NUL in a value", "10.0.0.1", {}, {std::string("1.2.3.4\0", 8)}, "10.0.0.1"},
      {"control character in quotes", "10.0.0.1", {"for=\"1.2.3.4\x01\""}, {}, "10.0.0.1"},
      {"empty for=", "10.0.0.1", {"for="}, {}, "10.0.0.1"},
      {"pair without =", "10.0.0.1", {"for"}, {}, "10.0.0.1"},
      {"space inside a pair", "10.0.0.1", {"for = 1.2.3.4"}, {}, "10.0.0.1"},
      // Caps: 32 hops and the last 8 KiB, from the right.
      {"more than 32 trusted hops: the 32nd from the right", "10.0.0.1", {}, {"1.2.3.4, " + forty_trusted}, "10.0.0.32"},
      {"a huge spoofed hop left of the client", "10.0.0.1", {}, {long_token + ", 198.51.100.7"}, "198.51.100.7"},
      {"a huge right-most hop", "10.0.0.1", {}, {"198.51.100.7, " + long_token}, "10.0.0.1"},
      {"a client past 8 KiB of commas", "10.0.0.1", {}, {"198.51.100.7" + std::string(9000, ',')}, "10.0.0.1"},
      {"a client past 8 KiB of lines", "10.0.0.1", {}, [] {
         std::vector<std::string> v{"198.51.100.7"};
         for (int i = 0; i < 9000; ++i) v.emplace_back("");
         return v;
       }(), "10.0.0.1"},
      {"a huge Forwarded quote", "10.0.0.1", {"for=\"" + long_token + "\", for=198.51.100.8"}, {}, "198.51.100.8"},
  };
  for (const auto& c : cases) EXPECT_EQ(resolve(proxies(), c), c.client) << c.name;
}

TEST(ClientAddress, NothingIsTrustedWithoutTrustedProxies) {
  const TrustedProxies none;
  EXPECT_EQ(resolve(none, {"", "127.0.0.1", {"for=192.0.2.1"}, {"192.0.2.2"}, ""}), "127.0.0.1");
}

TEST(ClientAddress, ReadsBeastHeaderLinesOnlyFromATrustedPeer) {
  http::Request req{boost::beast::http::verb::get, "/", 11};
  req.insert("X-Forwarded-For", "1.1.1.1");
  req.insert("X-Forwarded-For", "198.51.100.7, 10.0.0.2");
  EXPECT_EQ(clientAddress(proxies(), "10.0.0.1", req), "198.51.100.7");
  EXPECT_EQ(clientAddress(proxies(), "203.0.113.5", req), "203.0.113.5");
  EXPECT_EQ(clientAddress(TrustedProxies{}, "10.0.0.1", req), "10.0.0.1");
  req.insert("forwarded", "for=\"[2001:db8::77]:1\"");  // header names are case-insensitive
  EXPECT_EQ(clientAddress(proxies(), "10.0.0.1", req), "2001:db8::77");
}

}  // namespace client_address_test
}  // namespace
}  // namespace sluice::http
