#pragma once
// Pieces shared by the two dense logits kernels (dense_logits.cu, dense_wgmma.cu): the reference's
// epilogue on mma.sync head scores, and the exact generic route for 8 positions of one row.
#include <cstdint>

#include "gpu/common/fp4_mma.cuh"

namespace dsa::gpu {

// Relu, the 4-lane fma chain and the lane sums; lanes 0..7 end up with the score of
// position 2t + g (lane = 4g + t).
__device__ __forceinline__ float dense_epilogue(const float (&s)[4][2], const float (&wl)[8]) {
  float r[4][2];
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    r[i][0] = fmaxf(s[i][0], 0.0f);
    r[i][1] = fmaxf(s[i][1], 0.0f);
  }
  float chain[8];
  own_position(r, chain);
  float acc = 0.0f;
#pragma unroll
  for (int j = 0; j < 8; ++j) acc = __fmaf_rn(chain[j], wl[j], acc);
  const float t = __fadd_rn(acc, __shfl_xor_sync(0xFFFFFFFFu, acc, 16));  // a0+a2 / a1+a3
  return __fadd_rn(t, __shfl_xor_sync(0xFFFFFFFFu, t, 8));               // (a0+a2)+(a1+a3)
}

// Scores of positions pb..pb+7 of one selected row by the generic route (raw operands from global
// memory, group sums combined in double): exact for any operands. Writes position p < L where
// keep(p) holds. One warp; rare (wide keys or rows), so kept out of the hot loops' registers.
struct GenericRowArgs {
  const int8_t* qr;      // [nsel][32][128] raw query
  const uint32_t* qexp;  // [nsel][32]
  const float* qscale;   // [nsel][32]
  const float* weights;  // [nsel][32]
  const int8_t* kr;      // [ncols][128] raw keys
  const uint32_t* kexp;  // [ncols]
};
// A row's operands for the generic route, loaded once for several groups of positions.
struct GenericRow {
  QueryFrags q;
  float wl[8];
};
__device__ __forceinline__ void load_generic_row(const GenericRowArgs& a, int row, GenericRow& r) {
  const int g = (threadIdx.x & 31) >> 2;
  load_query(r.q, a.qr + int64_t(row) * 4096, a.qexp + int64_t(row) * 32, a.qscale + int64_t(row) * 32, 0);
#pragma unroll
  for (int j = 0; j < 8; ++j) r.wl[j] = a.weights[int64_t(row) * 32 + (g >> 1) + 4 * j];
}
__device__ __forceinline__ float generic_score(const GenericRowArgs& a, const GenericRow& r, int64_t col) {
  float s[4][2];
  head_scores_generic(r.q, a.kr + col * 128, 128, a.kexp + col, s);
  return dense_epilogue(s, r.wl);
}
__device__ __forceinline__ float generic_score(const GenericRowArgs& a, int row, int64_t col) {
  GenericRow r;
  load_generic_row(a, row, r);
  return generic_score(a, r, col);
}

}  // namespace dsa::gpu
