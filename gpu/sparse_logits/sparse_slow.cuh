#pragma once
// The slow route of the paged sparse logits (both kernels): a block's keys read through the page
// table, decoded, staged in shared memory, head scores from fp4_mma.cuh's generic path and the
// emulated bf16 chain. Taken by keys off the fast path (kbscale 0) and rows whose query is not.
#include <cstdint>

#include "core/constants.hpp"
#include "gpu/common/bf16.cuh"
#include "gpu/common/fp4_mma.cuh"
#include "gpu/sparse_logits/row_job.cuh"
#include "gpu/sparse_logits/sparse_logits.cuh"

namespace dsa::gpu::sparse_slow {

// One warp's staging of a block's 8 keys.
struct alignas(16) SlowSmem {  // score_block_slow stages keys with 16-byte stores
  int8_t ks[8 * kKeyStride];
  int8_t kr[8 * kKeyStride];
  uint32_t kexp[8];
  float kscale[8];
};

// Lanes 0..7 end up with the score of position 2t + g (lane = 4g + t).
__device__ __forceinline__ uint16_t soft_epilogue(const float (&s)[4][2], const float (&wb)[8]) {
  float a[4][2];
#pragma unroll
  for (int i = 0; i < 4; ++i)
#pragma unroll
    for (int p = 0; p < 2; ++p) {
      const uint16_t b = soft_bf16_rne(s[i][p]);
      a[i][p] = (b & 0x8000u) ? 0.0f : bf16_value(b);  // negatives (and -0) -> +0
    }
  float chain[8];
  own_position(a, chain);
  float acc = 0.0f;
#pragma unroll
  for (int j = 0; j < 8; ++j) acc = soft_bf16_fma(chain[j], wb[j], acc);
  const float t = soft_bf16_sum(acc, __shfl_xor_sync(0xFFFFFFFFu, acc, 16));
  const float score = soft_bf16_sum(t, __shfl_xor_sync(0xFFFFFFFFu, t, 8));
  return uint16_t(__float_as_uint(score) >> 16);
}

// bf16(weight) of the 8 heads of this lane's chain lane g/2, in chain order.
__device__ __forceinline__ void load_weights(const SparseLogitsArgs& a, int row, float (&wb)[8]) {
  const int g = (threadIdx.x & 31) >> 2;
#pragma unroll
  for (int j = 0; j < 8; ++j) wb[j] = bf16_value(soft_bf16_rne(a.weights[int64_t(row) * 32 + (g >> 1) + 4 * j]));
}

__device__ __forceinline__ void load_row(const SparseLogitsArgs& a, int row, QueryFrags& q, float (&wb)[8]) {
  load_query(q, a.qr + int64_t(row) * 4096, a.qexp + int64_t(row) * 32, a.qscale + int64_t(row) * 32,
             a.row_fast[row]);
  load_weights(a, row, wb);
}

// Scores block `blk` of a row (its query q and weights wb loaded by load_row) into columns
// c0..c0+7 (< valid).
__device__ __forceinline__ void score_block_slow(const SparseLogitsArgs& a, const QueryFrags& q, const float (&wb)[8],
                                                 const int32_t* table, int L, int blk, int c0, int valid,
                                                 uint16_t* out, SlowSmem& sm) {
  const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
  const int n = lane >> 2, grp = lane & 3;  // staging role: position n of the block, 32-dim group
  const int P = a.page_size;
  const int64_t pos = int64_t(blk) * 8 + n;
  uint32_t words[4] = {0, 0, 0, 0};
  uint32_t exps = 0x80808080u;  // positions >= L: zero keys on the fast path (never written)
  if (pos < L) {
    const uint8_t* page = a.pool + int64_t(table[pos / P]) * P * 68;
    const int64_t off = pos % P;
    const uint4 packed = *reinterpret_cast<const uint4*>(page + off * 64 + grp * 16);
    words[0] = packed.x, words[1] = packed.y, words[2] = packed.z, words[3] = packed.w;
    exps = *reinterpret_cast<const uint32_t*>(page + int64_t(P) * 64 + off * 4);
  }
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
  const Fp4Lut lut = fp4_lut(shift), raw_lut = fp4_lut(0);
  uint32_t sv[8], rv[8];
#pragma unroll
  for (int w = 0; w < 4; ++w) {
    unpack8(words[w], lut, sv[2 * w], sv[2 * w + 1]);
    unpack8(words[w], raw_lut, rv[2 * w], rv[2 * w + 1]);
  }
  uint4* sd = reinterpret_cast<uint4*>(sm.ks + n * kKeyStride + grp * 32);
  sd[0] = make_uint4(sv[0], sv[1], sv[2], sv[3]);
  sd[1] = make_uint4(sv[4], sv[5], sv[6], sv[7]);
  uint4* rd = reinterpret_cast<uint4*>(sm.kr + n * kKeyStride + grp * 32);
  rd[0] = make_uint4(rv[0], rv[1], rv[2], rv[3]);
  rd[1] = make_uint4(rv[4], rv[5], rv[6], rv[7]);
  if (grp == 0) {
    sm.kexp[n] = exps;
    sm.kscale[n] = scale;
  }
  __syncwarp();
  float sc[4][2];
  head_scores(q, sm.ks, sm.kscale, sm.kr, kKeyStride, sm.kexp, sc);
  const uint16_t score = soft_epilogue(sc, wb);
  const int c = c0 + 2 * t + g;
  if (lane < 8 && c < valid) out[c] = score;
  __syncwarp();
}

// The blocks of row job j marked in slow_blocks (bit i = list entry i) that this warp takes
// (those of `mine`, repeated in every word), scored by the slow route. The row's operands are
// loaded once for all of them: reloaded per block (until run 117) they were a fifth of the slow
// route's instructions and its longest stall, and the slow route about 9 % of the wgmma kernel's
// time on chunk-256k (15 such blocks a row; bench/results/h200.md, run 113's profile).
static __device__ __noinline__ void score_slow_blocks(const SparseLogitsArgs& a, const SparseRowJob& j,
                                                      const uint32_t* slow_blocks, uint32_t mine, SlowSmem& sm) {
  bool any = false;
  for (int word = 0; word < kTopkBlocks / 32; ++word) any |= (slow_blocks[word] & mine) != 0;
  if (!any) return;
  QueryFrags q;
  float wb[8];
  load_row(a, j.row, q, wb);
  for (int word = 0; word < kTopkBlocks / 32; ++word)
    for (uint32_t bits = slow_blocks[word] & mine; bits != 0; bits &= bits - 1) {
      const int bi = word * 32 + __ffs(int(bits)) - 1;
      score_block_slow(a, q, wb, j.table, j.L, j.blocks[bi], bi * 8, j.valid, j.out, sm);
    }
}

// Every block of row job j by the slow route (a row whose query is off the fast path).
static __device__ __noinline__ void score_row_slow(const SparseLogitsArgs& a, const SparseRowJob& j, SlowSmem& sm) {
  QueryFrags q;
  float wb[8];
  load_row(a, j.row, q, wb);
  for (int bi = 0; bi < j.nb; ++bi) score_block_slow(a, q, wb, j.table, j.L, j.blocks[bi], bi * 8, j.valid, j.out, sm);
}

}  // namespace dsa::gpu::sparse_slow
