#include "reference/scores.hpp"

// Error-free transformations below (TwoSum) and the exactness arguments need every product and
// sum rounded as written: no contraction of a*b+c into an fma unless asked for with fma().
#if defined(__clang__)
#pragma clang fp contract(off)
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <vector>

#include "reference/formats.hpp"

#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
#define DSA_REF_AVX2 1
#else
#define DSA_REF_AVX2 0
#endif

namespace dsa::ref {

// ---------------------------------------------------------------------------------------------
// Exact sums of the four group terms
// ---------------------------------------------------------------------------------------------

void group_sums(const uint8_t* q64, const uint8_t* k64, int32_t g4[4]) {
  for (int g = 0; g < 4; ++g) {
    int32_t sum = 0;
    for (int d = 32 * g; d < 32 * g + 32; ++d) sum += fp4_twice(fp4_code_at(q64, d)) * fp4_twice(fp4_code_at(k64, d));
    g4[g] = sum;
  }
}

namespace {

// Largest exponent spread for which the double sum of four terms |G| < 2^13 is exact:
// |sum| < 2^(15 + spread) must fit 53 bits.
constexpr int kExactSpread = 38;
// Largest spread of the int32 path of the row kernel (see combine8_int).
constexpr int kIntSpread = 16;

// A non-negative integer of up to 18 x 32 bits (the exact sum shifted to the smallest
// exponent spans at most 506 + 15 bits).
struct BigNat {
  static constexpr int kLimbs = 18;
  uint32_t limb[kLimbs] = {};

  void add_shifted(uint32_t value, int shift) {
    uint64_t carry = uint64_t(value) << (shift % 32);
    for (int i = shift / 32; i < kLimbs && carry; ++i) {
      carry += limb[i];
      limb[i] = uint32_t(carry);
      carry >>= 32;
    }
  }
  bool less_than(const BigNat& o) const {
    for (int i = kLimbs - 1; i >= 0; --i)
      if (limb[i] != o.limb[i]) return limb[i] < o.limb[i];
    return false;
  }
  void subtract(const BigNat& o) {  // requires *this >= o
    int64_t borrow = 0;
    for (int i = 0; i < kLimbs; ++i) {
      int64_t v = int64_t(limb[i]) - o.limb[i] - borrow;
      borrow = v < 0;
      limb[i] = uint32_t(v + (borrow << 32));
    }
  }
  int top_bit() const {  // -1 for zero
    for (int i = kLimbs - 1; i >= 0; --i)
      if (limb[i]) return 32 * i + 31 - __builtin_clz(limb[i]);
    return -1;
  }
  bool bit(int i) const { return i >= 0 && ((limb[i / 32] >> (i % 32)) & 1u); }
  bool any_below(int n) const {  // any bit with index < n
    for (int i = 0; i < kLimbs && 32 * i < n; ++i) {
      const int hi = std::min(32, n - 32 * i);
      const uint32_t mask = hi == 32 ? 0xFFFFFFFFu : ((1u << hi) - 1u);
      if (limb[i] & mask) return true;
    }
    return false;
  }
  uint64_t bits_from(int lo, int count) const {  // count <= 53
    uint64_t v = 0;
    for (int i = count - 1; i >= 0; --i) v = (v << 1) | uint64_t(bit(lo + i));
    return v;
  }
};

// Rounds (-1)^neg * M * 2^e_min to a binary format with `precision` significand bits and
// smallest lsb exponent `min_lsb` (RNE, gradual underflow), returned as a double (exact).
double round_big(const BigNat& m, bool neg, int e_min, int precision, int min_lsb) {
  const int top = m.top_bit();
  if (top < 0) return 0.0;
  const int lsb = std::max(top + e_min - (precision - 1), min_lsb);
  const int drop = lsb - e_min;  // low bits of M that do not fit
  uint64_t mant;
  if (drop <= 0) {
    mant = m.bits_from(0, top + 1) << (-drop);
  } else {
    mant = m.bits_from(drop, top + 1 - drop > 0 ? top + 1 - drop : 0);
    const bool half = m.bit(drop - 1);
    const bool sticky = m.any_below(drop - 1);
    if (half && (sticky || (mant & 1u))) ++mant;
  }
  const double v = std::ldexp(double(mant), lsb);  // exact, or inf past the format's range
  return neg ? -v : v;
}

// The exact sum of sum_g G_g * 2^e_g, rounded once to the given format.
double combine_exact(const int32_t g4[4], const int e4[4], int precision, int min_lsb, int max_exp) {
  int e_min = INT32_MAX, e_max = INT32_MIN;
  for (int g = 0; g < 4; ++g)
    if (g4[g] != 0) { e_min = std::min(e_min, e4[g]); e_max = std::max(e_max, e4[g]); }
  if (e_min == INT32_MAX) return 0.0;
  if (e_max - e_min <= kExactSpread) {
    double sum = 0.0;  // exact: see kExactSpread
    for (int g = 0; g < 4; ++g) sum += std::ldexp(double(g4[g]), e4[g]);
    if (precision == 53) return sum;
    (void)max_exp;
    return double(float(sum));  // one RNE rounding of an exact value (subnormals, overflow)
  }
  BigNat pos, neg;
  for (int g = 0; g < 4; ++g) {
    if (g4[g] > 0) pos.add_shifted(uint32_t(g4[g]), e4[g] - e_min);
    if (g4[g] < 0) neg.add_shifted(uint32_t(-g4[g]), e4[g] - e_min);
  }
  const bool negative = pos.less_than(neg);
  if (negative) { neg.subtract(pos); return round_big(neg, true, e_min, precision, min_lsb); }
  pos.subtract(neg);
  return round_big(pos, false, e_min, precision, min_lsb);
}

void group_exponents(const uint8_t qs4[4], const uint8_t ks4[4], int e4[4]) {
  for (int g = 0; g < 4; ++g) e4[g] = int(qs4[g]) + int(ks4[g]) - 256;
}

}  // namespace

float combine_fp32(const int32_t g4[4], const uint8_t qs4[4], const uint8_t ks4[4]) {
  int e4[4];
  group_exponents(qs4, ks4, e4);
  return float(combine_exact(g4, e4, 24, -149, 127));
}

double combine_fp64(const int32_t g4[4], const uint8_t qs4[4], const uint8_t ks4[4]) {
  int e4[4];
  group_exponents(qs4, ks4, e4);
  return combine_exact(g4, e4, 53, -1074, 1023);
}

float head_score_fp32(const uint8_t* q64, const uint8_t* qs4, const uint8_t* k64, const uint8_t* ks4) {
  int32_t g4[4];
  group_sums(q64, k64, g4);
  return combine_fp32(g4, qs4, ks4);
}

double head_score_fp64(const uint8_t* q64, const uint8_t* qs4, const uint8_t* k64, const uint8_t* ks4) {
  int32_t g4[4];
  group_sums(q64, k64, g4);
  return combine_fp64(g4, qs4, ks4);
}

// ---------------------------------------------------------------------------------------------
// Scores of one position from its 32 head scores
// ---------------------------------------------------------------------------------------------

float dense_score(const float s[kHeads], const float w[kHeads]) {
  float acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};
  for (int h = 0; h < kHeads; ++h) acc[h & 3] = std::fma(std::max(s[h], 0.0f), w[h], acc[h & 3]);
  return (acc[0] + acc[2]) + (acc[1] + acc[3]);
}

namespace {
// Rounds x + e (|e| <= half an ulp of x, e the error of a double operation) to float by
// round-to-odd, so that a later RNE to bf16 is a single rounding of the exact value.
float round_to_odd_float(double x, double e) {
  float f = float(x);
  if (std::isinf(f) && !std::isinf(x)) f = std::copysign(FLT_MAX, float(x));
  const double fd = double(f);
  bool inexact = fd != x || e != 0.0;
  if (!inexact) return f;
  // Truncate the exact value x + e toward zero.
  const bool above = fd != x ? std::fabs(fd) > std::fabs(x) : (e != 0.0 && std::signbit(e) != std::signbit(x));
  if (above) f = std::nextafter(f, 0.0f);
  return bits_float(float_bits(f) | 1u);
}

// bf16 of the exact sum x + y of two finite doubles, one rounding.
uint16_t bf16_of_sum(double x, double y) {
  const double s = x + y;
  if (!std::isfinite(s)) return bf16_rne(float(s));
  const double b = s - x;
  const double err = (x - (s - b)) + (y - b);  // TwoSum: x + y == s + err exactly
  if (s == 0.0) return bf16_rne(float(s));
  return bf16_rne(round_to_odd_float(s, err));
}
}  // namespace

uint16_t bf16_from_double(double x) {
  if (!std::isfinite(x) || x == 0.0) return bf16_rne(float(x));
  return bf16_rne(round_to_odd_float(x, 0.0));
}

uint16_t bf16_fma(uint16_t a, uint16_t b, uint16_t c) {
  const double fa = bf16_to_float(a), fb = bf16_to_float(b), fc = bf16_to_float(c);
  if (!std::isfinite(fa) || !std::isfinite(fb) || !std::isfinite(fc))
    return bf16_rne(float(fa * fb + fc));
  return bf16_of_sum(fa * fb, fc);  // 8 x 8 significant bits: the product is exact in double
}

uint16_t sparse_score(const float s[kHeads], const float w[kHeads]) {
  uint16_t acc[4] = {0, 0, 0, 0};
  for (int h = 0; h < kHeads; ++h) {
    uint16_t a = bf16_rne(s[h]);
    if (a & 0x8000u) a = 0;  // negative (and -0) -> +0
    acc[h & 3] = bf16_fma(a, bf16_rne(w[h]), acc[h & 3]);
  }
  const auto add = [](uint16_t x, uint16_t y) {
    const double fx = bf16_to_float(x), fy = bf16_to_float(y);
    if (!std::isfinite(fx) || !std::isfinite(fy)) return bf16_rne(float(fx + fy));
    return bf16_of_sum(fx, fy);
  };
  return add(add(acc[0], acc[2]), add(acc[1], acc[3]));
}

double exact_score(const double s[kHeads], const float w[kHeads]) {
  double sum = 0.0;
  for (int h = 0; h < kHeads; ++h) sum += double(w[h]) * std::max(s[h], 0.0);
  return sum;
}

// ---------------------------------------------------------------------------------------------
// Row level: tiles of positions, decoded once, scored for every row and head
// ---------------------------------------------------------------------------------------------

namespace {

constexpr int kTile = 128;  // positions per tile

struct KeyTile {
  int n = 0;
  int span = 0;                       // max over positions of (max - min) key exponent
#if DSA_REF_AVX2
  // fp4_twice + 12 (unsigned, 0..24), [group][dims 4j..4j+3][position][4]: one 32-byte row holds
  // 8 positions x 4 dims, the layout of vpmaddubsw against 4 broadcast query bytes.
  alignas(32) uint8_t kb[4][8][kTile][4];
#else
  alignas(32) float k[4][32][kTile];  // fp4_twice values, [group][dim][position]
#endif
  alignas(32) double kf[4][kTile];    // 2^(E - 129): key scale and the 1/4 of the twice codes
  alignas(32) int32_t kshift[4][kTile];  // E_g - min_g E of each position
  alignas(32) float kscale[kTile];       // 2^(min_g E - 129)
  uint8_t ks[kTile][4];
  int32_t pos[kTile];
};

inline double pow2(int e);
// 2^e as a float for e in [-149, 127] (subnormal powers included), from the bits.
inline float pow2f(int e) { return bits_float(e >= -126 ? uint32_t(e + 127) << 23 : 1u << (e + 149)); }

struct QueryPrep {
  alignas(32) float q[kHeads][kHeadDim];  // fp4_twice values
  int32_t q4[kHeads][32];                 // the same as int8, 4 dims per word (dims 4j..4j+3)
  int32_t qsum12[kHeads][4];              // 12 * sum of a group's twice values (the +12 offset of keys)
  int32_t qshift[kHeads][4];              // E_g - min_g E
  int qmin[kHeads];
  float qscale[kHeads];                   // 2^(min_g E - 127)
  double qf[kHeads][4];                   // 2^(E - 127)
  int span[kHeads];
  uint8_t qs[kHeads][4];
  float w[kHeads];
};

void prepare_query(const QueryRow& row, QueryPrep& p) {
  for (int h = 0; h < kHeads; ++h) {
    const uint8_t* q = row.q + h * kPackedDim;
    const uint8_t* s = row.q_scale + h * kScaleGroups;
    for (int d = 0; d < kHeadDim; ++d) p.q[h][d] = float(fp4_twice(fp4_code_at(q, d)));
    for (int j = 0; j < 32; ++j) {
      uint32_t word = 0;
      for (int b = 0; b < 4; ++b) word |= uint32_t(uint8_t(int8_t(fp4_twice(fp4_code_at(q, 4 * j + b))))) << (8 * b);
      p.q4[h][j] = int32_t(word);
    }
    for (int g = 0; g < 4; ++g) {
      int32_t sum = 0;
      for (int d = 32 * g; d < 32 * g + 32; ++d) sum += fp4_twice(fp4_code_at(q, d));
      p.qsum12[h][g] = 12 * sum;
    }
    int lo = 255, hi = 0;
    for (int g = 0; g < 4; ++g) {
      p.qs[h][g] = s[g];
      p.qf[h][g] = pow2(int(s[g]) - 127);
      lo = std::min(lo, int(s[g]));
      hi = std::max(hi, int(s[g]));
    }
    p.span[h] = hi - lo;
    p.qmin[h] = lo;
    p.qscale[h] = pow2f(lo - 127);
    for (int g = 0; g < 4; ++g) p.qshift[h][g] = int(s[g]) - lo;
    p.w[h] = row.weights ? row.weights[h] : 0.0f;
  }
}

// 2^e as a double for e in the normal range, straight from the exponent bits.
inline double pow2(int e) {
  const uint64_t bits = uint64_t(e + 1023) << 52;
  double v;
  std::memcpy(&v, &bits, 8);
  return v;
}

// fp4_twice of both nibbles of a byte, as floats: [byte][0] low nibble (even dim), [1] high.
struct ByteTable {
  float v[256][2];
  ByteTable() {
    for (int b = 0; b < 256; ++b) {
      v[b][0] = float(fp4_twice(uint8_t(b & 0xF)));
      v[b][1] = float(fp4_twice(uint8_t(b >> 4)));
    }
  }
};
const ByteTable kBytes;

// Decodes positions (a list, or the range [first, first + n) when list == nullptr).
void load_tile(const KeyView& keys, const int32_t* list, int64_t first, int n, KeyTile& t) {
  t.n = n;
  t.span = 0;
  for (int i = 0; i < kTile; ++i) {
    if (i < n) {
      const int64_t p = list ? list[i] : first + i;
      t.pos[i] = int32_t(p);
      const uint8_t* k = keys.payload(p);
      const uint8_t* s = keys.scale(p);
#if DSA_REF_AVX2
      // Nibbles -> twice + 12 through a 16-entry table; 16 payload bytes are one 32-dim group.
      const __m128i table = _mm_setr_epi8(12, 13, 14, 15, 16, 18, 20, 24, 12, 11, 10, 9, 8, 6, 4, 0);
      const __m128i low4 = _mm_set1_epi8(0x0F);
      for (int g = 0; g < 4; ++g) {
        const __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(k + 16 * g));
        const __m128i lo = _mm_shuffle_epi8(table, _mm_and_si128(bytes, low4));
        const __m128i hi = _mm_shuffle_epi8(table, _mm_and_si128(_mm_srli_epi16(bytes, 4), low4));
        alignas(16) uint32_t words[8];
        _mm_store_si128(reinterpret_cast<__m128i*>(words), _mm_unpacklo_epi8(lo, hi));      // dims 0..15
        _mm_store_si128(reinterpret_cast<__m128i*>(words + 4), _mm_unpackhi_epi8(lo, hi));  // dims 16..31
        for (int j = 0; j < 8; ++j) std::memcpy(t.kb[g][j][i], &words[j], 4);
      }
#else
      for (int b = 0; b < kPackedDim; ++b) {
        const float* pair = kBytes.v[k[b]];
        const int d = 2 * b;
        t.k[d / 32][d % 32][i] = pair[0];
        t.k[d / 32][d % 32 + 1][i] = pair[1];
      }
#endif
      int lo = 255, hi = 0;
      for (int g = 0; g < 4; ++g) {
        t.ks[i][g] = s[g];
        t.kf[g][i] = pow2(int(s[g]) - 129);
        lo = std::min(lo, int(s[g]));
        hi = std::max(hi, int(s[g]));
      }
      t.span = std::max(t.span, hi - lo);
      for (int g = 0; g < 4; ++g) t.kshift[g][i] = int(s[g]) - lo;
      t.kscale[i] = pow2f(lo - 129);
    } else {  // padding: zero keys score +0
      t.pos[i] = -1;
#if DSA_REF_AVX2
      for (int g = 0; g < 4; ++g)
        for (int j = 0; j < 8; ++j) std::memset(t.kb[g][j][i], 12, 4);  // twice code 0
#else
      for (int d = 0; d < kHeadDim; ++d) t.k[d / 32][d % 32][i] = 0.0f;
#endif
      for (int g = 0; g < 4; ++g) { t.ks[i][g] = 127; t.kf[g][i] = 0.25; t.kshift[g][i] = 0; }
      t.kscale[i] = 0.25f;
    }
  }
}

// Group sums of 4 heads x 16 positions of one group: out[head][position], exact integers.
void group_block(const QueryPrep& q, int h0, int g, const KeyTile& t, int p0, int32_t out[4][16]) {
#if DSA_REF_AVX2
  // sum_d (k_d + 12) * q_d with vpmaddubsw (unsigned keys x signed query bytes): pairs <= 576,
  // eight steps <= 4608 fit int16; vpmaddwd then adds the pairs of each position into int32.
  // Subtracting 12 * sum(q) leaves G exactly; G < 2^13 converts to float exactly.
  __m256i a[4][2];
  for (int i = 0; i < 4; ++i) a[i][0] = a[i][1] = _mm256_setzero_si256();
  for (int j = 0; j < 8; ++j) {
    const __m256i k0 = _mm256_load_si256(reinterpret_cast<const __m256i*>(t.kb[g][j][p0]));
    const __m256i k1 = _mm256_load_si256(reinterpret_cast<const __m256i*>(t.kb[g][j][p0 + 8]));
    for (int i = 0; i < 4; ++i) {
      const __m256i qb = _mm256_set1_epi32(q.q4[h0 + i][8 * g + j]);
      a[i][0] = _mm256_add_epi16(a[i][0], _mm256_maddubs_epi16(k0, qb));
      a[i][1] = _mm256_add_epi16(a[i][1], _mm256_maddubs_epi16(k1, qb));
    }
  }
  const __m256i ones = _mm256_set1_epi16(1);
  for (int i = 0; i < 4; ++i) {
    const __m256i offset = _mm256_set1_epi32(q.qsum12[h0 + i][g]);
    for (int half = 0; half < 2; ++half) {
      const __m256i sum = _mm256_sub_epi32(_mm256_madd_epi16(a[i][half], ones), offset);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(out[i] + 8 * half), sum);
    }
  }
#else
  for (int i = 0; i < 4; ++i)
    for (int p = 0; p < 16; ++p) {
      float sum = 0.0f;  // integers below 2^13: exact in any order
      for (int d = 0; d < 32; ++d) sum += q.q[h0 + i][32 * g + d] * t.k[g][d][p0 + p];
      out[i][p] = int32_t(sum);
    }
#endif
}

// Head scores of one row against one tile: s[h][p] (fp32) and, when sd != nullptr, the exact
// sums as doubles sd[h][p].
#if DSA_REF_AVX2
// The common case in integers: with e_ref = min(qs) + min(ks), N = sum_g G_g << (e_g - e_ref) is
// exact in int32 while the exponent spread is <= 16 (4 * 4608 * 2^16 < 2^31); int -> float is
// then the one RNE rounding and the two power-of-two scalings are exact unless the result is
// subnormal. Returns false (nothing stored) when a lane would be subnormal.
inline bool combine8_int(const QueryPrep& q, int h, const KeyTile& t, int p, const int32_t (*gsum)[4][16], int i,
                         int col, float* out) {
  __m256i n = _mm256_setzero_si256();
  for (int g = 0; g < 4; ++g) {
    const __m256i shift = _mm256_add_epi32(_mm256_set1_epi32(q.qshift[h][g]),
                                           _mm256_load_si256(reinterpret_cast<const __m256i*>(&t.kshift[g][p])));
    n = _mm256_add_epi32(n, _mm256_sllv_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(&gsum[g][i][col])), shift));
  }
  const __m256 v = _mm256_mul_ps(_mm256_mul_ps(_mm256_cvtepi32_ps(n), _mm256_set1_ps(q.qscale[h])),
                                 _mm256_load_ps(&t.kscale[p]));
  const __m256 abs_v = _mm256_and_ps(v, _mm256_castsi256_ps(_mm256_set1_epi32(0x7FFFFFFF)));
  const __m256 tiny = _mm256_cmp_ps(abs_v, _mm256_set1_ps(std::numeric_limits<float>::min()), _CMP_LT_OQ);
  const __m256 nonzero = _mm256_castsi256_ps(
      _mm256_xor_si256(_mm256_cmpeq_epi32(n, _mm256_setzero_si256()), _mm256_set1_epi32(-1)));
  if (_mm256_movemask_ps(_mm256_and_ps(tiny, nonzero))) return false;
  _mm256_storeu_ps(out, v);
  return true;
}
#endif

void tile_heads(const QueryPrep& q, const KeyTile& t, float (*s)[kTile], double (*sd)[kTile]) {
  const int blocks = (t.n + 15) / 16;
  alignas(32) int32_t gsum[4][4][16];  // [group][head][position]
  for (int h0 = 0; h0 < kHeads; h0 += 4) {
    for (int b = 0; b < blocks; ++b) {
      const int p0 = 16 * b;
      for (int g = 0; g < 4; ++g) group_block(q, h0, g, t, p0, gsum[g]);
      for (int i = 0; i < 4; ++i) {
        const int h = h0 + i;
        if (q.span[h] + t.span <= kExactSpread) {
#if DSA_REF_AVX2
          const bool int_path = !sd && q.span[h] + t.span <= kIntSpread && q.qmin[h] < 224;
          for (int half = 0; half < 16; half += 8) {
            if (int_path && combine8_int(q, h, t, p0 + half, gsum, i, half, &s[h][p0 + half])) continue;
            // Exact in double (see kExactSpread), then one rounding to fp32.
            for (int p = half; p < half + 8; p += 4) {
              __m256d acc = _mm256_mul_pd(
                  _mm256_mul_pd(_mm256_cvtepi32_pd(_mm_loadu_si128(reinterpret_cast<const __m128i*>(&gsum[0][i][p]))),
                                _mm256_set1_pd(q.qf[h][0])),
                  _mm256_load_pd(&t.kf[0][p0 + p]));
              for (int g = 1; g < 4; ++g)
                acc = _mm256_fmadd_pd(
                    _mm256_mul_pd(_mm256_cvtepi32_pd(_mm_loadu_si128(reinterpret_cast<const __m128i*>(&gsum[g][i][p]))),
                                  _mm256_set1_pd(q.qf[h][g])),
                    _mm256_load_pd(&t.kf[g][p0 + p]), acc);
              _mm_storeu_ps(&s[h][p0 + p], _mm256_cvtpd_ps(acc));
              if (sd) _mm256_storeu_pd(&sd[h][p0 + p], acc);
            }
          }
#else
          for (int p = 0; p < 16; ++p) {
            double acc = 0.0;
            for (int g = 0; g < 4; ++g) acc += double(gsum[g][i][p]) * q.qf[h][g] * t.kf[g][p0 + p];
            s[h][p0 + p] = float(acc);
            if (sd) sd[h][p0 + p] = acc;
          }
#endif
        } else {
          for (int p = 0; p < 16; ++p) {
            const int32_t g4[4] = {gsum[0][i][p], gsum[1][i][p], gsum[2][i][p], gsum[3][i][p]};
            s[h][p0 + p] = combine_fp32(g4, q.qs[h], t.ks[p0 + p]);
            if (sd) sd[h][p0 + p] = combine_fp64(g4, q.qs[h], t.ks[p0 + p]);
          }
        }
      }
    }
  }
}

// Throws ScoreOverflow for the first (position, head) among the first n columns that overflowed.
void check_overflow(const float (*s)[kTile], const KeyTile& t, int n) {
  bool any = false;
  int p0 = 0;
#if DSA_REF_AVX2
  const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7FFFFFFF));
  const __m256 inf = _mm256_set1_ps(std::numeric_limits<float>::infinity());
  __m256 hits = _mm256_setzero_ps();
  p0 = n / 8 * 8;
  for (int h = 0; h < kHeads; ++h)
    for (int p = 0; p < p0; p += 8)
      hits = _mm256_or_ps(hits, _mm256_cmp_ps(_mm256_and_ps(_mm256_load_ps(&s[h][p]), abs_mask), inf, _CMP_EQ_OQ));
  any = _mm256_movemask_ps(hits) != 0;
#endif
  for (int h = 0; h < kHeads && !any; ++h)
    for (int p = p0; p < n; ++p) any |= std::isinf(s[h][p]);
  if (!any) return;
  for (int p = 0; p < n; ++p)
    for (int h = 0; h < kHeads; ++h)
      if (std::isinf(s[h][p])) throw ScoreOverflow(t.pos[p], h);
}

// Dense scores of the first n columns: the 4-lane order, vectorised over positions.
void tile_dense(const float (*s)[kTile], const float* w, int n, float* out) {
  alignas(32) float lanes[4][kTile];
  const int cols = (n + 7) / 8 * 8;
#if DSA_REF_AVX2
  for (int p = 0; p < cols; p += 8) {
    __m256 acc[4];
    for (int l = 0; l < 4; ++l) acc[l] = _mm256_setzero_ps();
    for (int h = 0; h < kHeads; ++h) {
      const __m256 r = _mm256_max_ps(_mm256_load_ps(&s[h][p]), _mm256_setzero_ps());
      acc[h & 3] = _mm256_fmadd_ps(r, _mm256_set1_ps(w[h]), acc[h & 3]);
    }
    for (int l = 0; l < 4; ++l) _mm256_store_ps(&lanes[l][p], acc[l]);
  }
#else
  for (int p = 0; p < cols; ++p) {
    float acc[4] = {0, 0, 0, 0};
    for (int h = 0; h < kHeads; ++h) acc[h & 3] = std::fma(std::max(s[h][p], 0.0f), w[h], acc[h & 3]);
    for (int l = 0; l < 4; ++l) lanes[l][p] = acc[l];
  }
#endif
  for (int p = 0; p < n; ++p) out[p] = (lanes[0][p] + lanes[2][p]) + (lanes[1][p] + lanes[3][p]);
}

struct Scratch {
  KeyTile tile;
  QueryPrep query;
  alignas(32) float s[kHeads][kTile];
  alignas(32) double sd[kHeads][kTile];
};

std::unique_ptr<Scratch> make_scratch() { return std::unique_ptr<Scratch>(new Scratch()); }

}  // namespace

void dense_scores_rows(const QueryRow* rows, int n, const KeyView& keys, const int64_t* lens, float* const* out) {
  if (n <= 0) return;
  const int64_t longest = *std::max_element(lens, lens + n);
  auto scratch = make_scratch();
  std::vector<std::unique_ptr<QueryPrep>> preps;
  for (int i = 0; i < n; ++i) {
    preps.emplace_back(new QueryPrep());
    prepare_query(rows[i], *preps.back());
  }
  for (int64_t first = 0; first < longest; first += kTile) {
    const int count = int(std::min<int64_t>(kTile, longest - first));
    load_tile(keys, nullptr, first, count, scratch->tile);
    for (int i = 0; i < n; ++i) {
      if (lens[i] <= first) continue;
      const int valid = int(std::min<int64_t>(count, lens[i] - first));
      tile_heads(*preps[size_t(i)], scratch->tile, scratch->s, nullptr);
      check_overflow(scratch->s, scratch->tile, valid);
      tile_dense(scratch->s, preps[size_t(i)]->w, valid, out[i] + first);
    }
  }
}

void dense_scores_row(const QueryRow& q, const KeyView& keys, int64_t L, float* out) {
  dense_scores_rows(&q, 1, keys, &L, &out);
}

namespace {
// Walks tiles of a position list (or [0, n) when positions == nullptr), decodes each tile once,
// scores it for every query and hands it to `use(query_index, first_index, count, scratch)`.
template <class Use>
void for_each_tile(const QueryRow* queries, int nq, const KeyView& keys, const int32_t* positions, int64_t n,
                   bool exact, Use use) {
  auto scratch = make_scratch();
  std::vector<std::unique_ptr<QueryPrep>> preps;
  for (int i = 0; i < nq; ++i) {
    preps.emplace_back(new QueryPrep());
    prepare_query(queries[i], *preps.back());
  }
  for (int64_t first = 0; first < n; first += kTile) {
    const int count = int(std::min<int64_t>(kTile, n - first));
    load_tile(keys, positions ? positions + first : nullptr, first, count, scratch->tile);
    for (int i = 0; i < nq; ++i) {
      tile_heads(*preps[size_t(i)], scratch->tile, scratch->s, exact ? scratch->sd : nullptr);
      check_overflow(scratch->s, scratch->tile, count);
      use(i, *preps[size_t(i)], first, count, *scratch);
    }
  }
}
}  // namespace

void dense_scores_at_multi(const QueryRow* queries, int nq, const KeyView& keys, const int32_t* positions, int64_t n,
                           float* const* out) {
  for_each_tile(queries, nq, keys, positions, n, false, [&](int i, const QueryPrep& q, int64_t first, int count, Scratch& sc) {
    tile_dense(sc.s, q.w, count, out[i] + first);
  });
}

void dense_scores_at(const QueryRow& q, const KeyView& keys, const int32_t* positions, int64_t n, float* out) {
  dense_scores_at_multi(&q, 1, keys, positions, n, &out);
}

void head_scores_at(const QueryRow& q, const KeyView& keys, const int32_t* positions, int64_t n, float* out) {
  for_each_tile(&q, 1, keys, positions, n, false, [&](int, const QueryPrep&, int64_t first, int count, Scratch& sc) {
    for (int p = 0; p < count; ++p)
      for (int h = 0; h < kHeads; ++h) out[(first + p) * kHeads + h] = sc.s[h][p];
  });
}

namespace {
#if DSA_REF_AVX2
// RNE of 8 finite floats to bf16, kept as floats (low 16 bits zero).
inline __m256i bf16_bits8(__m256 x) {
  const __m256i u = _mm256_castps_si256(x);
  const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1));
  const __m256i r = _mm256_add_epi32(_mm256_add_epi32(u, _mm256_set1_epi32(0x7FFF)), lsb);
  return _mm256_and_si256(r, _mm256_set1_epi32(int(0xFFFF0000u)));
}
inline __m256 bf16_round8(__m256 x) { return _mm256_castsi256_ps(bf16_bits8(x)); }

// x + y rounded to bf16 when the float sum is exact (a single rounding then); lanes where it is
// not (or where values leave the safe range) are flagged in `bad`.
inline __m256 bf16_sum8(__m256 x, __m256 y, __m256& bad) {
  const __m256 s = _mm256_add_ps(x, y);
  const __m256 b = _mm256_sub_ps(s, x);
  const __m256 err = _mm256_add_ps(_mm256_sub_ps(x, _mm256_sub_ps(s, b)), _mm256_sub_ps(y, b));
  const __m256 big = _mm256_set1_ps(0x1p100f);
  const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7FFFFFFF));
  bad = _mm256_or_ps(bad, _mm256_cmp_ps(err, _mm256_setzero_ps(), _CMP_NEQ_UQ));
  bad = _mm256_or_ps(bad, _mm256_cmp_ps(_mm256_and_ps(s, abs_mask), big, _CMP_GT_OQ));
  return bf16_round8(s);
}
#endif

// Sparse scores of the first n columns of a scored tile. The vector path keeps every step a
// single rounding: a*w (8 x 8 significant bits) is exact in fp32 for moderate magnitudes, and
// a sum whose fp32 result is exact (TwoSum error 0) rounds once to bf16. Columns where either
// argument fails take the exact scalar path.
void tile_sparse(const float (*s)[kTile], const float* w, int n, uint16_t* out) {
  int p = 0;
#if DSA_REF_AVX2
  float wb[kHeads];
  bool weights_ok = true;  // products of a in [2^-100, 2^100] stay normal fp32 numbers
  for (int h = 0; h < kHeads; ++h) {
    wb[h] = bf16_to_float(bf16_rne(w[h]));
    const float m = std::fabs(wb[h]);
    weights_ok = weights_ok && (m == 0.0f || (m >= 0x1p-20f && m <= 0x1p20f));
  }
  const __m256 tiny = _mm256_set1_ps(0x1p-100f), big = _mm256_set1_ps(0x1p100f);
  const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7FFFFFFF));
  for (; p + 8 <= n; p += 8) {
    __m256 acc[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps()};
    __m256 bad = _mm256_setzero_ps();
    for (int h = 0; h < kHeads; ++h) {
      __m256 a = bf16_round8(_mm256_load_ps(&s[h][p]));
      a = _mm256_max_ps(a, _mm256_setzero_ps());  // negatives (and -0) -> +0
      const __m256 aa = _mm256_and_ps(a, abs_mask);
      bad = _mm256_or_ps(bad, _mm256_cmp_ps(aa, big, _CMP_GT_OQ));
      bad = _mm256_or_ps(bad, _mm256_and_ps(_mm256_cmp_ps(aa, tiny, _CMP_LT_OQ),
                                            _mm256_cmp_ps(aa, _mm256_setzero_ps(), _CMP_NEQ_OQ)));
      const __m256 prod = _mm256_mul_ps(a, _mm256_set1_ps(wb[h]));
      acc[h & 3] = bf16_sum8(prod, acc[h & 3], bad);
    }
    const __m256 t0 = bf16_sum8(acc[0], acc[2], bad);
    const __m256 t1 = bf16_sum8(acc[1], acc[3], bad);
    const __m256i score = bf16_bits8(_mm256_add_ps(t0, t1));
    bf16_sum8(t0, t1, bad);
    alignas(32) uint32_t bits[8];
    _mm256_store_si256(reinterpret_cast<__m256i*>(bits), score);
    const int bad_mask = _mm256_movemask_ps(bad);
    for (int i = 0; i < 8; ++i) {
      if ((bad_mask >> i) & 1 || !weights_ok) {
        float col[kHeads];
        for (int h = 0; h < kHeads; ++h) col[h] = s[h][p + i];
        out[p + i] = sparse_score(col, w);
      } else {
        out[p + i] = uint16_t(bits[i] >> 16);
      }
    }
  }
#endif
  for (; p < n; ++p) {
    float col[kHeads];
    for (int h = 0; h < kHeads; ++h) col[h] = s[h][p];
    out[p] = sparse_score(col, w);
  }
}
}  // namespace

void sparse_scores_at_multi(const QueryRow* queries, int nq, const KeyView& keys, const int32_t* positions, int64_t n,
                            uint16_t* const* out) {
  for_each_tile(queries, nq, keys, positions, n, false, [&](int i, const QueryPrep& q, int64_t first, int count, Scratch& sc) {
    tile_sparse(sc.s, q.w, count, out[i] + first);
  });
}

void sparse_scores_at(const QueryRow& q, const KeyView& keys, const int32_t* positions, int64_t n, uint16_t* out) {
  sparse_scores_at_multi(&q, 1, keys, positions, n, &out);
}

void exact_scores_at_multi(const QueryRow* queries, int nq, const KeyView& keys, const int32_t* positions, int64_t n,
                           double* const* out) {
  for_each_tile(queries, nq, keys, positions, n, true, [&](int i, const QueryPrep& q, int64_t first, int count, Scratch& sc) {
    double s[kHeads];
    for (int p = 0; p < count; ++p) {
      for (int h = 0; h < kHeads; ++h) s[h] = sc.sd[h][p];
      out[i][first + p] = exact_score(s, q.w);
    }
  });
}

void exact_scores_at(const QueryRow& q, const KeyView& keys, const int32_t* positions, int64_t n, double* out) {
  exact_scores_at_multi(&q, 1, keys, positions, n, &out);
}

void exact_scores_row(const QueryRow& q, const KeyView& keys, int64_t L, double* out) {
  exact_scores_at_multi(&q, 1, keys, nullptr, L, &out);
}

void dense_scores_row_scalar(const QueryRow& q, const KeyView& keys, int64_t L, float* out) {
  float s[kHeads];
  for (int64_t p = 0; p < L; ++p) {
    for (int h = 0; h < kHeads; ++h) {
      s[h] = head_score_fp32(q.q + h * kPackedDim, q.q_scale + h * kScaleGroups, keys.payload(p), keys.scale(p));
      if (std::isinf(s[h])) throw ScoreOverflow(p, h);
    }
    out[p] = dense_score(s, q.weights);
  }
}

}  // namespace dsa::ref
