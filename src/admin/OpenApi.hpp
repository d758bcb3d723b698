// The OpenAPI 3.1 description of every /admin/api endpoint, those AdminApi serves and those the
// gateway serves itself (upstream-key health, config, reload), served at /admin/api/openapi.json.
#pragma once
#include <string_view>

namespace sluice::admin {

// A JSON document; a constant, so thread-safe.
std::string_view openApiDocument();

}  // namespace sluice::admin
