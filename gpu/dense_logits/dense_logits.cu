#include "gpu/common/check.cuh"
#include "gpu/common/fp4_mma.cuh"
#include "gpu/dense_logits/dense_logits.cuh"

namespace dsa::gpu {
namespace {

constexpr int kTileP = 64;     // positions staged per step
constexpr int kChunkP = 2048;  // positions per block

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

__global__ void __launch_bounds__(256) dense_logits_kernel(DenseLogitsArgs a) {
  // Two stages: the next key tile is fetched into registers while the current one is scored.
  __shared__ __align__(16) int8_t ksm[2][kTileP * kKeyStride];
  __shared__ float kss[2][kTileP];
  const int tile = blockIdx.y;
  const int first = a.tile_first[tile], count = a.tile_count[tile];
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
  int lmax = 0;
  for (int i = 0; i < count; ++i) lmax = max(lmax, a.sel_len[first + i]);
  const int p0 = blockIdx.x * kChunkP;
  if (p0 >= lmax) return;
  const int p1 = min(p0 + kChunkP, lmax);
  const int64_t kcol = a.sel_kcol[first];
  const bool active = warp < count;
  const int row = first + (active ? warp : 0);
  const int L = active ? a.sel_len[row] : 0;

  QueryFrags q;
  load_query(q, a.qr + int64_t(row) * 4096, a.qexp + int64_t(row) * 32, a.qscale + int64_t(row) * 32,
             a.row_fast[row]);
  float wl[8];
#pragma unroll
  for (int j = 0; j < 8; ++j) wl[j] = a.weights[int64_t(row) * 32 + (g >> 1) + 4 * j];
  float* out = a.out + int64_t(row) * a.ld;

  // Each of the 256 threads stages 2 of the tile's 512 16-byte pieces (and one scale).
  uint4 pre[2];
  float pre_scale = 1.0f;
  auto fetch = [&](int pt) {
#pragma unroll
    for (int j = 0; j < 2; ++j) {
      const int i = threadIdx.x + j * 256, pos = i >> 3, part = i & 7;
      pre[j] = pt + pos < p1 ? *reinterpret_cast<const uint4*>(a.ks + (kcol + pt + pos) * 128 + part * 16)
                             : make_uint4(0, 0, 0, 0);
    }
    if (threadIdx.x < kTileP) pre_scale = pt + int(threadIdx.x) < p1 ? a.kscale[kcol + pt + threadIdx.x] : 1.0f;
  };
  auto stash = [&](int buf) {
#pragma unroll
    for (int j = 0; j < 2; ++j) {
      const int i = threadIdx.x + j * 256, pos = i >> 3, part = i & 7;
      *reinterpret_cast<uint4*>(ksm[buf] + pos * kKeyStride + part * 16) = pre[j];
    }
    if (threadIdx.x < kTileP) kss[buf][threadIdx.x] = pre_scale;
  };
  fetch(p0);
  stash(0);
  __syncthreads();
  int buf = 0;
  for (int pt = p0; pt < p1; pt += kTileP) {
    const bool more = pt + kTileP < p1;
    if (more) fetch(pt + kTileP);
    if (active) {
      for (int nt = 0; nt < kTileP / 8; ++nt) {
        const int pb = pt + nt * 8;
        if (pb >= L) break;
        float s[4][2];
        // Positions past p1 are staged as zero keys with scale 1.0 (fast path, never written);
        // the generic path reads raw keys of up to 8 columns past them (spare columns exist).
        head_scores(q, ksm[buf] + nt * 8 * kKeyStride, kss[buf] + nt * 8, a.kr + (kcol + pb) * 128, 128,
                    a.kexp + kcol + pb, s);
        const float score = dense_epilogue(s, wl);
        const int p = pb + 2 * t + g;
        if (lane < 8 && p < L) out[p] = score;
      }
    }
    if (more) stash(buf ^ 1);  // buf ^ 1 was last read before the previous barrier
    __syncthreads();
    buf ^= 1;
  }
}

}  // namespace

void launch_dense_logits(const DenseLogitsArgs& a) {
  if (a.ntiles == 0 || a.max_len == 0) return;
  dim3 grid((a.max_len + kChunkP - 1) / kChunkP, a.ntiles);
  dense_logits_kernel<<<grid, 256>>>(a);
  DSA_LAUNCH_CHECK("dense_logits_kernel");
}

}  // namespace dsa::gpu
