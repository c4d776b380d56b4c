// Number formats: e2m1 decoding, ue8m0 scales, bf16 rounding corners, the production quantizer.
#include <cmath>
#include <cstring>
#include <limits>

#include "reference/formats.hpp"
#include "tests/catch.hpp"

using namespace dsa::ref;

namespace {
uint16_t bf16_of_bits(uint32_t bits) { return bf16_rne(bits_float(bits)); }
}  // namespace

TEST_CASE("fp4 codes decode to the e2m1 grid, sign in bit 3") {
  const float expected[8] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};
  for (uint8_t c = 0; c < 8; ++c) {
    CHECK(fp4_value(c) == expected[c]);
    CHECK(fp4_value(uint8_t(c | 8)) == -expected[c]);
    CHECK(fp4_twice(c) == int(2 * expected[c]));
    CHECK(fp4_twice(uint8_t(c | 8)) == -int(2 * expected[c]));
  }
  CHECK(std::signbit(fp4_value(8)));  // code 8 is -0
}

TEST_CASE("packed fp4: even dims in the low nibble") {
  const uint8_t packed[2] = {0x72, 0x9F};  // dims 0..3: codes 2, 7, 15, 9
  CHECK(fp4_code_at(packed, 0) == 2);
  CHECK(fp4_code_at(packed, 1) == 7);
  CHECK(fp4_code_at(packed, 2) == 15);
  CHECK(fp4_code_at(packed, 3) == 9);
  CHECK(fp4_value(fp4_code_at(packed, 2)) == -6.0f);
}

TEST_CASE("ue8m0 scales are powers of two, E = 0 and 255 invalid") {
  CHECK(ue8m0_scale(127) == 1.0f);
  CHECK(ue8m0_scale(128) == 2.0f);
  CHECK(ue8m0_scale(1) == std::ldexp(1.0f, -126));
  CHECK(ue8m0_scale(254) == std::ldexp(1.0f, 127));
  CHECK_FALSE(ue8m0_valid(0));
  CHECK_FALSE(ue8m0_valid(255));
  CHECK(ue8m0_valid(1));
  CHECK(ue8m0_valid(254));
}

TEST_CASE("bf16 RNE: exact values, ties to even, carries, overflow") {
  CHECK(bf16_rne(1.0f) == 0x3F80);
  CHECK(bf16_rne(-2.5f) == 0xC020);
  // 1 + 2^-8 is halfway between 1 (even mantissa) and 1 + 2^-7: ties to even -> 1.
  CHECK(bf16_of_bits(0x3F808000u) == 0x3F80);
  // 1 + 3*2^-8 is halfway between 1 + 2^-7 (odd) and 1 + 2^-6 (even) -> up.
  CHECK(bf16_of_bits(0x3F818000u) == 0x3F82);
  // Just above and below a tie.
  CHECK(bf16_of_bits(0x3F808001u) == 0x3F81);
  CHECK(bf16_of_bits(0x3F807FFFu) == 0x3F80);
  // The largest float below 2 rounds up with a carry into the exponent.
  CHECK(bf16_of_bits(0x3FFFFFFFu) == 0x4000);
  // FLT_MAX is above the largest bf16 + half an ulp: overflow to inf; a bit less stays finite.
  CHECK(bf16_rne(std::numeric_limits<float>::max()) == 0x7F80);
  CHECK(bf16_of_bits(0x7F7F7FFFu) == 0x7F7F);
  CHECK(bf16_rne(-std::numeric_limits<float>::max()) == 0xFF80);
  CHECK(bf16_rne(std::numeric_limits<float>::infinity()) == 0x7F80);
}

TEST_CASE("bf16 RNE: subnormals and signed zeros") {
  CHECK(bf16_rne(0.0f) == 0x0000);
  CHECK(bf16_rne(-0.0f) == 0x8000);
  // Float subnormal 0x8000 is half the smallest bf16 subnormal: tie to even -> 0.
  CHECK(bf16_of_bits(0x00008000u) == 0x0000);
  CHECK(bf16_of_bits(0x00018000u) == 0x0002);  // 1.5 units -> 2 (even)
  CHECK(bf16_of_bits(0x0000C000u) == 0x0001);  // 0.75 units -> 1
  CHECK(bf16_of_bits(0x80008000u) == 0x8000);  // negative tie -> -0
  CHECK(bf16_of_bits(0x007FFFFFu) == 0x0080);  // largest subnormal carries into the smallest normal
  CHECK(bf16_to_float(0x0001) == std::ldexp(1.0f, -133));
}

TEST_CASE("bf16 RNE: NaN stays NaN") {
  const uint16_t b = bf16_rne(std::numeric_limits<float>::quiet_NaN());
  CHECK(std::isnan(bf16_to_float(b)));
  CHECK(std::isnan(bf16_to_float(bf16_of_bits(0x7F800001u))));  // signalling NaN with low payload
}

TEST_CASE("quantizer: known group at scale 1 with ties to even") {
  float x[32] = {6.0f, 3.0f, 1.5f, -0.75f, 2.5f, 5.0f, 0.25f, -6.0f, 0.3f, -1.2f};
  for (int i = 10; i < 32; ++i) x[i] = 0.0f;
  uint8_t codes[32];
  const uint8_t e = quantize_group_e2m1(x, codes);
  CHECK(e == 127);           // amax / 6 = 1 -> e = 0
  CHECK(codes[0] == 7);      // 6
  CHECK(codes[1] == 5);      // 3
  CHECK(codes[2] == 3);      // 1.5
  CHECK(codes[3] == (2 | 8));  // -0.75: tie between 0.5 (odd) and 1 (even) -> -1
  CHECK(codes[4] == 4);      // 2.5: tie between 2 (even) and 3 -> 2
  CHECK(codes[5] == 6);      // 5: tie between 4 (even) and 6 -> 4
  CHECK(codes[6] == 0);      // 0.25: tie between 0 (even) and 0.5 -> 0
  CHECK(codes[7] == (7 | 8));  // -6
  CHECK(codes[8] == 1);      // 0.3 -> 0.5
  CHECK(codes[9] == (2 | 8));  // -1.2 -> -1
  CHECK(codes[10] == 0);
}

TEST_CASE("quantizer: scale from ceil(log2(amax / 6)), clamping and tiny groups") {
  float x[32];
  for (int i = 0; i < 32; ++i) x[i] = float(i % 7) - 3.0f;
  x[5] = 7.0f;  // amax 7 -> 7/6 -> e = 1
  uint8_t codes[32];
  CHECK(quantize_group_e2m1(x, codes) == 128);
  CHECK(codes[5] == 6);  // 7 / 2 = 3.5: tie between 3 and 4 (even) -> 4
  float tiny[32];
  for (int i = 0; i < 32; ++i) tiny[i] = 1e-7f * float(i + 1);
  // amax / 6 < 1e-4 -> ratio 1e-4 -> e = ceil(log2(1e-4)) = -13.
  CHECK(quantize_group_e2m1(tiny, codes) == 127 - 13);
  for (int i = 0; i < 32; ++i) CHECK(codes[i] == 0);
  float huge[32];
  for (int i = 0; i < 32; ++i) huge[i] = (i % 2 ? 1.0f : -1.0f) * std::numeric_limits<float>::max();
  CHECK(quantize_group_e2m1(huge, codes) == 253);  // FLT_MAX / 6 ~ 2^125.4 -> e = 126
  CHECK(codes[0] == (6 | 8));  // FLT_MAX / 2^126 = 4 - 2^-22 -> 4
  CHECK(codes[1] == 6);
}

TEST_CASE("quantize_vector packs low nibble first and writes four scales") {
  float x[128];
  for (int i = 0; i < 128; ++i) x[i] = (i < 32) ? 1.0f : (i < 64 ? 2.0f : (i < 96 ? -4.0f : 0.5f));
  x[1] = 6.0f;
  uint8_t packed[64], scales[4];
  quantize_vector_e2m1(x, packed, scales);
  CHECK(scales[0] == 127);  // amax 6
  CHECK(fp4_code_at(packed, 0) == 2);
  CHECK(fp4_code_at(packed, 1) == 7);
  CHECK(packed[0] == uint8_t(2 | (7 << 4)));
  // Groups with amax 2, 4, 0.5: e = ceil(log2(1/3)) = -1, ceil(log2(2/3)) = 0, ceil(log2(1/12)) = -3.
  CHECK(scales[1] == 126);
  CHECK(scales[2] == 127);
  CHECK(scales[3] == 124);
  CHECK(fp4_value(fp4_code_at(packed, 40)) * ue8m0_scale(scales[1]) == 2.0f);
  CHECK(fp4_value(fp4_code_at(packed, 70)) * ue8m0_scale(scales[2]) == -4.0f);
  CHECK(fp4_value(fp4_code_at(packed, 100)) * ue8m0_scale(scales[3]) == 0.5f);
}
