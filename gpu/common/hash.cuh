#pragma once
// A 32-bit integer hash (random-looking bits from an index): operands that are neither zero nor a
// short repeating pattern, for the device ceilings and the micro-benchmarks.
#include <cstdint>

namespace dsa::gpu {

__host__ __device__ __forceinline__ uint32_t mix32(uint32_t x) {
  x ^= x >> 16;
  x *= 0x7feb352du;
  x ^= x >> 15;
  x *= 0x846ca68bu;
  return x ^ (x >> 16);
}

}  // namespace dsa::gpu
