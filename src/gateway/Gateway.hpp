// Gateway: wires config, the HTTP server, routing and the proxy together for `sluice serve`.
#pragma once
#include <string>

namespace sluice::gateway {

// Loads the config (the embedded default when path is empty), serves until SIGTERM/SIGINT,
// reloads on SIGHUP or when the file changes. Returns the process exit code.
int runServe(const std::string& config_path);

}  // namespace sluice::gateway
