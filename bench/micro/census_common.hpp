#pragma once
// What the host censuses of the query prep's routes (route_census.cpp, dense_census.cpp) share.
#include <cstdint>
#include <cstdlib>

#include "reference/formats.hpp"

namespace dsa::census {

// |2q| of element d of group g (an integer in 0..12).
inline int twice_magnitude(const uint8_t* packed, int g, int d) {
  return std::abs(ref::fp4_twice(ref::fp4_code_at(packed, 32 * g + d)));
}

// Sum of |2q| over group g's 32 values, shifted left by s (gpu/prep/prep.cu's fold_group).
inline long group_sum(const uint8_t* packed, int g, int s) {
  long t = 0;
  for (int d = 0; d < 32; ++d) t += twice_magnitude(packed, g, d);
  return t << s;
}

}  // namespace dsa::census
