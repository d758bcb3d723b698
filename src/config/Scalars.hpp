// Scalar helpers of the config loader (also used by the admin API, which checks the same
// values): ${VAR} interpolation, durations, byte sizes, names.
// Pure functions; the loader attaches file positions to their errors.
#pragma once
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace sluice::config {

// Expands ${VAR}, ${VAR:-default} (default when VAR is unset or empty, itself expanded) and
// `$$` -> `$`; a `$` followed by anything else is kept. Values read from the environment are
// not expanded again. Throws std::invalid_argument on a malformed reference.
std::string expandEnv(std::string_view text);

// "5s", "250ms", "2m", "1h", "1m30s", "1.5s", or a bare number meaning seconds.
// nullopt when malformed, negative or above kMaxDuration.
inline constexpr std::chrono::milliseconds kMaxDuration{365LL * 24 * 3600 * 1000};
std::optional<std::chrono::milliseconds> parseDuration(std::string_view text);

// A bare integer, or a number with a unit: B, KB/MB/GB/TB (powers of 1000),
// KiB/MiB/GiB/TiB or Ki/Mi/Gi/Ti (powers of 1024); units are case-insensitive. nullopt when malformed.
std::optional<std::uint64_t> parseByteSize(std::string_view text);

// Channel names prefix models as CHANNEL/MODEL: 1 to kMaxChannelName of [A-Za-z0-9_.-].
inline constexpr std::size_t kMaxChannelName = 64;
bool validChannelName(std::string_view s);
// An MCP server name: 1 to 64 of [A-Za-z0-9_-], never containing "__" (the namespace separator).
bool validMcpServerName(std::string_view s);
bool validHeaderName(std::string_view s);  // an RFC 9110 token
bool hasControlChar(std::string_view s);   // C0 controls but tab, and DEL

// Shortest exact spelling: "2m", "1500ms", "0s"; "32MiB", "1000".
std::string formatDuration(std::chrono::milliseconds d);
std::string formatByteSize(std::uint64_t n);

}  // namespace sluice::config
