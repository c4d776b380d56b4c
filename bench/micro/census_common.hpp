#pragma once
// What the host censuses of the query prep's routes (route_census.cpp, dense_census.cpp) share.
#include <cstdint>

namespace dsa::census {

// The int8 value 2q of each e2m1 magnitude code (0 0.5 1 1.5 2 3 4 6, doubled).
inline constexpr int kTwice[8] = {0, 1, 2, 3, 4, 6, 8, 12};

// Sum of |2q| over group g's 32 values, shifted left by s (gpu/prep/prep.cu's fold_group).
inline long group_sum(const uint8_t* packed, int g, int s) {
  long t = 0;
  for (int i = 0; i < 16; ++i) {
    const uint8_t b = packed[16 * g + i];
    t += kTwice[b & 7] + kTwice[(b >> 4) & 7];
  }
  return t << s;
}

}  // namespace dsa::census
