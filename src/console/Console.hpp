#pragma once
// The web console: static assets built from console/ and served by sluice at `/`, with
// validators (ETag / If-None-Match), caching and security headers. When the console was not
// built into the binary, `/` answers a short page saying how to build it.
// Thread-safety: stateless; call from any worker.

#include <optional>
#include <span>
#include <string_view>

#include "console/Assets.hpp"
#include "http/Server.hpp"

namespace sluice::console {

// The console's answer for a GET/HEAD of `path` (the request target without its query: "/",
// "/index.html", "/assets/..."), or nullopt when `path` is not one of its files, so the gateway
// routes it on (API paths are never console files). Answers 304 when If-None-Match matches.
std::optional<http::Response> serve(const http::Request& req, std::string_view path);

// The same without the request's headers (no 304). Kept while the gateway still calls it.
std::optional<http::Response> serve(std::string_view path, bool head);

// serve() over a given table (sorted by path; empty: the console was not built). For tests.
std::optional<http::Response> serveFrom(std::span<const Asset> assets, std::string_view path, bool head,
                                        std::string_view if_none_match);

// True when `if_none_match` (an If-None-Match header value) matches `etag` by the weak
// comparison RFC 9110 asks for here: "*", or a listed tag with the same opaque part.
bool etagMatches(std::string_view if_none_match, std::string_view etag);

}  // namespace sluice::console
