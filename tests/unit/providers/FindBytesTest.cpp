// providers::detail::findBytes (the SIMD search the stream filters use) against string_view::find:
// every needle length up to 20 at every start position, over haystacks of a small alphabet (so
// partial matches and near misses are everywhere) and lengths around the 16-byte block edges.
#include <gtest/gtest.h>

#include <random>
#include <string>

#include "providers/CodecUtil.hpp"

namespace sluice::providers::detail {
namespace {
namespace find_bytes_test {

TEST(FindBytes, AgreesWithStringViewFind) {
  std::mt19937 rng(7);
  const std::string alphabet = "\"ab:";
  std::uniform_int_distribution<std::size_t> pick(0, alphabet.size() - 1);
  for (std::size_t len : {0u, 1u, 2u, 15u, 16u, 17u, 31u, 32u, 33u, 47u, 80u, 200u}) {
    for (int round = 0; round < 20; ++round) {
      std::string hay(len, ' ');
      for (auto& c : hay) c = alphabet[pick(rng)];
      for (std::size_t n = 0; n <= 20; ++n) {
        // A needle cut from the haystack (found) and a random one (mostly not found).
        std::string cut;
        if (n <= len) {
          const std::size_t at = std::uniform_int_distribution<std::size_t>(0, len - n)(rng);
          cut = hay.substr(at, n);
        }
        std::string random(n, ' ');
        for (auto& c : random) c = alphabet[pick(rng)];
        for (const std::string& needle : {cut, random}) {
          if (needle.size() != n) continue;
          for (std::size_t pos = 0; pos <= len + 1; ++pos)
            ASSERT_EQ(findBytes(hay, needle, pos), std::string_view(hay).find(needle, pos))
                << "hay=" << hay << " needle=" << needle << " pos=" << pos;
        }
      }
    }
  }
}

TEST(FindBytes, JsonNeedles) {
  const std::string ev =
      R"(data: {"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"Hi"}}],"usage":null})";
  EXPECT_EQ(findBytes(ev, "\"usage\""), ev.find("\"usage\""));
  EXPECT_EQ(findBytes(ev, "\"index\":"), ev.find("\"index\":"));
  EXPECT_EQ(findBytes(ev, "data:"), 0u);
  EXPECT_EQ(findBytes(ev, "\"usage\"", ev.find("\"usage\"") + 1), std::string_view::npos);
  EXPECT_EQ(findBytes(ev, "tool_calls"), std::string_view::npos);
  EXPECT_EQ(findBytes(ev, "}"), ev.find('}'));
  EXPECT_EQ(findBytes(ev, ""), 0u);
  EXPECT_EQ(findBytes(ev, "", ev.size()), ev.size());
  EXPECT_EQ(findBytes(ev, "x", ev.size() + 1), std::string_view::npos);
}

}  // namespace find_bytes_test
}  // namespace
}  // namespace sluice::providers::detail
