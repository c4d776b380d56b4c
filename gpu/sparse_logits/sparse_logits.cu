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

// fp32 s = x + y (x, y exact fp32 values) with its exact error e (TwoSum), then s + e rounded
// ONCE to bf16: RNE on the dropped 16 bits, with e deciding a tie that is not one.
__device__ __forceinline__ float bf16_sum_f32(float x, float y) {
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
// fp32 unless it is tiny (below 2^-100: then the double path).
__device__ __forceinline__ float bf16_fma(float a, float w, float c) {
  const float p = __fmul_rn(a, w);
  if (fabsf(p) < 0x1p-100f && p != 0.0f)
    return bf16_add_exact(__dmul_rn(double(a), double(w)), double(c));
  return bf16_sum_f32(p, c);
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
  const float t = bf16_sum_f32(acc, __shfl_xor_sync(0xFFFFFFFFu, acc, 16));
  const float score = bf16_sum_f32(t, __shfl_xor_sync(0xFFFFFFFFu, t, 8));
  return uint16_t(__float_as_uint(score) >> 16);
}

__global__ void __launch_bounds__(kWarps * 32, 2) sparse_logits_kernel(SparseLogitsArgs a) {
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
  load_query(q, a.qr + int64_t(row) * 4096, a.qexp + int64_t(row) * 32, a.qscale + int64_t(row) * 32,
             a.row_fast[row]);
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
  const Fp4Lut raw_lut = fp4_lut(0);
  // The next block's key bytes are fetched while the current block is scored.
  auto fetch = [&](int bi, uint4& packed, uint32_t& exps) {
    const int64_t pos = int64_t(blocks[bi]) * 8 + n;
    packed = make_uint4(0, 0, 0, 0);
    exps = 0x80808080u;  // positions >= L: zero keys on the fast path (never written)
    if (pos < L) {
      const uint8_t* page = a.pool + int64_t(table[pos / P]) * P * 68;
      const int64_t off = pos % P;
      packed = *reinterpret_cast<const uint4*>(page + off * 64 + grp * 16);
      exps = *reinterpret_cast<const uint32_t*>(page + int64_t(P) * 64 + off * 4);
    }
  };
  uint4 next_packed = make_uint4(0, 0, 0, 0);
  uint32_t next_exps = 0x80808080u;
  if (nblocks > 0) fetch(0, next_packed, next_exps);
  for (int bi = 0; bi < nblocks; ++bi) {
    const int64_t pos = int64_t(blocks[bi]) * 8 + n;
    const uint32_t words[4] = {next_packed.x, next_packed.y, next_packed.z, next_packed.w};
    const uint32_t exps = next_exps;
    if (bi + 1 < nblocks) fetch(bi + 1, next_packed, next_exps);
    float scale = 1.0f;
    int shift = 0;
    if (pos < L) {
      int e[4], emin = 255, emax = 0;
#pragma unroll
      for (int k = 0; k < 4; ++k) {
        e[k] = int((exps >> (8 * k)) & 0xFF);
        emin = min(emin, e[k]);
        emax = max(emax, e[k]);
      }
      const bool fast = emax - emin <= 3 && emin - 128 >= -45 && emin - 128 <= 45;
      const int eg = grp == 0 ? e[0] : grp == 1 ? e[1] : grp == 2 ? e[2] : e[3];
      shift = fast ? eg - emin : 0;
      scale = fast ? __int_as_float((emin - 128 + 127) << 23) : 0.0f;
    }
    const Fp4Lut lut = fp4_lut(shift);
    uint32_t sv[8];
#pragma unroll
    for (int w = 0; w < 4; ++w) unpack8(words[w], lut, sv[2 * w], sv[2 * w + 1]);
    uint4* sd = reinterpret_cast<uint4*>(ks + n * kKeyStride + grp * 32);
    sd[0] = make_uint4(sv[0], sv[1], sv[2], sv[3]);
    sd[1] = make_uint4(sv[4], sv[5], sv[6], sv[7]);
    // Raw keys only when some position (or the query row) takes the generic path.
    if (!__all_sync(0xFFFFFFFFu, q.fast && scale != 0.0f)) {
      uint32_t rv[8];
#pragma unroll
      for (int w = 0; w < 4; ++w) unpack8(words[w], raw_lut, rv[2 * w], rv[2 * w + 1]);
      uint4* rd = reinterpret_cast<uint4*>(kr + n * kKeyStride + grp * 32);
      rd[0] = make_uint4(rv[0], rv[1], rv[2], rv[3]);
      rd[1] = make_uint4(rv[4], rv[5], rv[6], rv[7]);
    }
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
