#include "http/ClientAddress.hpp"
#include "core/Ascii.hpp"
#include "http/Framing.hpp"

#include <boost/beast/core/string.hpp>

#include <arpa/inet.h>

#include <algorithm>
#include <charconv>

namespace sluice::http {

namespace {

constexpr std::array<std::uint8_t, 12> kMappedPrefix = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};

bool isOws(char c) {
  return c == ' ' || c == '\t';
}

std::string_view trimOws(std::string_view s) {
  while (!s.empty() && isOws(s.front())) s.remove_prefix(1);
  while (!s.empty() && isOws(s.back())) s.remove_suffix(1);
  return s;
}

bool validPort(std::string_view s) {
  if (s.empty() || s.size() > 5) return false;
  unsigned v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  return ec == std::errc() && end == s.data() + s.size() && v <= 65535;
}

// RFC 7239 obfport: "_" 1*(ALPHA / DIGIT / "." / "_" / "-").
bool validObfuscated(std::string_view s) {
  if (s.size() < 2 || s[0] != '_') return false;
  return std::all_of(s.begin() + 1, s.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
           c == '-';
  });
}

// inet_pton reads a C string: an embedded NUL would cut the text short, so refuse it here.
std::optional<IpAddress> parseV4(std::string_view s) {
  char buf[INET_ADDRSTRLEN];
  if (s.empty() || s.size() >= sizeof buf || s.find('\0') != std::string_view::npos) return std::nullopt;
  std::copy(s.begin(), s.end(), buf);
  buf[s.size()] = '\0';
  IpAddress a;
  std::copy(kMappedPrefix.begin(), kMappedPrefix.end(), a.bytes.begin());
  if (inet_pton(AF_INET, buf, a.bytes.data() + 12) != 1) return std::nullopt;
  a.v4 = true;
  return a;
}

std::optional<IpAddress> parseV6(std::string_view s) {
  char buf[INET6_ADDRSTRLEN];
  if (s.empty() || s.size() >= sizeof buf || s.find(':') == std::string_view::npos ||
      s.find('\0') != std::string_view::npos)
    return std::nullopt;
  std::copy(s.begin(), s.end(), buf);
  buf[s.size()] = '\0';
  IpAddress a;
  if (inet_pton(AF_INET6, buf, a.bytes.data()) != 1) return std::nullopt;
  a.v4 = std::equal(kMappedPrefix.begin(), kMappedPrefix.end(), a.bytes.begin());
  return a;
}

// A node as forwarding headers write it: IPv4, IPv4:port, [IPv6], [IPv6]:port, and (only
// where `bare_v6`, as X-Forwarded-For writers do) an unbracketed IPv6 address.
std::optional<IpAddress> parseNode(std::string_view s, bool bare_v6, bool obfuscated_port) {
  auto port_ok = [&](std::string_view p) { return validPort(p) || (obfuscated_port && validObfuscated(p)); };
  if (!s.empty() && s.front() == '[') {
    auto close = s.find(']');
    if (close == std::string_view::npos) return std::nullopt;
    auto rest = s.substr(close + 1);
    if (!rest.empty() && (rest.front() != ':' || !port_ok(rest.substr(1)))) return std::nullopt;
    return parseV6(s.substr(1, close - 1));
  }
  auto colon = s.find(':');
  if (colon == std::string_view::npos) return parseV4(s);
  if (s.find(':', colon + 1) == std::string_view::npos) {  // one colon: IPv4:port
    if (!port_ok(s.substr(colon + 1))) return std::nullopt;
    return parseV4(s.substr(0, colon));
  }
  return bare_v6 ? parseV6(s) : std::nullopt;
}

// One X-Forwarded-For element.
std::optional<IpAddress> xffHop(std::string_view element) {
  return parseNode(trimOws(element), true, false);
}

// The for= node of one Forwarded element ("for=192.0.2.1;proto=https;by=..."): nullopt when the
// element has none, more than one, or is not well formed; and for "unknown" and obfuscated
// identifiers, which name no address we could use.
std::optional<IpAddress> forwardedHop(std::string_view element) {
  // Quoted-pairs would make the right-to-left split ambiguous, and no node needs one.
  if (element.find('\\') != std::string_view::npos) return std::nullopt;
  std::optional<std::string_view> node;
  bool quoted = false;
  std::size_t start = 0;
  for (std::size_t i = 0; i <= element.size(); ++i) {
    if (i < element.size() && element[i] == '"') quoted = !quoted;
    if (i < element.size() && (quoted || element[i] != ';')) continue;
    auto pair = trimOws(element.substr(start, i - start));
    start = i + 1;
    if (pair.empty()) continue;  // "[ forwarded-pair ]" may be empty
    auto eq = pair.find('=');
    if (eq == std::string_view::npos || eq == 0) return std::nullopt;
    auto name = pair.substr(0, eq);
    auto value = pair.substr(eq + 1);
    if (!std::all_of(name.begin(), name.end(), isTchar)) return std::nullopt;
    if (value.size() >= 2 && value.front() == '"' && value.back() == '"') {
      value = value.substr(1, value.size() - 2);
      if (value.find('"') != std::string_view::npos) return std::nullopt;
      if (std::any_of(value.begin(), value.end(), [](char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7f; }))
        return std::nullopt;
    } else if (value.empty() || !std::all_of(value.begin(), value.end(), [](char c) {
                 return isTchar(c) || c == '[' || c == ']' || c == ':';  // unquoted [v6] is common enough
               })) {
      return std::nullopt;
    }
    if (sluice::iequals(name, "for")) {
      if (node) return std::nullopt;  // two for= in one element: which proxy wrote which?
      node = value;
    }
  }
  if (!node || sluice::iequals(*node, "unknown") || validObfuscated(*node)) return std::nullopt;
  return parseNode(*node, false, true);
}

// The elements of comma-separated header lines from the right: the last line's last element
// first. Empty elements are skipped (RFC 9110 5.6.1). An element whose start lies beyond the
// byte budget, or (with `quotes`) that holds an unterminated quoted string, comes back as not
// complete.
class HopsFromTheRight {
 public:
  struct Hop {
    std::string_view text;
    bool complete = true;
  };

  HopsFromTheRight(std::span<const std::string_view> lines, bool quotes) : lines_(lines), quotes_(quotes) {}

  std::optional<Hop> next() {
    while (line_ > 0) {
      if (budget_ == 0) return Hop{{}, false};
      std::string_view line = lines_[line_ - 1];
      if (!open_) {
        end_ = line.size();
        open_ = true;
        --budget_;  // a line costs something even when empty
      }
      bool in_quote = false;
      std::size_t i = end_;
      for (; i > 0; --i) {
        if (budget_ == 0) return Hop{line.substr(i, end_ - i), false};
        --budget_;
        const char c = line[i - 1];
        if (quotes_ && c == '"') {
          in_quote = !in_quote;
        } else if (c == ',' && !in_quote) {
          break;
        }
      }
      Hop hop{line.substr(i, end_ - i), !in_quote};
      if (i == 0) {
        --line_;
        open_ = false;
      } else {
        end_ = i - 1;  // before the comma
      }
      if (trimOws(hop.text).empty() && hop.complete) continue;
      return hop;
    }
    return std::nullopt;
  }

 private:
  std::span<const std::string_view> lines_;
  bool quotes_;
  std::size_t line_ = lines_.size();
  bool open_ = false;
  std::size_t end_ = 0;
  std::size_t budget_ = kMaxForwardedBytes;
};

}  // namespace

std::string IpAddress::text() const {
  char buf[INET6_ADDRSTRLEN];
  const int family = v4 ? AF_INET : AF_INET6;
  const std::uint8_t* src = v4 ? bytes.data() + 12 : bytes.data();
  if (!inet_ntop(family, src, buf, sizeof buf)) return {};
  return buf;
}

std::optional<IpAddress> parseIpAddress(std::string_view s) {
  if (auto a = parseV4(s)) return a;
  return parseV6(s);
}

bool Cidr::contains(const IpAddress& a) const {
  const int full = prefix / 8;
  if (!std::equal(base.bytes.begin(), base.bytes.begin() + full, a.bytes.begin())) return false;
  const int rest = prefix % 8;
  if (rest == 0) return true;
  const auto mask = static_cast<std::uint8_t>(0xff << (8 - rest));
  return (base.bytes[static_cast<std::size_t>(full)] & mask) == (a.bytes[static_cast<std::size_t>(full)] & mask);
}

std::string Cidr::text() const {
  const bool as_v4 = base.v4 && prefix >= 96;
  return base.text() + "/" + std::to_string(as_v4 ? prefix - 96 : prefix);
}

std::optional<Cidr> parseCidr(std::string_view s, std::string& why) {
  auto slash = s.find('/');
  auto host = s.substr(0, slash);
  const bool written_v4 = host.find(':') == std::string_view::npos;
  auto addr = written_v4 ? parseV4(host) : parseV6(host);
  if (!addr) {
    why = written_v4 ? "not an IPv4 address" : "not an IPv6 address (write it without brackets, port or zone)";
    return std::nullopt;
  }
  const int max_bits = written_v4 ? 32 : 128;
  int bits = max_bits;
  if (slash != std::string_view::npos) {
    auto p = s.substr(slash + 1);
    auto [end, ec] = std::from_chars(p.data(), p.data() + p.size(), bits);
    if (p.empty() || p.size() > 3 || !std::all_of(p.begin(), p.end(), [](char ch) { return ch >= '0' && ch <= '9'; }) ||
        ec != std::errc() || end != p.data() + p.size() || bits < 0 || bits > max_bits) {
      why = "the prefix length after '/' must be from 0 to " + std::to_string(max_bits);
      return std::nullopt;
    }
  }
  Cidr c{*addr, written_v4 ? 96 + bits : bits};
  Cidr masked = c;
  for (int i = 0; i < 16; ++i) {
    const int keep = std::clamp(c.prefix - i * 8, 0, 8);
    masked.base.bytes[static_cast<std::size_t>(i)] &= static_cast<std::uint8_t>(keep == 0 ? 0 : 0xff << (8 - keep));
  }
  if (masked.base.bytes != c.base.bytes) {
    why = "it has bits set past the prefix; did you mean " + masked.text() + "?";
    return std::nullopt;
  }
  return c;
}

bool TrustedProxies::trusts(const IpAddress& a) const {
  return std::any_of(cidrs_.begin(), cidrs_.end(), [&](const Cidr& c) { return c.contains(a); });
}

bool TrustedProxies::trusts(std::string_view address_text) const {
  auto a = parseIpAddress(address_text);
  return a && trusts(*a);
}

std::string resolveClientAddress(const TrustedProxies& trusted, std::string_view peer,
                                 std::span<const std::string_view> forwarded_lines,
                                 std::span<const std::string_view> x_forwarded_for_lines) {
  if (trusted.empty() || !trusted.trusts(peer)) return std::string(peer);
  const bool forwarded = !forwarded_lines.empty();
  HopsFromTheRight hops(forwarded ? forwarded_lines : x_forwarded_for_lines, forwarded);
  std::optional<IpAddress> last;  // the left-most trusted hop so far; none: the peer
  auto lastText = [&] { return last ? last->text() : std::string(peer); };
  for (std::size_t n = 0; n < kMaxForwardedHops; ++n) {
    auto hop = hops.next();
    if (!hop) break;
    if (!hop->complete) break;
    auto addr = forwarded ? forwardedHop(hop->text) : xffHop(hop->text);
    if (!addr) break;
    if (!trusted.trusts(*addr)) return addr->text();
    last = addr;
  }
  return lastText();
}

}  // namespace sluice::http
