// ASCII case-insensitive comparison: the gateway's replacement for Boost 1.81's beast::iequals,
// which reads past its arguments when they differ in case only.
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "core/Ascii.hpp"

namespace sluice {
namespace {

TEST(Ascii, ComparesAsciiLettersWithoutCase) {
  EXPECT_TRUE(iequals("Transfer-Encoding", "transfer-encoding"));
  EXPECT_TRUE(iequals("", ""));
  EXPECT_FALSE(iequals("chunked", "chunke"));
  EXPECT_FALSE(iequals("chunked", "chunkef"));
  EXPECT_FALSE(iequals("\xC3\x89", "\xC3\xA9"));  // only ASCII folds
  EXPECT_FALSE(iequals("a[", "A{"));              // '[' and '{' are not a case pair
}

TEST(Ascii, ReadsOnlyItsArgumentsWhenTheyDifferInCaseOnly) {
  // Exactly sized heap buffers: ASan reports a read past either (the input fuzz_client_address found).
  auto a = std::make_unique<char[]>(7), b = std::make_unique<char[]>(7);
  std::string("unKnown").copy(a.get(), 7);
  std::string("unknown").copy(b.get(), 7);
  EXPECT_TRUE(iequals({a.get(), 7}, {b.get(), 7}));
  EXPECT_FALSE(iequals({a.get(), 7}, {b.get(), 6}));
}

}  // namespace
}  // namespace sluice
