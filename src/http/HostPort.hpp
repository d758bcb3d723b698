// splitHostPort: "host:port" / "[v6]:port" as listen addresses are written. Apart from the
// server so that config validation (and its fuzzer) need none of the server's code.
#pragma once
#include <cstdint>
#include <string>

namespace sluice::http {

// Parses "host:port" / "[v6]:port" (an empty host is 0.0.0.0). Returns false when malformed.
bool splitHostPort(const std::string& s, std::string& host, std::uint16_t& port);

}  // namespace sluice::http
