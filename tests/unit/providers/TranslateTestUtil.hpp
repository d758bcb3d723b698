// Fixture and golden-file helpers for the provider translation tests.
// Set SLUICE_UPDATE_GOLDEN=1 to rewrite the expected files from the current output.
#pragma once
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "providers/Translate.hpp"

namespace sluice::providers::testing {

inline std::filesystem::path fixtureDir() {
  return std::filesystem::path(__FILE__).parent_path().parent_path().parent_path() / "fixtures" / "providers";
}

inline std::string readFixture(const std::string& name) {
  std::ifstream in(fixtureDir() / name, std::ios::binary);
  EXPECT_TRUE(in.good()) << "missing fixture " << name;
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline void expectGolden(const std::string& name, const std::string& actual) {
  auto path = fixtureDir() / name;
  if (std::getenv("SLUICE_UPDATE_GOLDEN")) {
    std::ofstream(path, std::ios::binary) << actual;
    return;
  }
  EXPECT_EQ(readFixture(name), actual) << "golden " << name << " differs (SLUICE_UPDATE_GOLDEN=1 rewrites it)";
}

inline TranslateContext fixedContext(bool includeUsage = true) {
  TranslateContext ctx;
  ctx.created = 1700000000;
  ctx.include_usage = includeUsage;
  return ctx;
}

// Translates a whole upstream stream fed in the given pieces.
inline std::string translateStream(Format client, Format upstream, const std::vector<std::string_view>& pieces,
                                   const TranslateContext& ctx, Usage* usage = nullptr) {
  auto t = makeStreamTranslator(client, upstream, ctx);
  std::string out;
  for (auto p : pieces) EXPECT_TRUE(t->feed(p, out));
  t->finish(out);
  if (usage) *usage = t->usage();
  return out;
}

}  // namespace sluice::providers::testing
