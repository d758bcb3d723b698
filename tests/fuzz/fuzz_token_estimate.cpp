// Token-count estimates (gateway/TokenEstimate.hpp) of a client's body: any bytes. Checks: no
// crash; an estimate is at least 1 and at most what the body's size allows (a quarter of its
// bytes, plus 3 a turn and 1,600 an inline datum, each needing a few bytes of JSON).
#include <string>

#include "FuzzUtil.hpp"
#include "gateway/TokenEstimate.hpp"

using namespace sluice;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view body(reinterpret_cast<const char*>(data), size);
  const auto n = gateway::estimateCountTokens(body);
  if (!n) return 0;
  if (*n < 1) fuzz::fail("an estimate below 1", body);
  // Each inline datum needs at least `"data":""` (9 bytes) and each turn `"role":0` (8).
  if (*n > static_cast<std::int64_t>(size) / 4 + 1 + 3 * static_cast<std::int64_t>(size) +
               1600 * static_cast<std::int64_t>(size / 9))
    fuzz::fail("an estimate beyond what the body holds", body);
  return 0;
}
