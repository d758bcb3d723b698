#include "http/HostPort.hpp"

#include <charconv>
#include <string_view>

namespace sluice::http {

bool splitHostPort(const std::string& s, std::string& host, std::uint16_t& port) {
  std::string_view sv = s;
  std::size_t colon;
  if (!sv.empty() && sv.front() == '[') {
    auto close = sv.find(']');
    if (close == std::string_view::npos || close + 1 >= sv.size() || sv[close + 1] != ':') return false;
    host = std::string(sv.substr(1, close - 1));
    colon = close + 1;
  } else {
    colon = sv.rfind(':');
    if (colon == std::string_view::npos) return false;
    host = std::string(sv.substr(0, colon));
    if (host.find(':') != std::string::npos) return false;
  }
  auto ps = sv.substr(colon + 1);
  unsigned p = 0;
  auto [ptr, ec] = std::from_chars(ps.data(), ps.data() + ps.size(), p);
  if (ec != std::errc() || ptr != ps.data() + ps.size() || p > 65535 || ps.empty()) return false;
  port = static_cast<std::uint16_t>(p);
  if (host.empty()) host = "0.0.0.0";
  return true;
}

}  // namespace sluice::http
