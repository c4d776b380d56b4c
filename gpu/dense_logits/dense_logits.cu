#include "gpu/common/check.cuh"
#include "gpu/common/cp_async.cuh"
#include "gpu/common/fp4_mma.cuh"
#include "gpu/dense_logits/dense_common.cuh"
#include "gpu/dense_logits/dense_logits.cuh"

namespace dsa::gpu {
namespace {

// Positions staged per step, double-buffered through cp.async: 128 measured 156.7 ms on
// chunk-256k, 64 measured 160.0 ms (device run 13; single-buffered 64: 170.5 ms).
constexpr int kTileP = 128;
constexpr int kChunkP = 2048;  // positions per block

// Keys of one step: kTileP positions staged by the whole block (shared by its rows).
struct KeyStage {
  int8_t ks[kTileP * kKeyStride];
  float scale[kTileP];
};

// Starts copying the keys of positions pt.. (< p1) into st; one commit group per thread.
__device__ __forceinline__ void stage_keys(KeyStage& st, const DenseLogitsArgs& a, int64_t kcol, int pt, int p1) {
  for (int i = threadIdx.x; i < kTileP * 8; i += blockDim.x) {
    const int pos = i >> 3, part = i & 7;
    int8_t* dst = st.ks + pos * kKeyStride + part * 16;
    if (pt + pos < p1)
      cp_async16(dst, a.ks + (kcol + pt + pos) * 128 + part * 16);
    else
      *reinterpret_cast<uint4*>(dst) = make_uint4(0, 0, 0, 0);
  }
  // Positions past p1 read no raw keys: the staged scale 1.0 keeps them on the fast path unless
  // a real position of the tile needs the generic one; then clamp to valid columns.
  if (threadIdx.x < kTileP) {
    const int pos = pt + threadIdx.x;
    if (pos < p1)
      cp_async4(&st.scale[threadIdx.x], a.kscale + kcol + pos);
    else
      st.scale[threadIdx.x] = 1.0f;
  }
  cp_async_commit();
}

// An 8-position tile off the fast path (a key, or the whole row): the generic route.
__device__ __noinline__ void tile_generic(const DenseLogitsArgs& a, int row, int64_t kcol, int pb, int L, float* out) {
  const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
  const GenericRowArgs ga{a.qr, a.qexp, a.qscale, a.weights, a.kr, a.kexp};
  const float score = generic_score(ga, row, kcol + pb);
  const int p = pb + 2 * t + g;
  if (lane < 8 && p < L) out[p] = score;
}

// One block: up to 8 rows of one request (a warp each; tile_rows[first..first+count)) x kChunkP positions, keys staged once per
// step for all of them. Each row takes fp4_mma.cuh's split route when the query prep admitted
// it (nearly all rows), else four accumulators with integer multipliers or the generic route.
template <int kMinBlocks>
__global__ void __launch_bounds__(256, kMinBlocks) dense_logits_kernel(DenseLogitsArgs a) {
  __shared__ __align__(16) KeyStage stages[2];  // the next step's keys load during this step's math
  const int tile = blockIdx.y;
  const int first = a.tile_first[tile], count = a.tile_count[tile];
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
  int lmax = 0;
  for (int i = 0; i < count; ++i) lmax = max(lmax, a.sel_len[a.tile_rows[first + i]]);
  const int p0 = blockIdx.x * kChunkP;
  if (p0 >= lmax) return;
  const int p1 = min(p0 + kChunkP, lmax);
  const int64_t kcol = a.sel_kcol[a.tile_rows[first]];
  const bool active = warp < count;
  const int row = a.tile_rows[first + (active ? warp : 0)];
  const int L = active ? a.sel_len[row] : 0;
  const bool split = a.row_split[row] == 1;  // 2 + g: the sparse wgmma kernel's doubled-group rows

  QueryFrags q;
  if (split)
    load_query_split(q, a.qsplit + int64_t(row) * 4096, a.qmul + int64_t(row) * 32, a.qscale + int64_t(row) * 32);
  else
    load_query(q, a.qr + int64_t(row) * 4096, a.qexp + int64_t(row) * 32, a.qscale + int64_t(row) * 32,
               a.row_fast[row]);
  float wl[8];
#pragma unroll
  for (int j = 0; j < 8; ++j) wl[j] = a.weights[int64_t(row) * 32 + (g >> 1) + 4 * j];
  float* out = a.out + int64_t(row - a.row0) * a.ld;

  stage_keys(stages[0], a, kcol, p0, p1);
  for (int pt = p0, step = 0; pt < p1; pt += kTileP, ++step) {
    if (pt + kTileP < p1)
      stage_keys(stages[(step + 1) & 1], a, kcol, pt + kTileP, p1);
    else
      cp_async_commit();  // an empty group keeps the count
    cp_async_wait<1>();
    __syncthreads();  // every thread's copies of this step have landed
    const KeyStage& st = stages[step & 1];
    for (int nt = 0; active && nt < kTileP / 8; ++nt) {
      const int pb = pt + nt * 8;
      if (pb >= L) break;
      const float sk0 = st.scale[nt * 8 + 2 * t], sk1 = st.scale[nt * 8 + 2 * t + 1];
      if (!__all_sync(0xFFFFFFFFu, q.fast && sk0 != 0.0f && sk1 != 0.0f)) {
        tile_generic(a, row, kcol, pb, L, out);
        continue;
      }
      uint32_t b[4][2];
      load_b_frags(b, st.ks + nt * 8 * kKeyStride);
      float s[4][2];
      if (split)
        head_scores_split(q, b, sk0, sk1, s);
      else
        head_scores_fast4(q, b, sk0, sk1, s);
      const float score = dense_epilogue(s, wl);
      const int p = pb + 2 * t + g;
      if (lane < 8 && p < L) out[p] = score;
    }
    __syncthreads();  // nobody still reads this buffer when the step after next refills it
  }
}

}  // namespace

void launch_dense_logits(const DenseLogitsArgs& a) {
  if (a.ntiles == 0 || a.max_len == 0) return;
  dim3 grid((a.max_len + kChunkP - 1) / kChunkP, a.ntiles);
  // Two blocks per SM (128 registers, a few spilled bytes) measured 170.3 ms on chunk-256k; one
  // block (193 registers, no spills) 261.5 ms (device run 3).
  dense_logits_kernel<2><<<grid, 256>>>(a);
  DSA_LAUNCH_CHECK("dense_logits_kernel");
}

}  // namespace dsa::gpu
