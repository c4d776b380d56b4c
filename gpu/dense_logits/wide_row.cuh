#pragma once
// The wide keys of one selected row on the dense wgmma route, scored by the generic route
// (wide_keys.cuh): what dense_wide_kernel runs, and the source's one-launch selection
// (gpu/topk/source_select.cu) before it reads the row's block keys.
#include <cstdint>

#include "gpu/dense_logits/dense_common.cuh"
#include "gpu/dense_logits/dense_wgmma.cuh"
#include "gpu/dense_logits/wide_keys.cuh"

namespace dsa::gpu {

// One warp: the row's query loaded once, then its wide groups j = split, split + splits, ...
// two at a time (their loads overlap). Writes the wide keys' scores and, with a.keys, the block
// keys of their blocks (the main kernel wrote meaningless ones there).
__device__ __forceinline__ void score_wide_row(const DenseWgmmaArgs& a, int row, int split, int splits) {
  const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
  const int req = a.sel_req[row], len = a.sel_len[row];
  const int64_t kcol = a.sel_kcol[row];
  const int n = a.wide_count[req];
  if (split >= n) return;
  const int32_t* list = a.wide_list + wide_list_offset(kcol, req);
  const GenericRowArgs ga{a.qr, a.qexp, a.qscale, a.weights, a.kr, a.kexp};
  GenericRow r;
  load_generic_row(ga, row, r);
  float* out = a.out + int64_t(row - a.row0) * a.ld;
  float* keys = a.keys == nullptr ? nullptr : a.keys + int64_t(row - a.row0) * a.ld_keys;
  // Lanes 0..7 hold positions pb + 0..7 (generic_score): the scores of the wide keys (of every
  // key when the main kernel skipped stores: it may have left the block unstored), and the
  // block's key over all its positions below len (the generic route is exact for every key), but
  // not the newest block's, which the main kernel set to +inf.
  auto put = [&](int pb, float score) {
    const int p = pb + 2 * t + g;
    if (lane < 8 && p < len && (a.skip != nullptr || a.kscale[kcol + p] == 0.0f)) out[p] = score;
    if (keys == nullptr) return;
    float m = lane < 8 && p < len ? score : -__int_as_float(0x7F800000);
#pragma unroll
    for (int x = 1; x < 8; x *= 2) m = fmaxf(m, __shfl_xor_sync(0xFFFFFFFFu, m, x));
    if (lane == 0 && pb / 8 < (len + 7) / 8 - 1) keys[pb / 8] = m;
  };
  for (int j = split; j < n; j += 2 * splits) {
    const int pb0 = 8 * list[j];
    if (pb0 >= len) break;  // ascending: the rest lie past the row too
    const int j1 = j + splits;
    const int pb1 = j1 < n ? 8 * list[j1] : len;
    const float s0 = generic_score(ga, r, kcol + pb0);
    if (pb1 < len) put(pb1, generic_score(ga, r, kcol + pb1));
    put(pb0, s0);
  }
}

}  // namespace dsa::gpu
