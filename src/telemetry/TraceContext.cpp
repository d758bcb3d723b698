#include "telemetry/TraceContext.hpp"

#include <algorithm>
#include <random>

namespace sluice::telemetry {

namespace {

int hexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;  // upper-case hex is not the grammar
}

template <std::size_t N>
bool readHex(std::string_view s, std::array<std::uint8_t, N>& out) {
  if (s.size() != 2 * N) return false;
  for (std::size_t i = 0; i < N; ++i) {
    const int hi = hexValue(s[2 * i]);
    const int lo = hexValue(s[2 * i + 1]);
    if (hi < 0 || lo < 0) return false;
    out[i] = static_cast<std::uint8_t>(hi * 16 + lo);
  }
  return true;
}

template <std::size_t N>
bool nonZero(const std::array<std::uint8_t, N>& b) {
  return std::any_of(b.begin(), b.end(), [](std::uint8_t x) { return x != 0; });
}

std::mt19937_64& generator() {
  thread_local std::mt19937_64 g{[] {
    std::random_device rd;
    return (static_cast<std::uint64_t>(rd()) << 32) ^ rd();
  }()};
  return g;
}

template <std::size_t N>
void fillRandom(std::array<std::uint8_t, N>& b) {
  do {
    for (std::size_t i = 0; i < N; i += 8) {
      std::uint64_t x = generator()();
      for (std::size_t j = 0; j < 8 && i + j < N; ++j) b[i + j] = static_cast<std::uint8_t>(x >> (8 * j));
    }
  } while (!nonZero(b));
}

// tracestate keys: simple-key = lcalpha 0*255(lcalpha / DIGIT / "_" / "-" / "*" / "/"), or a
// multi-tenant key tenant-id "@" system-id (tenant-id may start with a digit, at most 241
// characters; system-id at most 14).
bool keyChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-' || c == '*' || c == '/';
}
bool validKey(std::string_view k) {
  const auto at = k.find('@');
  if (at == std::string_view::npos) {
    if (k.empty() || k.size() > 256 || !(k[0] >= 'a' && k[0] <= 'z')) return false;
    return std::all_of(k.begin(), k.end(), keyChar);
  }
  const auto tenant = k.substr(0, at);
  const auto system = k.substr(at + 1);
  if (tenant.empty() || tenant.size() > 241 || system.empty() || system.size() > 14) return false;
  if (!((tenant[0] >= 'a' && tenant[0] <= 'z') || (tenant[0] >= '0' && tenant[0] <= '9'))) return false;
  if (!(system[0] >= 'a' && system[0] <= 'z')) return false;
  return std::all_of(tenant.begin(), tenant.end(), keyChar) && std::all_of(system.begin(), system.end(), keyChar);
}
// value = 0*255(chr) nblk-chr; chr = %x20 / nblk-chr; nblk-chr = %x21-2B / %x2D-3C / %x3E-7E
bool validValue(std::string_view v) {
  if (v.empty() || v.size() > 256 || v.back() == ' ') return false;
  return std::all_of(v.begin(), v.end(), [](char c) { return c >= 0x20 && c <= 0x7e && c != ',' && c != '='; });
}
std::string_view trimOws(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

}  // namespace

bool TraceId::valid() const {
  return nonZero(b);
}
bool SpanId::valid() const {
  return nonZero(b);
}

std::optional<Traceparent> parseTraceparent(std::string_view v) {
  constexpr std::size_t kLen = 55;  // 2 + 1 + 32 + 1 + 16 + 1 + 2
  if (v.size() < kLen) return std::nullopt;
  std::array<std::uint8_t, 1> version{};
  if (!readHex(v.substr(0, 2), version) || version[0] == 0xff) return std::nullopt;
  if (version[0] == 0 ? v.size() != kLen : (v.size() > kLen && v[kLen] != '-')) return std::nullopt;
  if (v[2] != '-' || v[35] != '-' || v[52] != '-') return std::nullopt;
  Traceparent tp;
  std::array<std::uint8_t, 1> flags{};
  if (!readHex(v.substr(3, 32), tp.trace.b) || !readHex(v.substr(36, 16), tp.parent.b) ||
      !readHex(v.substr(53, 2), flags))
    return std::nullopt;
  if (!tp.trace.valid() || !tp.parent.valid()) return std::nullopt;
  tp.flags = flags[0];
  return tp;
}

std::optional<std::string> checkTracestate(std::string_view v) {
  if (v.size() > 512) return std::nullopt;
  std::string out;
  std::size_t members = 0;
  std::string_view rest = v;
  while (true) {
    const auto comma = rest.find(',');
    const std::string_view member = trimOws(rest.substr(0, comma));
    if (!member.empty()) {
      const auto eq = member.find('=');
      if (eq == std::string_view::npos || !validKey(member.substr(0, eq)) || !validValue(member.substr(eq + 1)))
        return std::nullopt;
      if (++members > 32) return std::nullopt;
      if (!out.empty()) out.push_back(',');
      out.append(member);
    }
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
  }
  if (members == 0) return std::nullopt;
  return out;
}

void appendHex(std::string& out, std::span<const std::uint8_t> bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  for (std::uint8_t x : bytes) {
    out.push_back(kDigits[x >> 4]);
    out.push_back(kDigits[x & 15]);
  }
}

std::string formatTraceparent(const TraceId& trace, const SpanId& span, bool sampled) {
  std::string s;
  s.reserve(55);
  s.append("00-");
  appendHex(s, trace.b);
  s.push_back('-');
  appendHex(s, span.b);
  s.append(sampled ? "-01" : "-00");
  return s;
}

TraceId newTraceId() {
  TraceId t;
  fillRandom(t.b);
  return t;
}

SpanId newSpanId() {
  SpanId s;
  fillRandom(s.b);
  return s;
}

bool sampledByRatio(const TraceId& id, double ratio) {
  if (ratio >= 1.0) return true;
  if (ratio <= 0.0) return false;
  std::uint64_t low = 0;
  for (std::size_t i = 8; i < 16; ++i) low = (low << 8) | id.b[i];
  // ratio * 2^64 as a bound; a ratio just under 1 may round to 2^64, which every id is below.
  const long double bound = static_cast<long double>(ratio) * 18446744073709551616.0L;
  return static_cast<long double>(low) < bound;
}

}  // namespace sluice::telemetry
