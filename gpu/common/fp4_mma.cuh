#pragma once
// Exact head scores on the tensor cores, shared by the dense and the paged sparse logits kernels.
//
// e2m1 codes times 2 are integers in [-12, 12]; within a 32-dim group the ue8m0 scale is a power
// of two. Keys whose four group exponents span at most 3 binades are stored "shifted": each value
// times 2^(Ek_g - Ek_min), still an int8 (|v| <= 96). Queries stay raw; their group exponents
// become integer multipliers 2^(Eq_g - Eq_min) (span <= 12). One int8 mma per 32-dim group gives
// C_g exactly, S = sum_g C_g * 2^(Eq_g - Eq_min) is an exact int32 (|S| < 2^30), and
// s = float_rn(S) * 2^(Eq_min-128) * 2^(Ek_min-128) is S * 2^(...) rounded ONCE (scaling by powers
// of two is exact while every step stays a normal float: the scale exponents are kept within
// +-45, checked per vector). Everything else (wider spans, extreme scales) takes the generic
// path: the four group sums combined in double (exact while their exponents span < ~36
// binades) and rounded once to fp32.
//
// Warp layout (mma.m16n8k32 s8*s8->s32): M = the 32 heads (two m-tiles), N = 8 key positions,
// K = 32 dims per mma. A-row rho of m-tile mt holds head ((rho&7)>>1) + 16*(rho&1) +
// 4*(2*mt + (rho>>3)), so thread (g = lane/4, t = lane%4) ends up with heads
// l + 16*(g&1) + 4*i (l = g>>1, i = 0..3) of positions 2t, 2t+1: exactly the heads of fma lane
// l, in chain order. One shuffle pairs threads g and g^1 so each owns one position and all 8
// heads of its lane; two more shuffles do the lane sums.
#include <cstdint>

namespace dsa::gpu {

constexpr int kKeyStride = 144;  // bytes per staged key row in shared memory (128 + pad: no bank conflicts)

__device__ __forceinline__ void mma_s8(int (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};\n"
      : "+r"(c[0]), "+r"(c[1]), "+r"(c[2]), "+r"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// Byte lookup tables for decoding: 2*|e2m1| of codes 0..7 shifted left by `shift` (<= 3, so
// every byte stays <= 96), and the same values negated, as int8 bytes.
struct Fp4Lut {
  uint32_t p0, p1, n0, n1;
};
// The tables for the positive bytes p0 (codes 0..3) and p1 (codes 4..7): each byte negated.
__device__ __forceinline__ Fp4Lut with_negatives(uint32_t p0, uint32_t p1) {
  Fp4Lut l{p0, p1, 0, 0};
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    l.n0 |= (uint32_t(-int((p0 >> (8 * j)) & 0xFFu)) & 0xFFu) << (8 * j);
    l.n1 |= (uint32_t(-int((p1 >> (8 * j)) & 0xFFu)) & 0xFFu) << (8 * j);
  }
  return l;
}
__device__ __forceinline__ Fp4Lut fp4_lut(int shift) {
  return with_negatives(0x03020100u << shift,   // codes 0..3: 0 1 2 3
                        0x0C080604u << shift);  // codes 4..7: 4 6 8 12
}

// Four e2m1 codes (the nibbles of the low 16 bits of h, lowest first) -> four int8 bytes.
__device__ __forceinline__ uint32_t decode4(uint32_t h, const Fp4Lut& l) {
  const uint32_t sel = h & 0x7777u;  // magnitude code of each nibble = byte selector
  const uint32_t pos = __byte_perm(l.p0, l.p1, sel);
  const uint32_t neg = __byte_perm(l.n0, l.n1, sel);
  const uint32_t y = __byte_perm(h, 0u, 0x1100u);  // bytes: h0 h0 h1 h1
  const uint32_t sign = ((y >> 3) & 0x00010001u) | ((y >> 7) & 0x01000100u);  // nibble bit 3 -> byte bit 0
  const uint32_t mask = sign * 0xFFu;
  return (pos & ~mask) | (neg & mask);
}

// Four packed bytes (8 nibbles, low nibble first) -> two words of 4 int8 each.
__device__ __forceinline__ void unpack8(uint32_t packed, const Fp4Lut& l, uint32_t& lo, uint32_t& hi) {
  lo = decode4(packed & 0xFFFFu, l);
  hi = decode4(packed >> 16, l);
}

// Head of A-row rho in m-tile mt (see the layout note above).
__device__ __forceinline__ int head_of_row(int rho, int mt) {
  return ((rho & 7) >> 1) + 16 * (rho & 1) + 4 * (2 * mt + (rho >> 3));
}
// Head of value i (0..3) held by thread group g.
__device__ __forceinline__ int head_of(int g, int i) { return (g >> 1) + 16 * (g & 1) + 4 * i; }

// 2^e as a double (e within the normal range).
__device__ __forceinline__ double pow2d(int e) { return __longlong_as_double((long long)(e + 1023) << 52); }

// A query row's operands: raw A fragments, per-head group multipliers and scales.
struct QueryFrags {
  uint32_t a[2][4][4];  // [m-tile][32-dim group][register], raw 2*values
  int mul[4][4];        // [i][group] 2^(Eq_g - Eq_min) of head_of(g, i)
  float sq[4];          // 2^(Eq_min - 128) of head_of(g, i)
  uint32_t eq[4];       // the four ue8m0 bytes of head_of(g, i) (generic path)
  bool fast;            // every head of the row is on the fast path
};

// The A fragments of one query row: rows [32][128] int8 (raw or split form).
__device__ __forceinline__ void load_a_frags(uint32_t (&a)[2][4][4], const int8_t* rows) {
  const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
#pragma unroll
  for (int mt = 0; mt < 2; ++mt)
#pragma unroll
    for (int ks = 0; ks < 4; ++ks) {
      const int8_t* r0 = rows + head_of_row(g, mt) * 128 + ks * 32 + 4 * t;
      const int8_t* r1 = rows + head_of_row(g + 8, mt) * 128 + ks * 32 + 4 * t;
      a[mt][ks][0] = *reinterpret_cast<const uint32_t*>(r0);
      a[mt][ks][1] = *reinterpret_cast<const uint32_t*>(r1);
      a[mt][ks][2] = *reinterpret_cast<const uint32_t*>(r0 + 16);
      a[mt][ks][3] = *reinterpret_cast<const uint32_t*>(r1 + 16);
    }
}

// qr: [32][128] raw int8 of one row, qexp: [32], qscale: [32] (0 = head not fast).
__device__ __forceinline__ void load_query(QueryFrags& q, const int8_t* qr, const uint32_t* qexp,
                                           const float* qscale, int row_fast) {
  const int g = (threadIdx.x & 31) >> 2;
  load_a_frags(q.a, qr);
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const int h = head_of(g, i);
    q.sq[i] = qscale[h];
    q.eq[i] = qexp[h];
    int e[4], emin = 255;
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      e[k] = int((q.eq[i] >> (8 * k)) & 0xFF);
      emin = min(emin, e[k]);
    }
#pragma unroll
    for (int k = 0; k < 4; ++k) q.mul[i][k] = e[k] - emin <= 20 ? (1 << (e[k] - emin)) : 0;  // used when span <= 12
  }
  q.fast = row_fast != 0;
}

// Generic path for 8 positions: per-group sums (raw K), exact combination in double.
// kraw(n) rows of 128 raw int8 (stride kraw_stride), kexp[n] four ue8m0 bytes.
__device__ __forceinline__ void head_scores_generic(const QueryFrags& q, const int8_t* kraw, int kraw_stride,
                                                    const uint32_t* kexp, float (&s)[4][2]) {
  const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
  double acc[4][2];
#pragma unroll
  for (int i = 0; i < 4; ++i) acc[i][0] = acc[i][1] = 0.0;
  const uint32_t ek0 = kexp[2 * t], ek1 = kexp[2 * t + 1];
#pragma unroll
  for (int ks = 0; ks < 4; ++ks) {
    const int8_t* kb = kraw + g * kraw_stride + ks * 32 + 4 * t;
    const uint32_t b0 = *reinterpret_cast<const uint32_t*>(kb);
    const uint32_t b1 = *reinterpret_cast<const uint32_t*>(kb + 16);
    int c[2][4] = {{0, 0, 0, 0}, {0, 0, 0, 0}};
    mma_s8(c[0], q.a[0][ks], b0, b1);
    mma_s8(c[1], q.a[1][ks], b0, b1);
    const int ekg0 = int((ek0 >> (8 * ks)) & 0xFF), ekg1 = int((ek1 >> (8 * ks)) & 0xFF);
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const int eqg = int((q.eq[i] >> (8 * ks)) & 0xFF);
      const int* ci = c[i >> 1] + (i & 1) * 2;
      acc[i][0] += double(ci[0]) * pow2d(eqg + ekg0 - 256);
      acc[i][1] += double(ci[1]) * pow2d(eqg + ekg1 - 256);
    }
  }
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    s[i][0] = __double2float_rn(acc[i][0]);
    s[i][1] = __double2float_rn(acc[i][1]);
  }
}

// ---- the split route: two accumulators, no int->float conversion ----
// Query heads whose groups 0-2 span at most 3 binades are stored "split" by the query prep:
// groups 0-2 shifted to their own minimum exponent m012 (|v| <= 96), group 3 raw. The k-steps of
// groups 0-2 then chain into one accumulator A, group 3 goes to B, and with base = Eq_min,
//   S = A * 2^(m012 - base) + B * 2^(E3 - base)            (two IMAD, exact)
// For 0 <= S < 2^23 the float with the bits of 2^23 + S is exactly 2^23 + S, so
//   S * 2^(base-128) = fma(float_bits(2^23 + S), sq, -2^23 * sq)   exactly (sq = 2^(base-128)),
// and one multiply by the key's 2^(Ek_min-128) is the single fp32 rounding of the exact score.
// A negative S gives a negative result (relu makes it 0 either way). The query prep admits a row
// only when every head's bound on |S| (its actual q magnitudes times the largest key value 96)
// stays below 2^23.
// The split operands of a query row in QueryFrags' registers: a = qsplit fragments,
// mul[i][0] = mA and mul[i][1] = mB of head_of(g, i). qsplit: [32][128] of one row; qmul: [32]
// {mA, mB}; qscale: [32].
__device__ __forceinline__ void load_query_split(QueryFrags& q, const int8_t* qsplit, const int2* qmul,
                                                 const float* qscale) {
  const int g = (threadIdx.x & 31) >> 2;
  load_a_frags(q.a, qsplit);
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const int h = head_of(g, i);
    const int2 m = qmul[h];
    q.mul[i][0] = m.x;
    q.mul[i][1] = m.y;
    q.mul[i][2] = q.mul[i][3] = 0;
    q.sq[i] = qscale[h];
    q.eq[i] = 0;
  }
  q.fast = true;
}

// B fragments of 8 staged keys (rows of kKeyStride bytes): key g, dims 4t.. of each half-group.
__device__ __forceinline__ void load_b_frags(uint32_t (&b)[4][2], const int8_t* ks_smem) {
  const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
#pragma unroll
  for (int ks = 0; ks < 4; ++ks) {
    const int8_t* kb = ks_smem + g * kKeyStride + ks * 32 + 4 * t;
    b[ks][0] = *reinterpret_cast<const uint32_t*>(kb);
    b[ks][1] = *reinterpret_cast<const uint32_t*>(kb + 16);
  }
}

// Exact fp32 head scores s[i][par] (head head_of(g, i), position 2t + par) on the split route;
// sk0, sk1: the key scales of positions 2t and 2t+1 (all fast).
__device__ __forceinline__ void head_scores_split(const QueryFrags& q, const uint32_t (&b)[4][2], float sk0,
                                                  float sk1, float (&s)[4][2]) {
#pragma unroll
  for (int mt = 0; mt < 2; ++mt) {
    int ca[4] = {0, 0, 0, 0}, cb[4] = {0, 0, 0, 0};
#pragma unroll
    for (int ks = 0; ks < 3; ++ks) mma_s8(ca, q.a[mt][ks], b[ks][0], b[ks][1]);
    mma_s8(cb, q.a[mt][3], b[3][0], b[3][1]);
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const int i = 2 * mt + (e >> 1);
      const int total = ca[e] * q.mul[i][0] + (cb[e] * q.mul[i][1] + 0x4B000000);  // bits of 2^23 + S
      s[i][e & 1] = __fmul_rn(__fmaf_rn(__int_as_float(total), q.sq[i], -0x1p23f * q.sq[i]), (e & 1) ? sk1 : sk0);
    }
  }
}

// Fast-path head scores (query row and all 8 keys fast): four accumulators, the integer
// multipliers of the query's groups, one int -> fp32 rounding, exact power-of-two scalings.
// b: the keys' shifted B fragments; sk0, sk1: the key scales of positions 2t and 2t+1.
// kBits: convert through the float bits of 2^23 + S (the split route's trick, above; only where
// the caller knows S < 2^23) instead of I2F.
template <bool kBits = false>
__device__ __forceinline__ void head_scores_fast4(const QueryFrags& q, const uint32_t (&b)[4][2], float sk0,
                                                  float sk1, float (&s)[4][2]) {
#pragma unroll
  for (int mt = 0; mt < 2; ++mt) {
    int c[4][4] = {{0, 0, 0, 0}, {0, 0, 0, 0}, {0, 0, 0, 0}, {0, 0, 0, 0}};
#pragma unroll
    for (int ks = 0; ks < 4; ++ks) mma_s8(c[ks], q.a[mt][ks], b[ks][0], b[ks][1]);
#pragma unroll
    for (int r = 0; r < 4; ++r) {
      const int i = 2 * mt + (r >> 1);
      const int total = (kBits ? 0x4B000000 : 0) + c[0][r] * q.mul[i][0] + c[1][r] * q.mul[i][1] +
                        c[2][r] * q.mul[i][2] + c[3][r] * q.mul[i][3];  // exact: |S| < 2^30
      const float sk = (r & 1) ? sk1 : sk0;
      if constexpr (kBits)
        s[i][r & 1] = __fmul_rn(__fmaf_rn(__int_as_float(total), q.sq[i], -0x1p23f * q.sq[i]), sk);
      else  // one rounding (int -> fp32 RN), then exact power-of-two scalings
        s[i][r & 1] = __fmul_rn(__fmul_rn(__int2float_rn(total), q.sq[i]), sk);
    }
  }
}

// Exact fp32 head scores s[i][par] (head head_of(g, i), position 2t + par) for 8 positions
// staged in shared memory: ks_smem rows of kKeyStride bytes (shifted values), kscale[n]
// (0 = not fast). Raw keys for the generic path as in head_scores_generic.
__device__ __forceinline__ void head_scores(const QueryFrags& q, const int8_t* ks_smem, const float* kscale,
                                            const int8_t* kraw, int kraw_stride, const uint32_t* kexp,
                                            float (&s)[4][2]) {
  const int t = threadIdx.x & 3;
  const float sk0 = kscale[2 * t], sk1 = kscale[2 * t + 1];
  const bool fast = __all_sync(0xFFFFFFFFu, q.fast && sk0 != 0.0f && sk1 != 0.0f);
  if (!fast) {
    head_scores_generic(q, kraw, kraw_stride, kexp, s);
    return;
  }
  uint32_t b[4][2];
  load_b_frags(b, ks_smem);
  head_scores_fast4(q, b, sk0, sk1, s);
}

// Pairs threads g and g^1: afterwards thread g owns position 2t + (g&1) with the 8 values of
// lane l = g>>1 in chain order (heads l, l+4, ..., l+28).
__device__ __forceinline__ void own_position(const float (&v)[4][2], float (&chain)[8]) {
  const int lane = threadIdx.x & 31, odd = (lane >> 2) & 1;
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const float send = odd ? v[i][0] : v[i][1];
    const float recv = __shfl_xor_sync(0xFFFFFFFFu, send, 4);
    chain[i] = odd ? recv : v[i][0];      // heads l + 4i
    chain[4 + i] = odd ? v[i][1] : recv;  // heads l + 16 + 4i
  }
}

}  // namespace dsa::gpu
