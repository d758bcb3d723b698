// The console's static files: which paths it answers (and which it leaves to the gateway),
// content types, validators, caching and security headers, and the page shown when the console
// was not built. Driven through serveFrom() with a small table, plus checks of the real one.
#include "console/Console.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <string>

namespace sluice::console {
namespace {
namespace console_test {

namespace bhttp = boost::beast::http;

constexpr unsigned char kJs[] = "console.log('hi')";
constexpr unsigned char kIcon[] = "<svg/>";
constexpr unsigned char kIndex[] = "<!doctype html><script type=module src=/assets/app-1a2b3c.js></script>";

// Sorted by path, as the generator writes it.
constexpr std::array<Asset, 3> kTable = {{
    {"/assets/app-1a2b3c.js", "text/javascript; charset=utf-8", kJs, sizeof kJs - 1, "\"js-etag\""},
    {"/favicon.svg", "image/svg+xml", kIcon, sizeof kIcon - 1, "\"icon-etag\""},
    {"/index.html", "text/html; charset=utf-8", kIndex, sizeof kIndex - 1, "\"index-etag\""},
}};

void expectSecurityHeaders(const http::Response& res) {
  EXPECT_EQ(res["X-Content-Type-Options"], "nosniff");
  EXPECT_EQ(res["Referrer-Policy"], "no-referrer");
  EXPECT_EQ(res["X-Frame-Options"], "DENY");
  const std::string csp(res["Content-Security-Policy"]);
  for (const char* directive :
       {"default-src 'none'", "script-src 'self'", "style-src 'self'", "connect-src 'self'", "frame-ancestors 'none'"})
    EXPECT_NE(csp.find(directive), std::string::npos) << directive << " missing from " << csp;
  EXPECT_EQ(csp.find("unsafe-inline"), std::string::npos) << csp;
  EXPECT_EQ(csp.find("unsafe-eval"), std::string::npos) << csp;
}

TEST(Console, RootAndIndexServeIndexHtmlRevalidatedEachTime) {
  for (const char* path : {"/", "/index.html"}) {
    auto res = serveFrom(kTable, path, false, "");
    ASSERT_TRUE(res) << path;
    EXPECT_EQ(res->result(), bhttp::status::ok);
    EXPECT_EQ(res->body(), std::string(reinterpret_cast<const char*>(kIndex)));
    EXPECT_EQ((*res)[bhttp::field::content_type], "text/html; charset=utf-8");
    EXPECT_EQ((*res)[bhttp::field::etag], "\"index-etag\"");
    EXPECT_EQ((*res)[bhttp::field::cache_control], "no-cache");
    expectSecurityHeaders(*res);
  }
}

TEST(Console, HashedAssetsAreImmutableForAYear) {
  auto res = serveFrom(kTable, "/assets/app-1a2b3c.js", false, "");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->body(), "console.log('hi')");
  EXPECT_EQ((*res)[bhttp::field::content_type], "text/javascript; charset=utf-8");
  EXPECT_EQ((*res)[bhttp::field::cache_control], "public, max-age=31536000, immutable");
  expectSecurityHeaders(*res);
  // A top-level file keeps its name across builds: revalidated, not immutable.
  auto icon = serveFrom(kTable, "/favicon.svg", false, "");
  ASSERT_TRUE(icon);
  EXPECT_EQ((*icon)[bhttp::field::content_type], "image/svg+xml");
  EXPECT_EQ((*icon)[bhttp::field::cache_control], "no-cache");
}

TEST(Console, IfNoneMatchAnswers304WithoutABody) {
  for (const char* inm : {"\"js-etag\"", "W/\"js-etag\"", "\"other\", \"js-etag\"", " \"x\" ,W/\"js-etag\" ", "*"}) {
    auto res = serveFrom(kTable, "/assets/app-1a2b3c.js", false, inm);
    ASSERT_TRUE(res) << inm;
    EXPECT_EQ(res->result(), bhttp::status::not_modified) << inm;
    EXPECT_TRUE(res->body().empty());
    EXPECT_EQ((*res)[bhttp::field::etag], "\"js-etag\"");
    EXPECT_EQ((*res)[bhttp::field::cache_control], "public, max-age=31536000, immutable");
    expectSecurityHeaders(*res);
  }
  for (const char* inm : {"\"index-etag\"", "\"js-etag-old\"", "js-etag", ""}) {
    auto res = serveFrom(kTable, "/assets/app-1a2b3c.js", false, inm);
    ASSERT_TRUE(res) << inm;
    EXPECT_EQ(res->result(), bhttp::status::ok) << inm;
    EXPECT_FALSE(res->body().empty());
  }
}

TEST(Console, HeadHasTheHeadersAndNoBody) {
  auto res = serveFrom(kTable, "/", true, "");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->result(), bhttp::status::ok);
  EXPECT_TRUE(res->body().empty());
  EXPECT_EQ((*res)[bhttp::field::content_type], "text/html; charset=utf-8");
  EXPECT_EQ((*res)[bhttp::field::etag], "\"index-etag\"");
}

TEST(Console, LeavesEveryOtherPathToTheGateway) {
  for (const char* path :
       {"/v1/models", "/v1/chat/completions", "/v1/messages", "/admin/api/stats", "/admin/api/openapi.json", "/healthz",
        "/metrics", "/anthropic/v1/messages", "/gemini/v1beta/models/gemini-2.0-flash:generateContent",
        "/v1beta/models", "/assets/missing.js", "/assets/", "/assets", "/index.htm", "/favicon.ico", "", "//index.html",
        "/assets/../index.html"}) {
    EXPECT_FALSE(serveFrom(kTable, path, false, "")) << path;
    EXPECT_FALSE(serveFrom(kTable, path, true, "")) << path;
    EXPECT_FALSE(serveFrom({}, path, false, "")) << path << " (console not built)";
  }
}

TEST(Console, WithoutABuiltConsoleRootSaysHowToBuildIt) {
  for (const char* path : {"/", "/index.html"}) {
    auto res = serveFrom({}, path, false, "");
    ASSERT_TRUE(res) << path;
    EXPECT_EQ(res->result(), bhttp::status::ok);
    EXPECT_EQ((*res)[bhttp::field::content_type], "text/html; charset=utf-8");
    EXPECT_NE(res->body().find("not built"), std::string::npos) << res->body();
    EXPECT_NE(res->body().find("make console"), std::string::npos) << res->body();
    expectSecurityHeaders(*res);
  }
  auto head = serveFrom({}, "/", true, "");
  ASSERT_TRUE(head);
  EXPECT_EQ(head->result(), bhttp::status::ok);
  EXPECT_TRUE(head->body().empty());
  // No validator to match: an If-None-Match still gets the page.
  auto conditional = serveFrom({}, "/", false, "*");
  ASSERT_TRUE(conditional);
  EXPECT_EQ(conditional->result(), bhttp::status::ok);
}

TEST(Console, ServeTakesGetAndHeadOnlyAndReadsIfNoneMatch) {
  http::Request req{bhttp::verb::post, "/", 11};
  EXPECT_FALSE(serve(req, "/"));
  req.method(bhttp::verb::get);
  auto res = serve(req, "/");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->result(), bhttp::status::ok);
  const auto assets = embeddedAssets();
  ASSERT_FALSE(assets.empty()) << "this build embeds no console: build it first (make console; make build does)";
  const std::string etag((*res)[bhttp::field::etag]);
  req.set(bhttp::field::if_none_match, etag);
  auto again = serve(req, "/");
  ASSERT_TRUE(again);
  EXPECT_EQ(again->result(), bhttp::status::not_modified);
}

TEST(Console, EtagMatchingFollowsTheWeakComparison) {
  EXPECT_TRUE(etagMatches("\"a\"", "\"a\""));
  EXPECT_TRUE(etagMatches("W/\"a\"", "\"a\""));
  EXPECT_TRUE(etagMatches("\"b\",\"a\"", "\"a\""));
  EXPECT_TRUE(etagMatches(" * ", "\"a\""));
  EXPECT_FALSE(etagMatches("\"ab\"", "\"a\""));
  EXPECT_FALSE(etagMatches("a", "\"a\""));
  EXPECT_FALSE(etagMatches("", "\"a\""));
  EXPECT_FALSE(etagMatches(",", "\"a\""));
}

// What this build embedded (console/dist, or SLUICE_CONSOLE_DIST) is a table
// serve() can use: sorted, absolute paths, typed, quoted validators, index.html present.
TEST(Console, TheEmbeddedTableIsWellFormed) {
  const auto assets = embeddedAssets();
  ASSERT_FALSE(assets.empty()) << "this build embeds no console: build it first (make console; make build does)";
  EXPECT_TRUE(
      std::is_sorted(assets.begin(), assets.end(), [](const Asset& a, const Asset& b) { return a.path < b.path; }));
  bool index = false;
  for (const Asset& a : assets) {
    EXPECT_TRUE(a.path.starts_with("/")) << a.path;
    EXPECT_FALSE(a.path.find("/.") != std::string_view::npos) << a.path << ": dotfiles are not embedded";
    EXPECT_FALSE(a.content_type.empty()) << a.path;
    EXPECT_TRUE(a.etag.size() > 2 && a.etag.front() == '"' && a.etag.back() == '"') << a.etag;
    index = index || a.path == "/index.html";
    auto res = serveFrom(assets, a.path, false, "");
    ASSERT_TRUE(res) << a.path;
    EXPECT_EQ(res->body().size(), a.size) << a.path;
  }
  EXPECT_TRUE(index);
}

}  // namespace console_test
}  // namespace
}  // namespace sluice::console
