// Wall-clock time as the store and the admin API count it: Unix milliseconds (UTC).
#pragma once
#include <chrono>
#include <cstdint>

namespace sluice {

inline std::int64_t unixNowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace sluice
