#pragma once
// Exact head scores on the tensor cores, shared by the dense and the paged sparse logits kernels.
//
// e2m1 codes times 2 are integers in [-12, 12]; within a 32-dim group the ue8m0 scale is a power
// of two. A vector whose four group exponents span at most 3 binades is stored "shifted": each
// value times 2^(E_g - E_min), still an int8 (|v| <= 96). Then one int8 mma chain over all 128
// dims gives S = sum q*k exactly (|S| < 2^21, exact in fp32), and s = S * 2^(Eq_min-128) *
// 2^(Ek_min-128) is exact as long as every step stays a normal float (checked per vector: the
// scale factors are kept within 2^+-50, where no step can leave the normal range).
// Everything else (wider exponent spans, extreme scales) takes the generic path: one mma per
// 32-dim group on the raw values, the four group sums combined in double (exact while their
// exponents span < ~36 binades) and rounded once to fp32.
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

// e2m1 nibble -> 2 * value, an integer in [-12, 12].
__device__ __forceinline__ int fp4_twice(uint32_t nib) {
  const int mag = int((0xC8643210u >> ((nib & 7u) * 4u)) & 15u);
  return (nib & 8u) ? -mag : mag;
}

// Four packed bytes (8 nibbles, low nibble first) -> two words of 4 int8 each, values << shift.
__device__ __forceinline__ void unpack8(uint32_t packed, int shift, uint32_t& lo, uint32_t& hi) {
  uint32_t w[2] = {0, 0};
#pragma unroll
  for (int i = 0; i < 8; ++i) {
    const int v = fp4_twice((packed >> (4 * i)) & 15u) * (1 << shift);
    w[i >> 2] |= (uint32_t(v) & 0xFFu) << (8 * (i & 3));
  }
  lo = w[0];
  hi = w[1];
}

// Head of A-row rho in m-tile mt (see the layout note above).
__device__ __forceinline__ int head_of_row(int rho, int mt) {
  return ((rho & 7) >> 1) + 16 * (rho & 1) + 4 * (2 * mt + (rho >> 3));
}
// Head of value i (0..3) held by thread group g.
__device__ __forceinline__ int head_of(int g, int i) { return (g >> 1) + 16 * (g & 1) + 4 * i; }

// 2^e as a double (e within the normal range).
__device__ __forceinline__ double pow2d(int e) { return __longlong_as_double((long long)(e + 1023) << 52); }

// A query row's operands: shifted A fragments and per-head scales (fast path), plus where the
// raw values live for the generic path.
struct QueryFrags {
  uint32_t a[2][4][4];  // [m-tile][32-dim group][register]
  float sq[4];          // 2^(Eq_min - 128) of head_of(g, i)
  bool fast;            // every head of the row is "shifted"-representable
  const int8_t* raw;    // [32][128] raw 2*values
  const uint32_t* exps; // [32] four ue8m0 bytes per head
};

// qs/qr: [32][128] int8 of one row, qexp: [32], qscale: [32] (0 = head not fast).
__device__ __forceinline__ void load_query(QueryFrags& q, const int8_t* qs, const int8_t* qr,
                                           const uint32_t* qexp, const float* qscale, int row_fast) {
  const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
#pragma unroll
  for (int mt = 0; mt < 2; ++mt)
#pragma unroll
    for (int ks = 0; ks < 4; ++ks) {
      const int8_t* r0 = qs + head_of_row(g, mt) * 128 + ks * 32 + 4 * t;
      const int8_t* r1 = qs + head_of_row(g + 8, mt) * 128 + ks * 32 + 4 * t;
      q.a[mt][ks][0] = *reinterpret_cast<const uint32_t*>(r0);
      q.a[mt][ks][1] = *reinterpret_cast<const uint32_t*>(r1);
      q.a[mt][ks][2] = *reinterpret_cast<const uint32_t*>(r0 + 16);
      q.a[mt][ks][3] = *reinterpret_cast<const uint32_t*>(r1 + 16);
    }
#pragma unroll
  for (int i = 0; i < 4; ++i) q.sq[i] = qscale[head_of(g, i)];
  q.fast = row_fast != 0;
  q.raw = qr;
  q.exps = qexp;
}

// Generic path for 8 positions: per-group mma on raw values, exact combination in double.
// kraw(n) rows of 128 raw int8 (stride kraw_stride), kexp[n] four ue8m0 bytes.
static __device__ __noinline__ void head_scores_generic(const QueryFrags& q, const int8_t* kraw, int kraw_stride,
                                                 const uint32_t* kexp, float (&s)[4][2]) {
  const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
  double acc[4][2];
#pragma unroll
  for (int i = 0; i < 4; ++i) acc[i][0] = acc[i][1] = 0.0;
  uint32_t eq[4];
#pragma unroll
  for (int i = 0; i < 4; ++i) eq[i] = q.exps[head_of(g, i)];
  const uint32_t ek0 = kexp[2 * t], ek1 = kexp[2 * t + 1];
  for (int ks = 0; ks < 4; ++ks) {
    uint32_t a[2][4];
#pragma unroll
    for (int mt = 0; mt < 2; ++mt) {
      const int8_t* r0 = q.raw + head_of_row(g, mt) * 128 + ks * 32 + 4 * t;
      const int8_t* r1 = q.raw + head_of_row(g + 8, mt) * 128 + ks * 32 + 4 * t;
      a[mt][0] = *reinterpret_cast<const uint32_t*>(r0);
      a[mt][1] = *reinterpret_cast<const uint32_t*>(r1);
      a[mt][2] = *reinterpret_cast<const uint32_t*>(r0 + 16);
      a[mt][3] = *reinterpret_cast<const uint32_t*>(r1 + 16);
    }
    const int8_t* kb = kraw + g * kraw_stride + ks * 32 + 4 * t;
    const uint32_t b0 = *reinterpret_cast<const uint32_t*>(kb);
    const uint32_t b1 = *reinterpret_cast<const uint32_t*>(kb + 16);
    int c[2][4] = {{0, 0, 0, 0}, {0, 0, 0, 0}};
    mma_s8(c[0], a[0], b0, b1);
    mma_s8(c[1], a[1], b0, b1);
    const int ekg0 = int((ek0 >> (8 * ks)) & 0xFF), ekg1 = int((ek1 >> (8 * ks)) & 0xFF);
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const int eqg = int((eq[i] >> (8 * ks)) & 0xFF);
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

// Exact fp32 head scores s[i][par] (head head_of(g, i), position 2t + par) for 8 positions
// staged in shared memory: ks_smem rows of kKeyStride bytes (shifted values), kscale[n]
// (0 = not fast). Raw operands for the generic path as in head_scores_generic.
__device__ __forceinline__ void head_scores(const QueryFrags& q, const int8_t* ks_smem, const float* kscale,
                                            const int8_t* kraw, int kraw_stride, const uint32_t* kexp,
                                            float (&s)[4][2]) {
  const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
  const float sk0 = kscale[2 * t], sk1 = kscale[2 * t + 1];
  const bool fast = __all_sync(0xFFFFFFFFu, q.fast && sk0 != 0.0f && sk1 != 0.0f);
  if (!fast) {
    head_scores_generic(q, kraw, kraw_stride, kexp, s);
    return;
  }
  int c[2][4] = {{0, 0, 0, 0}, {0, 0, 0, 0}};
#pragma unroll
  for (int ks = 0; ks < 4; ++ks) {
    const int8_t* kb = ks_smem + g * kKeyStride + ks * 32 + 4 * t;
    const uint32_t b0 = *reinterpret_cast<const uint32_t*>(kb);
    const uint32_t b1 = *reinterpret_cast<const uint32_t*>(kb + 16);
    mma_s8(c[0], q.a[0][ks], b0, b1);
    mma_s8(c[1], q.a[1][ks], b0, b1);
  }
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const int* ci = c[i >> 1] + (i & 1) * 2;
    s[i][0] = (float(ci[0]) * q.sq[i]) * sk0;  // each product exact (normal range guaranteed)
    s[i][1] = (float(ci[1]) * q.sq[i]) * sk1;
  }
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
