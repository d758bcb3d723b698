#include "console/Console.hpp"

#include <algorithm>
#include <string>

namespace sluice::console {

namespace bhttp = boost::beast::http;

namespace {

// Scripts, styles and API calls from this origin only; no inline script or style, no framing,
// no plugins. Images and fonts may also be data: URIs (Vite inlines small ones).
constexpr std::string_view kContentSecurityPolicy =
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; "
    "font-src 'self' data:; manifest-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

// Vite puts every hashed build output under /assets/: a changed file gets a new name, so a
// browser may keep these for a year without asking. Everything else (index.html, favicon)
// keeps its name across builds and is revalidated on each use (a 304 when unchanged).
constexpr std::string_view kImmutable = "public, max-age=31536000, immutable";
constexpr std::string_view kRevalidate = "no-cache";

constexpr std::string_view kNotBuiltPage =
    "<!doctype html>\n"
    "<html lang=\"en\">\n"
    "<head><meta charset=\"utf-8\"><title>Sluice: console not built</title></head>\n"
    "<body>\n"
    "<h1>Sluice " SLUICE_VERSION
    "</h1>\n"
    "<p>The gateway is running, but the web console was not built into this binary.</p>\n"
    "<p>To get it, build the console and then Sluice (it is compiled in from <code>console/dist</code>):</p>\n"
    "<pre>make console\nmake build</pre>\n"
    "<p><code>make console</code> needs Node.js and npm. Meanwhile the API works: the OpenAI-compatible "
    "endpoints are under <code>/v1/</code>, the admin API under <code>/admin/api/</code> (master key; its "
    "OpenAPI document is <code>/admin/api/openapi.json</code>), health at <code>/healthz</code> and "
    "metrics at <code>/metrics</code>.</p>\n"
    "</body>\n"
    "</html>\n";

void setCommonHeaders(http::Response& res) {
  res.set("X-Content-Type-Options", "nosniff");
  res.set("Content-Security-Policy", kContentSecurityPolicy);
  res.set("Referrer-Policy", "no-referrer");
  res.set(bhttp::field::x_frame_options, "DENY");
}

const Asset* find(std::span<const Asset> assets, std::string_view path) {
  const auto it = std::lower_bound(assets.begin(), assets.end(), path,
                                   [](const Asset& a, std::string_view p) { return a.path < p; });
  return it != assets.end() && it->path == path ? &*it : nullptr;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// The opaque part of an entity tag: W/"x" and "x" both give "x" (with its quotes).
std::string_view opaque(std::string_view tag) {
  tag = trim(tag);
  if (tag.starts_with("W/")) tag.remove_prefix(2);
  return tag;
}

}  // namespace

bool etagMatches(std::string_view if_none_match, std::string_view etag) {
  if (trim(if_none_match) == "*") return true;
  const std::string_view want = opaque(etag);
  while (!if_none_match.empty()) {
    const auto comma = if_none_match.find(',');
    if (opaque(if_none_match.substr(0, comma)) == want) return true;
    if (comma == std::string_view::npos) break;
    if_none_match.remove_prefix(comma + 1);
  }
  return false;
}

std::optional<http::Response> serveFrom(std::span<const Asset> assets, std::string_view path, bool head,
                                        std::string_view if_none_match) {
  const std::string_view file = path == "/" ? std::string_view("/index.html") : path;
  const Asset* asset = find(assets, file);
  if (!asset) {
    if (!assets.empty() || file != "/index.html") return std::nullopt;
    http::Response res{bhttp::status::ok, 11};
    res.set(bhttp::field::content_type, "text/html; charset=utf-8");
    res.set(bhttp::field::cache_control, kRevalidate);
    setCommonHeaders(res);
    if (!head) res.body() = std::string(kNotBuiltPage);
    return res;
  }
  const bool matched = !if_none_match.empty() && etagMatches(if_none_match, asset->etag);
  http::Response res{matched ? bhttp::status::not_modified : bhttp::status::ok, 11};
  if (!matched) res.set(bhttp::field::content_type, asset->content_type);
  res.set(bhttp::field::etag, asset->etag);
  res.set(bhttp::field::cache_control, file.starts_with("/assets/") ? kImmutable : kRevalidate);
  setCommonHeaders(res);
  if (!matched && !head) res.body() = std::string(asset->bytes());
  return res;
}

std::optional<http::Response> serve(const http::Request& req, std::string_view path) {
  const bool head = req.method() == bhttp::verb::head;
  if (!head && req.method() != bhttp::verb::get) return std::nullopt;
  return serveFrom(embeddedAssets(), path, head, req[bhttp::field::if_none_match]);
}

std::optional<http::Response> serve(std::string_view path, bool head) {
  return serveFrom(embeddedAssets(), path, head, {});
}

}  // namespace sluice::console
