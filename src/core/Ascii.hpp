// ASCII case-insensitive comparison for header names, tokens and schemes. Boost 1.81's
// beast::iequals reads one byte past the end of its arguments once two of their bytes differ in
// case only (its slow loop loads the next byte before testing the count; fixed in later Boost):
// a client's header is enough to reach it, so the gateway compares with this instead.
// Pure functions; thread-safe.
#pragma once
#include <string_view>

namespace sluice {

constexpr char asciiLower(char c) {
  return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c;
}

constexpr bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (asciiLower(a[i]) != asciiLower(b[i])) return false;
  return true;
}

}  // namespace sluice
