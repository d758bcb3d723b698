#include "config/Scalars.hpp"

#include <algorithm>
#include <cctype>

#include <cctype>
#include <cmath>
#include <cstdlib>
#include <stdexcept>

namespace sluice::config {
namespace {

bool isVarStart(char c) { return std::isalpha(static_cast<unsigned char>(c)) != 0 || c == '_'; }
bool isVarChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_'; }

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// Reads "123" or "1.25" at text[i...]; advances i. nullopt when no digit is there.
std::optional<long double> readNumber(std::string_view text, std::size_t& i) {
  const std::size_t start = i;
  long double value = 0;
  while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i])) != 0) {
    value = value * 10 + (text[i] - '0');
    ++i;
  }
  if (i == start) return std::nullopt;  // ".5" is rejected: write "0.5"
  if (i < text.size() && text[i] == '.') {
    ++i;
    long double scale = 0.1L;
    const std::size_t frac_start = i;
    while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i])) != 0) {
      value += (text[i] - '0') * scale;
      scale /= 10;
      ++i;
    }
    if (i == frac_start) return std::nullopt;  // "5." is not a number
  }
  return value;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front())) != 0) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back())) != 0) s.remove_suffix(1);
  return s;
}

}  // namespace

std::string expandEnv(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  std::size_t i = 0;
  while (i < text.size()) {
    const char c = text[i];
    if (c != '$' || i + 1 >= text.size()) {
      out += c;
      ++i;
      continue;
    }
    if (text[i + 1] == '$') {
      out += '$';
      i += 2;
      continue;
    }
    if (text[i + 1] != '{') {
      out += c;
      ++i;
      continue;
    }
    // Find the matching '}', letting a default hold nested ${...} references.
    std::size_t j = i + 2;
    int depth = 1;
    while (j < text.size()) {
      if (text[j] == '$' && j + 1 < text.size() && text[j + 1] == '$') {
        j += 2;
        continue;
      }
      if (text[j] == '$' && j + 1 < text.size() && text[j + 1] == '{') {
        ++depth;
        j += 2;
        continue;
      }
      if (text[j] == '}' && --depth == 0) break;
      ++j;
    }
    if (j >= text.size()) {
      throw std::invalid_argument("unterminated \"${\" (write \"$$\" for a literal \"$\")");
    }
    const std::string_view body = text.substr(i + 2, j - i - 2);
    std::size_t n = 0;
    while (n < body.size() && isVarChar(body[n])) ++n;
    const std::string name(body.substr(0, n));
    if (name.empty() || !isVarStart(name[0])) {
      throw std::invalid_argument("invalid variable reference \"${" + std::string(body) +
                                  "}\": a name is letters, digits and '_', not starting with a digit");
    }
    const std::string_view rest = body.substr(n);
    const char* value = std::getenv(name.c_str());
    if (rest.empty()) {
      if (value != nullptr) out += value;
    } else if (rest.substr(0, 2) == ":-") {
      if (value != nullptr && *value != '\0') {
        out += value;
      } else {
        out += expandEnv(rest.substr(2));
      }
    } else {
      throw std::invalid_argument("invalid variable reference \"${" + std::string(body) +
                                  "}\": only ${VAR} and ${VAR:-default} are supported");
    }
    i = j + 1;
  }
  return out;
}

std::optional<std::chrono::milliseconds> parseDuration(std::string_view text) {
  text = trim(text);
  if (text.empty()) return std::nullopt;
  long double total_ms = 0;
  std::size_t i = 0;
  bool first = true;
  while (i < text.size()) {
    const auto number = readNumber(text, i);
    if (!number) return std::nullopt;
    const std::size_t unit_start = i;
    while (i < text.size() && std::isalpha(static_cast<unsigned char>(text[i])) != 0) ++i;
    const std::string unit = lower(text.substr(unit_start, i - unit_start));
    long double scale = 0;
    if (unit.empty()) {
      if (!first || i != text.size()) return std::nullopt;  // a bare number must be alone
      scale = 1000;
    } else if (unit == "ms") {
      scale = 1;
    } else if (unit == "s") {
      scale = 1000;
    } else if (unit == "m") {
      scale = 60'000;
    } else if (unit == "h") {
      scale = 3'600'000;
    } else if (unit == "d") {
      scale = 86'400'000;
    } else {
      return std::nullopt;
    }
    total_ms += *number * scale;
    if (total_ms > static_cast<long double>(kMaxDuration.count())) return std::nullopt;
    first = false;
  }
  return std::chrono::milliseconds(std::llround(total_ms));
}

std::optional<std::uint64_t> parseByteSize(std::string_view text) {
  text = trim(text);
  std::size_t i = 0;
  const auto number = readNumber(text, i);
  if (!number) return std::nullopt;
  const std::string unit = lower(trim(text.substr(i)));
  long double scale = 0;
  if (unit.empty() || unit == "b") {
    scale = 1;
  } else if (unit == "kb") {
    scale = 1e3L;
  } else if (unit == "mb") {
    scale = 1e6L;
  } else if (unit == "gb") {
    scale = 1e9L;
  } else if (unit == "tb") {
    scale = 1e12L;
  } else if (unit == "kib" || unit == "ki") {
    scale = 1024.0L;
  } else if (unit == "mib" || unit == "mi") {
    scale = 1024.0L * 1024;
  } else if (unit == "gib" || unit == "gi") {
    scale = 1024.0L * 1024 * 1024;
  } else if (unit == "tib" || unit == "ti") {
    scale = 1024.0L * 1024 * 1024 * 1024;
  } else {
    return std::nullopt;
  }
  const long double bytes = *number * scale;
  if (bytes >= 18446744073709551615.0L) return std::nullopt;
  return static_cast<std::uint64_t>(std::llroundl(bytes));
}

std::string formatDuration(std::chrono::milliseconds d) {
  const auto ms = d.count();
  if (ms == 0) return "0s";
  if (ms % 86'400'000 == 0) return std::to_string(ms / 86'400'000) + "d";
  if (ms % 3'600'000 == 0) return std::to_string(ms / 3'600'000) + "h";
  if (ms % 60'000 == 0) return std::to_string(ms / 60'000) + "m";
  if (ms % 1000 == 0) return std::to_string(ms / 1000) + "s";
  return std::to_string(ms) + "ms";
}

std::string formatByteSize(std::uint64_t n) {
  constexpr std::uint64_t kKi = 1024;
  if (n != 0) {
    if (n % (kKi * kKi * kKi) == 0) return std::to_string(n / (kKi * kKi * kKi)) + "GiB";
    if (n % (kKi * kKi) == 0) return std::to_string(n / (kKi * kKi)) + "MiB";
    if (n % kKi == 0) return std::to_string(n / kKi) + "KiB";
  }
  return std::to_string(n);
}

bool validChannelName(std::string_view s) {
  return !s.empty() && s.size() <= kMaxChannelName &&
         std::all_of(s.begin(), s.end(), [](char c) {
           return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_' || c == '.' || c == '-';
         });
}

bool validMcpServerName(std::string_view s) {
  // No "__" inside and no '_' at the end: NAME__TOOL then splits at its first "__", always right.
  return !s.empty() && s.size() <= 64 && s.find("__") == std::string_view::npos && s.back() != '_' &&
         std::all_of(s.begin(), s.end(),
                     [](char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_' || c == '-'; });
}

// RFC 9110 token.
bool validHeaderName(std::string_view s) {
  static constexpr std::string_view kExtra = "!#$%&'*+-.^_`|~";
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) != 0 || kExtra.find(c) != std::string_view::npos;
  });
}

bool hasControlChar(std::string_view s) {
  return std::any_of(s.begin(), s.end(), [](char c) {
    const auto u = static_cast<unsigned char>(c);
    return (u < 0x20 && c != '\t') || u == 0x7f;
  });
}


}  // namespace sluice::config
