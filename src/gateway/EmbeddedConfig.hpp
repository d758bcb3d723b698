// The config `sluice serve` runs on without a file: the built-in mock for any model, plus a real
// provider channel for each provider key found in the environment.
#pragma once
#include <string>

namespace sluice::gateway {

// The master key of the embedded default when SLUICE_MASTER_KEY is not set (printed at start).
inline constexpr const char* kDevMasterKey = "sk-sluice-dev";

// The embedded default's YAML, with the in-process mock at `mockAddr` (HOST:PORT).
std::string embeddedConfig(const std::string& mockAddr);

}  // namespace sluice::gateway
