#pragma once
// Scores as unsigned keys in the reference's order: a larger key is a
// larger score; -0 ranks as +0.
#include <cstdint>

namespace dsa::gpu {

__device__ __forceinline__ uint32_t order_f32(float x) {
  const uint32_t u = __float_as_uint(__fadd_rn(x, 0.0f));  // -0 + 0 = +0: -0 ranks as +0
  return u ^ (uint32_t(int32_t(u) >> 31) | 0x80000000u);   // negative: all bits flipped; else the sign set
}

}  // namespace dsa::gpu
