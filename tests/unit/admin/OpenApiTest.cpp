#include "admin/OpenApi.hpp"

#include <gtest/gtest.h>
#include <boost/json/parse.hpp>

#include "admin/AdminApi.hpp"

namespace sluice::admin {
namespace {
namespace open_api_test {

namespace json = boost::json;

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

json::object document() {
  boost::system::error_code ec;
  json::value v = json::parse(openApiDocument(), ec);
  EXPECT_FALSE(ec) << ec.message();
  return v.is_object() ? v.as_object() : json::object{};
}

TEST(OpenApi, IsAnOpenApi31Document) {
  const auto doc = document();
  EXPECT_EQ(doc.at("openapi"), "3.1.0");
  EXPECT_TRUE(doc.at("info").as_object().contains("title"));
  EXPECT_EQ(doc.at("components").at("securitySchemes").at("masterKey").at("scheme"), "bearer");
}

TEST(OpenApi, DescribesEveryRouteAdminApiServes) {
  const auto paths = document().at("paths").as_object();
  for (const auto& [method, path] : AdminApi::routes()) {
    const auto* item = paths.if_contains(path);
    ASSERT_NE(item, nullptr) << path << " is served but not documented";
    EXPECT_TRUE(item->as_object().contains(lower(method))) << method << " " << path << " is served but not documented";
  }
}

TEST(OpenApi, DescribesTheEndpointsTheGatewayServes) {
  const auto paths = document().at("paths").as_object();
  for (const auto& [method, path] : {std::pair{"get", "/upstream-keys"},
                                     {"post", "/upstream-keys/{ref}/disable"},
                                     {"post", "/upstream-keys/{ref}/enable"},
                                     {"post", "/upstream-keys/{ref}/probe"},
                                     {"get", "/config"},
                                     {"post", "/reload"}}) {
    const auto* item = paths.if_contains(path);
    ASSERT_NE(item, nullptr) << path;
    EXPECT_TRUE(item->as_object().contains(method)) << method << " " << path;
  }
}

// Every "$ref" points at something that exists, so code generators and viewers can follow it.
void checkRefs(const json::value& v, const json::object& root) {
  if (v.is_array()) {
    for (const auto& e : v.as_array()) checkRefs(e, root);
  } else if (v.is_object()) {
    for (const auto& [k, e] : v.as_object()) {
      if (k == "$ref") {
        std::string ref(e.as_string());
        ASSERT_TRUE(ref.starts_with("#/")) << ref;
        std::size_t pos = 2;
        json::value cursor = root;
        while (pos <= ref.size()) {
          const auto slash = ref.find('/', pos);
          const std::string part = ref.substr(pos, slash == std::string::npos ? std::string::npos : slash - pos);
          ASSERT_TRUE(cursor.is_object() && cursor.as_object().contains(part)) << "dangling " << ref;
          cursor = cursor.as_object().at(part);
          if (slash == std::string::npos) break;
          pos = slash + 1;
        }
      } else {
        checkRefs(e, root);
      }
    }
  }
}

TEST(OpenApi, EveryReferenceResolves) {
  const auto doc = document();
  checkRefs(doc, doc);
}

}  // namespace open_api_test
}  // namespace
}  // namespace sluice::admin
