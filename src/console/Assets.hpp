// The console's files (console/dist, built by `make console`), compiled into the binary by
// tools/embed_console.cmake so `sluice` serves them from any directory. The generated table is
// sorted by path, and empty when the console was not built. Immutable; thread-safe.
#pragma once
#include <cstddef>
#include <span>
#include <string_view>

namespace sluice::console {

struct Asset {
  std::string_view path;          // as requested: "/index.html", "/assets/index-4f2a9c1b.js"
  std::string_view content_type;  // "text/javascript; charset=utf-8"
  const unsigned char* data;
  std::size_t size;
  std::string_view etag;  // a strong validator, quoted: "\"3a7bd3e2360a3d29eea4\"" (SHA-256 prefix)

  std::string_view bytes() const { return {reinterpret_cast<const char*>(data), size}; }
};

// Defined in the generated source (build/generated/ConsoleAssets.cpp).
std::span<const Asset> embeddedAssets();

}  // namespace sluice::console
