#include "reference/formats.hpp"

#include <algorithm>
#include <cmath>

namespace dsa::ref {

namespace {
// e2m1 magnitudes of codes 0..7, times 2.
constexpr int kTwice[8] = {0, 1, 2, 3, 4, 6, 8, 12};
}  // namespace

int fp4_twice(uint8_t code) {
  const int mag = kTwice[code & 7];
  return (code & 8) ? -mag : mag;
}

float fp4_value(uint8_t code) {
  const float mag = 0.5f * float(kTwice[code & 7]);
  return (code & 8) ? -mag : mag;  // code 8 is -0, not +0
}

float ue8m0_scale(uint8_t e) { return std::ldexp(1.0f, int(e) - 127); }

uint16_t bf16_rne(float x) {
  uint32_t u = float_bits(x);
  if ((u & 0x7F800000u) == 0x7F800000u && (u & 0x007FFFFFu)) return uint16_t((u >> 16) | 0x40);
  const uint32_t lsb = (u >> 16) & 1u;
  u += 0x7FFFu + lsb;  // carries into the exponent (and to inf) as RNE requires
  return uint16_t(u >> 16);
}

namespace {
// Round |v| (already divided by the scale, clamped to [0, 6]) to the nearest e2m1 code,
// ties to the code with an even mantissa bit (the grid's "even" neighbour).
uint8_t nearest_code(float mag) {
  uint8_t best = 0;
  for (uint8_t c = 1; c < 8; ++c) {
    const float lo = 0.5f * float(kTwice[c - 1]), hi = 0.5f * float(kTwice[c]);
    if (mag <= lo) break;
    const float mid = 0.5f * (lo + hi);
    if (mag > mid || (mag == mid && (c & 1) == 0)) best = c; else break;
  }
  return best;
}
}  // namespace

uint8_t quantize_group_e2m1(const float* x, uint8_t* codes32) {
  float amax = 0.0f;
  for (int i = 0; i < 32; ++i) amax = std::max(amax, std::fabs(x[i]));
  const float ratio = std::max(amax / 6.0f, 1e-4f);
  // ceil(log2(ratio)) from the fp32 bits: exponent, plus one unless the mantissa is zero.
  const uint32_t bits = float_bits(ratio);
  int e = int((bits >> 23) & 0xFF) - 127;
  if (bits & 0x007FFFFFu) e += 1;
  const int biased = std::clamp(e + 127, 1, 254);
  const float inv = std::ldexp(1.0f, -(biased - 127));
  for (int i = 0; i < 32; ++i) {
    const float v = std::clamp(x[i] * inv, -6.0f, 6.0f);
    const uint8_t mag = nearest_code(std::fabs(v));
    codes32[i] = uint8_t(mag | ((std::signbit(v) && mag != 0) ? 8 : 0));
  }
  return uint8_t(biased);
}

void quantize_vector_e2m1(const float* x128, uint8_t* packed64, uint8_t* scales4) {
  uint8_t codes[128];
  for (int g = 0; g < 4; ++g) scales4[g] = quantize_group_e2m1(x128 + 32 * g, codes + 32 * g);
  for (int i = 0; i < 64; ++i) packed64[i] = uint8_t(codes[2 * i] | (codes[2 * i + 1] << 4));
}

}  // namespace dsa::ref
