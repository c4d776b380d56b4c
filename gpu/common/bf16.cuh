#pragma once
// bf16 arithmetic of the sparse score (docs/semantics.md, "Sparse score"), two ways:
// * soft_*: a step-by-step emulation in fp32/double, written from the definition (each result
//   is the exact value rounded ONCE, RNE, with subnormals);
// * hw_*: the Hopper instructions that do the same in one step (cvt.rn.relu.bf16x2.f32,
//   fma.rn.bf16x2). The fast kernels use these; the soft versions stay as the slow path's
//   arithmetic and as the oracle of the instruction self-test (gpu/common/bf16_selftest.cu).
#include <cstdint>

#include "gpu/common/fp4_mma.cuh"

namespace dsa::gpu {

__device__ __forceinline__ uint16_t soft_bf16_rne(float x) {
  uint32_t u = __float_as_uint(x);
  if ((u & 0x7F800000u) == 0x7F800000u && (u & 0x007FFFFFu)) return uint16_t((u >> 16) | 0x40);
  u += 0x7FFFu + ((u >> 16) & 1u);
  return uint16_t(u >> 16);
}
__device__ __forceinline__ float bf16_value(uint16_t b) { return __uint_as_float(uint32_t(b) << 16); }

// The exact value x = s + err (err from TwoSum, tiny against s) rounded ONCE to bf16 (RNE,
// subnormals, overflow to inf); returned as the float it encodes.
__device__ inline float soft_bf16_round(double s, double err) {
  if (s == 0.0) return float(s);
  const double as = fabs(s);
  const int e = int((__double_as_longlong(as) >> 52) & 0x7FF) - 1023;
  const int ue = max(e - 7, -133);  // exponent of one bf16 ulp at |s| (subnormal ulp 2^-133)
  const double q = as * pow2d(-ue);
  const double fl = floor(q), fr = q - fl;
  bool up;
  if (fr != 0.5) {
    up = fr > 0.5;
  } else if (err != 0.0) {
    up = (err > 0.0) == (s > 0.0);  // the exact value lies beyond the tie, away from zero
  } else {
    up = fmod(fl, 2.0) != 0.0;      // tie: to even
  }
  const float r = float((fl + (up ? 1.0 : 0.0)) * pow2d(ue));  // exact (or inf past bf16 max)
  return s < 0 ? -r : r;
}

__device__ __forceinline__ float soft_bf16_add_exact(double x, double y) {
  const double s = __dadd_rn(x, y);
  const double bb = __dsub_rn(s, x);
  const double err = __dadd_rn(__dsub_rn(x, __dsub_rn(s, bb)), __dsub_rn(y, bb));
  return soft_bf16_round(s, err);
}

// fp32 s = x + y (x, y exact fp32 values) with its exact error e (TwoSum), then s + e rounded
// ONCE to bf16: RNE on the dropped 16 bits, with e deciding a tie that is not one.
__device__ __forceinline__ float soft_bf16_sum(float x, float y) {
  const float s = __fadd_rn(x, y);
  const float bb = __fsub_rn(s, x);
  const float err = __fadd_rn(__fsub_rn(x, __fsub_rn(s, bb)), __fsub_rn(y, bb));
  const uint32_t u = __float_as_uint(s);
  const uint32_t low = u & 0xFFFFu;
  bool up;
  if (low != 0x8000u)
    up = low > 0x8000u;
  else if (err != 0.0f)
    up = (err > 0.0f) == (s > 0.0f);  // the exact sum lies past the tie, away from zero
  else
    up = (u >> 16) & 1u;              // a true tie: to even
  return __uint_as_float(((u >> 16) + (up ? 1u : 0u)) << 16);  // carries into the exponent / inf
}

// bf16(a*w + c) with one rounding (a, w, c bf16 values). a*w has a 16-bit significand, exact in
// fp32 unless it is tiny or huge: below 2^-100 (or flushed to zero) or above 2^100 (or
// overflowed) the exact double path runs. It keeps the sign of a nonzero product that rounds to
// zero (-0, as IEEE and the CPU reference give it) and a finite result of a product that
// overflows fp32 but cancels against c.
__device__ __forceinline__ float soft_bf16_fma(float a, float w, float c) {
  const float p = __fmul_rn(a, w);
  if ((fabsf(p) < 0x1p-100f || fabsf(p) > 0x1p100f) && a != 0.0f && w != 0.0f)
    return soft_bf16_add_exact(__dmul_rn(double(a), double(w)), double(c));
  return soft_bf16_sum(p, c);
}

// Two fp32 values -> bf16x2 {lo, hi}, each RNE, negatives (and -0) -> +0: a_h of the chain.
__device__ __forceinline__ uint32_t hw_relu_bf16x2(float lo, float hi) {
  uint32_t d;
  asm("cvt.rn.relu.bf16x2.f32 %0, %1, %2;" : "=r"(d) : "f"(hi), "f"(lo));
  return d;
}

// Per half: bf16(a*b + c), one rounding.
__device__ __forceinline__ uint32_t hw_fma_bf16x2(uint32_t a, uint32_t b, uint32_t c) {
  uint32_t d;
  asm("fma.rn.bf16x2 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(c));
  return d;
}

constexpr uint32_t kBf16x2One = 0x3F803F80u;  // {1.0, 1.0}: a + b as fma(a, 1, b), one rounding

}  // namespace dsa::gpu
