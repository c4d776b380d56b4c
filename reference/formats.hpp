#pragma once
// Number formats of the indexer (docs/semantics.md, "Number formats"): e2m1 fp4 codes,
// ue8m0 scales, bf16 rounding, and the production quantizer that makes q and index K.
#include <cstdint>
#include <cstring>

namespace dsa::ref {

// Magnitude of e2m1 code (bit 3 sign, bits 2..1 exponent, bit 0 mantissa).
float fp4_value(uint8_t code);
// The same value times 2: an integer in [-12, 12]. Products of two are exact integers.
int fp4_twice(uint8_t code);
// 2^(E - 127) for a ue8m0 byte (valid E: 1..254).
float ue8m0_scale(uint8_t e);
inline bool ue8m0_valid(uint8_t e) { return e >= 1 && e <= 254; }

// Element d of a packed 128-dim vector: byte d/2, low nibble for even d.
inline uint8_t fp4_code_at(const uint8_t* packed, int d) {
  const uint8_t byte = packed[d >> 1];
  return (d & 1) ? uint8_t(byte >> 4) : uint8_t(byte & 0xF);
}

inline uint32_t float_bits(float x) { uint32_t u; std::memcpy(&u, &x, 4); return u; }
inline float bits_float(uint32_t u) { float x; std::memcpy(&x, &u, 4); return x; }

// fp32 -> bf16 with round-to-nearest-even (NaN stays NaN, quiet).
uint16_t bf16_rne(float x);
inline float bf16_to_float(uint16_t b) { return bits_float(uint32_t(b) << 16); }

// The production quantizer, one 32-dim group: e = ceil(log2(max(amax/6, 1e-4))) on fp32 bits,
// E = clamp(e + 127, 1, 254); codes = RNE onto the e2m1 grid of clamp(x / 2^e, -6, 6).
// Writes 32 codes (one per byte, not packed) and returns E.
uint8_t quantize_group_e2m1(const float* x, uint8_t* codes32);
// Quantize a 128-dim vector: 64 packed bytes (low nibble first) and 4 ue8m0 bytes.
void quantize_vector_e2m1(const float* x128, uint8_t* packed64, uint8_t* scales4);

}  // namespace dsa::ref
