#include "routing/ModelName.hpp"

#include <fmt/format.h>

namespace sluice::routing {

std::optional<std::string> modelNameProblem(std::string_view name) {
  if (name.empty()) return "is empty";
  if (name.size() > kMaxModelNameBytes) return fmt::format("is longer than {} bytes", kMaxModelNameBytes);
  std::size_t segment_start = 0;
  for (std::size_t i = 0; i <= name.size(); ++i) {
    if (i == name.size() || name[i] == '/') {
      const std::string_view seg = name.substr(segment_start, i - segment_start);
      if (seg.empty()) return "has an empty path segment (a leading, trailing or doubled '/')";
      if (seg == "." || seg == "..") return fmt::format("has a '{}' path segment", seg);
      segment_start = i + 1;
      continue;
    }
    const auto c = static_cast<unsigned char>(name[i]);
    if (c == ' ') return fmt::format("holds a space (byte {})", i);
    if (c < 0x20 || c == 0x7F) return fmt::format("holds a control character 0x{:02X} (byte {})", c, i);
    if (c > 0x7F) return fmt::format("holds a non-ASCII byte 0x{:02X} (byte {})", c, i);
    if (c == '?' || c == '#' || c == '%' || c == '\\') return fmt::format("holds '{}' (byte {})", name[i], i);
  }
  return std::nullopt;
}

std::string printableModelName(std::string_view name) {
  static constexpr std::size_t kShown = 64;
  std::string out;
  for (std::size_t i = 0; i < name.size() && i < kShown; ++i) {
    const auto c = static_cast<unsigned char>(name[i]);
    if (c >= 0x20 && c < 0x7F)
      out.push_back(static_cast<char>(c));
    else
      out += fmt::format("\\x{:02X}", c);
  }
  if (name.size() > kShown) out += fmt::format("... ({} bytes)", name.size());
  return out;
}

std::string modelNameError(std::string_view name, std::string_view problem) {
  return fmt::format(
      "\"model\" \"{}\" is not a valid model name: it {}. A model name is 1-{} printable ASCII characters without "
      "spaces, '?', '#', '%' or '\\', and '/' only between segments that are neither empty nor \".\" or \"..\"",
      printableModelName(name), problem, kMaxModelNameBytes);
}

}  // namespace sluice::routing
