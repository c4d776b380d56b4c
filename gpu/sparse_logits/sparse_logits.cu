#include "gpu/common/check.cuh"
#include "gpu/common/fp4_mma.cuh"
#include "gpu/sparse_logits/sparse_logits.cuh"
#include "harness/core/constants.hpp"

namespace dsa::gpu {
namespace {

constexpr int kWarps = 8;

__device__ __forceinline__ uint16_t bf16_rne(float x) {
  uint32_t u = __float_as_uint(x);
  if ((u & 0x7F800000u) == 0x7F800000u && (u & 0x007FFFFFu)) return uint16_t((u >> 16) | 0x40);
  u += 0x7FFFu + ((u >> 16) & 1u);
  return uint16_t(u >> 16);
}
__device__ __forceinline__ float bf16_value(uint16_t b) { return __uint_as_float(uint32_t(b) << 16); }

// The exact value x = s + err (err from TwoSum, tiny against s) rounded ONCE to bf16 (RNE,
// subnormals, overflow to inf); returned as the float it encodes.
__device__ float bf16_round(double s, double err) {
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

__device__ __forceinline__ float bf16_add_exact(double x, double y) {
  const double s = __dadd_rn(x, y);
  const double bb = __dsub_rn(s, x);
  const double err = __dadd_rn(__dsub_rn(x, __dsub_rn(s, bb)), __dsub_rn(y, bb));
  return bf16_round(s, err);
}

// bf16(a*w + c) with one rounding: a*w is exact in double (8-bit significands).
__device__ __forceinline__ float bf16_fma(float a, float w, float c) {
  return bf16_add_exact(__dmul_rn(double(a), double(w)), double(c));
}

// Lanes 0..7 end up with the score of position 2t + g (lane = 4g + t).
__device__ __forceinline__ uint16_t sparse_epilogue(const float (&s)[4][2], const float (&wb)[8]) {
  float a[4][2];
#pragma unroll
  for (int i = 0; i < 4; ++i)
#pragma unroll
    for (int p = 0; p < 2; ++p) {
      const uint16_t b = bf16_rne(s[i][p]);
      a[i][p] = (b & 0x8000u) ? 0.0f : bf16_value(b);  // negatives (and -0) -> +0
    }
  float chain[8];
  own_position(a, chain);
  float acc = 0.0f;
#pragma unroll
  for (int j = 0; j < 8; ++j) acc = bf16_fma(chain[j], wb[j], acc);
  const float t = bf16_add_exact(acc, __shfl_xor_sync(0xFFFFFFFFu, acc, 16));
  const float score = bf16_add_exact(t, __shfl_xor_sync(0xFFFFFFFFu, t, 8));
  return uint16_t(__float_as_uint(score) >> 16);
}

__global__ void __launch_bounds__(kWarps * 32) sparse_logits_kernel(SparseLogitsArgs a) {
  __shared__ __align__(16) int8_t ks_all[kWarps][8 * kKeyStride];
  __shared__ __align__(16) int8_t kr_all[kWarps][8 * kKeyStride];
  __shared__ uint32_t kexp_all[kWarps][8];
  __shared__ float kscale_all[kWarps][8];
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
  const int i = blockIdx.x * kWarps + warp;
  if (i >= a.n) return;  // whole warps only: no block-wide barriers below
  int8_t* ks = ks_all[warp];
  int8_t* kr = kr_all[warp];
  uint32_t* kexp = kexp_all[warp];
  float* kscale = kscale_all[warp];

  const int row = a.rows[i];
  const int L = a.sel_len[row];
  const int req = a.sel_req[row];
  const int valid = a.valid_len[i];
  QueryFrags q;
  load_query(q, a.qs + int64_t(row) * 4096, a.qr + int64_t(row) * 4096, a.qexp + int64_t(row) * 32,
             a.qscale + int64_t(row) * 32, a.row_fast[row]);
  float wb[8];
#pragma unroll
  for (int j = 0; j < 8; ++j) wb[j] = bf16_value(bf16_rne(a.weights[int64_t(row) * 32 + (g >> 1) + 4 * j]));
  const int P = a.page_size;
  const int32_t* table = a.table + int64_t(req) * a.table_width;
  const int32_t* blocks = a.blocks + int64_t(i) * kTopkBlocks;
  uint16_t* out = a.out + int64_t(i) * kCandidateWidth;

  // Staging role of this lane: position n = lane/4 of the block, 32-dim group lane%4.
  const int n = lane >> 2, grp = lane & 3;
  const int nblocks = (valid + 7) / 8;
  for (int bi = 0; bi < nblocks; ++bi) {
    const int64_t pos = int64_t(blocks[bi]) * 8 + n;
    uint32_t s[8] = {0, 0, 0, 0, 0, 0, 0, 0}, r[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    uint32_t exps = 0x80808080u;
    float scale = 1.0f;
    if (pos < L) {
      const uint8_t* page = a.pool + int64_t(table[pos / P]) * P * 68;
      const int64_t off = pos % P;
      const uint4 packed = *reinterpret_cast<const uint4*>(page + off * 64 + grp * 16);
      exps = *reinterpret_cast<const uint32_t*>(page + int64_t(P) * 64 + off * 4);
      int e[4], emin = 255, emax = 0;
#pragma unroll
      for (int k = 0; k < 4; ++k) {
        e[k] = int((exps >> (8 * k)) & 0xFF);
        emin = min(emin, e[k]);
        emax = max(emax, e[k]);
      }
      const bool fast = emax - emin <= 3 && emin - 128 >= -50 && emin - 128 <= 50;
      const int eg = grp == 0 ? e[0] : grp == 1 ? e[1] : grp == 2 ? e[2] : e[3];
      const int shift = fast ? eg - emin : 0;
      const uint32_t words[4] = {packed.x, packed.y, packed.z, packed.w};
#pragma unroll
      for (int w = 0; w < 4; ++w) {
        unpack8(words[w], shift, s[2 * w], s[2 * w + 1]);
        unpack8(words[w], 0, r[2 * w], r[2 * w + 1]);
      }
      scale = fast ? __int_as_float((emin - 128 + 127) << 23) : 0.0f;
    }
    uint4* sd = reinterpret_cast<uint4*>(ks + n * kKeyStride + grp * 32);
    uint4* rd = reinterpret_cast<uint4*>(kr + n * kKeyStride + grp * 32);
    sd[0] = make_uint4(s[0], s[1], s[2], s[3]);
    sd[1] = make_uint4(s[4], s[5], s[6], s[7]);
    rd[0] = make_uint4(r[0], r[1], r[2], r[3]);
    rd[1] = make_uint4(r[4], r[5], r[6], r[7]);
    if (grp == 0) {
      kexp[n] = exps;
      kscale[n] = scale;
    }
    __syncwarp();
    float sc[4][2];
    head_scores(q, ks, kscale, kr, kKeyStride, kexp, sc);
    const uint16_t score = sparse_epilogue(sc, wb);
    const int c = bi * 8 + 2 * t + g;
    if (lane < 8 && c < valid) out[c] = score;
    __syncwarp();
  }
}

}  // namespace

void launch_sparse_logits(const SparseLogitsArgs& a) {
  if (a.n == 0) return;
  sparse_logits_kernel<<<(a.n + kWarps - 1) / kWarps, kWarps * 32>>>(a);
  DSA_LAUNCH_CHECK("sparse_logits_kernel");
}

}  // namespace dsa::gpu
