#pragma once
// The mma.sync routes of the paged sparse logits, one warp a table row (or a run of its blocks):
// what sparse_logits.cu's kernels run, and the wgmma kernel's extra blocks for the other rows of
// a small batch (sparse_wgmma.cu).
#include <algorithm>
#include <cstdint>

#include "gpu/common/bf16.cuh"
#include "gpu/common/check.cuh"
#include "gpu/common/cp_async.cuh"
#include "gpu/common/fp4_mma.cuh"
#include "gpu/sparse_logits/row_job.cuh"
#include "gpu/sparse_logits/sparse_logits.cuh"
#include "gpu/sparse_logits/sparse_slow.cuh"
#include "core/constants.hpp"

// The portable kernels (mma.sync; the split rows take sparse_wgmma.cu where the device has
// wgmma). One warp scores one table row, 2048 blocks of 8 candidates, 32 heads each; or a run of
// its blocks, when the rows are too few to fill the device (slice_row_job, row_parts).
//
// Fast route (keys and query on the fast path of fp4_mma.cuh, nearly all data): the 8 keys of a
// block come as ready int8 B fragments (launch_key_blocks: 2 x 16 bytes per lane, no page
// lookup, no decoding), six blocks in flight. Head scores come from fp4_mma.cuh's split route
// (two accumulators, two IMAD, no int->float conversion) where the query prep admitted the row,
// else from four accumulators with integer multipliers, converted through the float bits of
// 2^23 + S when the multipliers keep S below 2^23, or with I2F. The bf16 chain runs on the
// hardware's own single-rounding instructions: cvt.rn.relu.bf16x2 (a_h, two positions per
// instruction) and fma.rn.bf16x2 (the lanes of the chain, two positions per instruction).
//
// Slow route (anything else): the block's keys read through the page table, decoded, staged in
// shared memory, head scores from fp4_mma.cuh's generic path, and the emulated bf16 chain.
namespace dsa::gpu::sparse_mma {
using namespace sparse_slow;

constexpr int kWarps = 4;
constexpr int kDepth = 8;              // key tiles in flight per warp (shared-memory ring; a power of two)
constexpr int kSplitBlocksPerSm = 4;   // 16 warps per SM: 128 registers for the split route
constexpr int kOtherBlocksPerSm = 3;     // the other routes need 161 registers: 12 warps per SM
constexpr int kMagicMulSum = 227;      // 12 * 96 * 32 * 227 < 2^23: the float-bits conversion is exact

// One warp's shared memory: the blocks the fast route leaves to the slow one, the slow staging.
struct WarpSmem {
  uint32_t slow_blocks[kTopkBlocks / 32];
  SlowSmem slow;
};

// ---------------------------------------------------------------- fast route
// A block's keys as this lane's B fragments (key g, dims 4t.. of each 16-byte half of each
// group: see launch_sparse_key_frags) and the scale of key g, in a per-warp ring of shared
// memory filled by cp.async: kDepth blocks in flight cost no registers. Each lane reads back only
// what it copied itself, so the ring needs no barrier. The copies go through L1 (.ca): the rows
// of one block share many key blocks (ncu: 60% L1 hits with cached loads, 5% with .cg).
struct TileSlot {
  uint4 frag[32][2];
  float scale[32];
};

// How a fast row turns group sums into head scores (fp4_mma.cuh): the split route, or four
// accumulators with integer multipliers converted through the float bits of 2^23 + S (when the
// multipliers keep S below 2^23) or with I2F.
enum class Route { split, magic4, i2f4 };

struct FastRow {
  uint32_t w2[4];  // bf16(weight) of head_of(g, i), twice
};

template <Route kRoute, class Q>
__device__ __forceinline__ void head_scores_fast(const Q& q, const uint32_t (&b)[4][2], float sk0, float sk1,
                                                 float (&s)[4][2]) {
  if constexpr (kRoute == Route::split)
    head_scores_split(q, b, sk0, sk1, s);
  else
    head_scores_fast4<kRoute == Route::magic4>(q, b, sk0, sk1, s);
}

// The bf16 scores of one block's 8 positions, packed in pairs: lanes with g == 1 end up with
// positions 2t (low half) and 2t+1 (high half).
template <Route kRoute, class Q>
__device__ __forceinline__ uint32_t block_scores(const Q& q, const FastRow& r, uint4 lo, uint4 hi, float sk0,
                                                 float sk1) {
  const int g = (threadIdx.x & 31) >> 2;
  const uint32_t b[4][2] = {{lo.x, lo.y}, {lo.z, lo.w}, {hi.x, hi.y}, {hi.z, hi.w}};
  float s[4][2];
  head_scores_fast<kRoute>(q, b, sk0, sk1, s);
  // The chain of lane l = g/2 for positions 2t (low half) and 2t+1 (high half): steps 0..3
  // (heads l+4i) sit in even groups, steps 4..7 (heads l+16+4i) in odd ones.
  uint32_t av[4];
#pragma unroll
  for (int i = 0; i < 4; ++i) av[i] = hw_relu_bf16x2(s[i][0], s[i][1]);
  const bool odd = g & 1;
  uint32_t acc = 0;  // +0, +0
  if (!odd) {
#pragma unroll
    for (int i = 0; i < 4; ++i) acc = hw_fma_bf16x2(av[i], r.w2[i], acc);
  }
  const uint32_t half = __shfl_xor_sync(0xFFFFFFFFu, acc, 4);
  if (odd) {
    acc = half;
#pragma unroll
    for (int i = 0; i < 4; ++i) acc = hw_fma_bf16x2(av[i], r.w2[i], acc);
  }
  acc = hw_fma_bf16x2(acc, kBf16x2One, __shfl_xor_sync(0xFFFFFFFFu, acc, 16));  // lanes 0+2, 1+3
  return hw_fma_bf16x2(acc, kBf16x2One, __shfl_xor_sync(0xFFFFFFFFu, acc, 8));   // (0+2) + (1+3)
}

// Writes block_scores' result for columns c0.. (those below valid).
__device__ __forceinline__ void store_scores(uint32_t acc, int c0, int valid, uint16_t* out) {
  const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
  if (g == 1) {
    const int c = c0 + 2 * t;
    if (c + 1 < valid)
      *reinterpret_cast<uint32_t*>(out + c) = acc;
    else if (c < valid)
      out[c] = uint16_t(acc & 0xFFFFu);
  }
}

// Where a warp's lane copies a block's key fragments and scale from, and to, worked out once per
// row (ncu: per-block address arithmetic, ring indexing by 6 and generic-to-shared conversions
// were a third of the loop's instructions). Block blk of the row's request starts blk * 1024
// bytes and its scales blk * 8 floats further; ring slot j sits at ring + (j % kDepth) *
// sizeof(TileSlot).
struct TileCopy {
  const int8_t* frag;   // block 0, this lane's first 16 bytes (the second: 512 further)
  const float* scale;   // scale of key g of block 0
  unsigned ring;        // this lane's fragment bytes in slot 0
  unsigned ring_scale;  // this lane's scale in slot 0
};

__device__ __forceinline__ TileCopy tile_copy(const SparseLogitsArgs& a, int64_t kblk, TileSlot* ring) {
  const int lane = threadIdx.x & 31, g = lane >> 2;
  TileCopy c;
  c.frag = a.kbfrag + kblk * kKeyBlockBytes + lane * 16;
  c.scale = a.kbscale + kblk * 8 + g;
  c.ring = smem_addr(&ring[0].frag[lane][0]);
  c.ring_scale = smem_addr(&ring[0].scale[lane]);
  return c;
}

// Starts copying block `blk` (or nothing, for blk < 0) into ring slot j; always one commit group.
__device__ __forceinline__ void request_tile(const TileCopy& c, int j, int blk) {
  const unsigned slot = unsigned(j & (kDepth - 1)) * unsigned(sizeof(TileSlot));
  if (blk >= 0) {
    const int8_t* src = c.frag + blk * kKeyBlockBytes;
    cp_async16(c.ring + slot, src);
    cp_async16(c.ring + slot + 16, src + kKeyBlockBytes / 2);
    cp_async4(c.ring_scale + slot, c.scale + blk * 8);
  }
  cp_async_commit();
}

template <Route kRoute, class Q>
__device__ __forceinline__ void score_row_fast(const SparseLogitsArgs& a, const SparseRowJob& job, const Q& q,
                                               const float (&wb)[8], WarpSmem& sm, TileSlot* ring) {
  static_assert((kDepth & (kDepth - 1)) == 0, "ring slots by mask");
  const int lane = threadIdx.x & 31, g = lane >> 2;
  FastRow r;
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const uint32_t w = __float_as_uint(wb[(g & 1) * 4 + i]) >> 16;
    r.w2[i] = w | (w << 16);
  }
  const int nb = job.nb, valid = job.valid;
  const int32_t* blocks = job.blocks;
  uint16_t* out = job.out;
  sm.slow_blocks[lane] = 0;
  sm.slow_blocks[lane + 32] = 0;
  __syncwarp();
  const TileCopy tc = tile_copy(a, job.kblk, ring);
  // Block ids 32 at a time, one per lane; the next window is loaded a window ahead.
  int win = lane < nb ? blocks[lane] : 0;
  int next_win = 32 + lane < nb ? blocks[32 + lane] : 0;
  auto request = [&](int j) {  // block j (in order)
    int blk = -1;
    if (j < nb) {
      if (j > 0 && (j & 31) == 0) {
        win = next_win;
        next_win = j + 32 + lane < nb ? blocks[j + 32 + lane] : 0;
      }
      blk = __shfl_sync(0xFFFFFFFFu, win, j & 31);
    }
    request_tile(tc, j, blk);
  };
  // One block: scored now when its keys are all fast, else left for the slow route (no call in
  // this loop: it would spill).
  auto one = [&](int bi, uint4 lo, uint4 hi, float scale, bool fast) {
    if (fast) {
      const float sk0 = __shfl_sync(0xFFFFFFFFu, scale, 8 * (lane & 3));
      const float sk1 = __shfl_sync(0xFFFFFFFFu, scale, 8 * (lane & 3) + 4);
      store_scores(block_scores<kRoute>(q, r, lo, hi, sk0, sk1), bi * 8, valid, out);
    } else if (lane == 0) {
      sm.slow_blocks[bi >> 5] |= 1u << (bi & 31);
    }
  };
  // Two blocks an iteration: their dependent chains (mma, conversion, bf16 chain, shuffles)
  // interleave, which one warp's single chain could not (ncu: fixed-latency stalls, not issue,
  // bounded this loop). The ring holds kDepth - 2 blocks ahead of the pair being scored.
  constexpr int kAhead = kDepth - 2;
#pragma unroll
  for (int s = 0; s < kAhead; ++s) request(s);
  for (int bi = 0; bi < nb; bi += 2) {
    request(bi + kAhead);      // into the slots of the pair scored last iteration
    request(bi + kAhead + 1);
    cp_async_wait<kAhead>();   // blocks bi and bi + 1 have landed (groups complete in order)
    const unsigned s0 = unsigned(bi & (kDepth - 1)) * unsigned(sizeof(TileSlot));
    const unsigned s1 = unsigned((bi + 1) & (kDepth - 1)) * unsigned(sizeof(TileSlot));
    const bool has1 = bi + 1 < nb;
    const uint4 lo0 = lds128(tc.ring + s0), hi0 = lds128(tc.ring + s0 + 16);
    const float sc0 = lds32f(tc.ring_scale + s0);
    uint4 lo1 = lo0, hi1 = hi0;
    float sc1 = 0.0f;
    if (has1) lo1 = lds128(tc.ring + s1), hi1 = lds128(tc.ring + s1 + 16), sc1 = lds32f(tc.ring_scale + s1);
    const bool fast0 = __all_sync(0xFFFFFFFFu, sc0 != 0.0f), fast1 = __all_sync(0xFFFFFFFFu, sc1 != 0.0f);
    if (fast0 && fast1 && (bi + 2) * 8 <= valid) {  // the common case: two full fast blocks
      const int src0 = 8 * (lane & 3), src1 = src0 + 4;
      const uint32_t a0 = block_scores<kRoute>(q, r, lo0, hi0, __shfl_sync(0xFFFFFFFFu, sc0, src0),
                                               __shfl_sync(0xFFFFFFFFu, sc0, src1));
      const uint32_t a1 = block_scores<kRoute>(q, r, lo1, hi1, __shfl_sync(0xFFFFFFFFu, sc1, src0),
                                               __shfl_sync(0xFFFFFFFFu, sc1, src1));
      if (g == 1) {
        uint32_t* o = reinterpret_cast<uint32_t*>(out + bi * 8 + 2 * (lane & 3));
        o[0] = a0;
        o[4] = a1;  // 8 columns further
      }
    } else {
      one(bi, lo0, hi0, sc0, fast0);
      if (has1) one(bi + 1, lo1, hi1, sc1, fast1);
    }
  }
  cp_async_wait<0>();
  __syncwarp();
  score_slow_blocks(a, job, sm.slow_blocks, 0xFFFFFFFFu, sm.slow);
}

// One part of a split-route row (sparse_split_kernel's warps).
__device__ __forceinline__ void score_split_part(const SparseLogitsArgs& a, const SparseRowJob& j, WarpSmem& sm,
                                                 TileSlot* ring) {
  QueryFrags q;
  load_query_split(q, a.qsplit + int64_t(j.row) * 4096, a.qmul + int64_t(j.row) * 32, a.qscale + int64_t(j.row) * 32);
  float wb[8];
  load_weights(a, j.row, wb);
  score_row_fast<Route::split>(a, j, q, wb, sm, ring);
}

// One part of another row: four accumulators (float-bits or I2F conversion), or the slow route.
__device__ __forceinline__ void score_other_part(const SparseLogitsArgs& a, const SparseRowJob& j, WarpSmem& sm,
                                                 TileSlot* ring) {
  QueryFrags q;
  float wb[8];
  load_row(a, j.row, q, wb);
  if (q.fast) {
    // The float-bits conversion needs every head's sum of group multipliers bounded.
    bool magic = true;
#pragma unroll
    for (int h = 0; h < 4; ++h) magic &= q.mul[h][0] + q.mul[h][1] + q.mul[h][2] + q.mul[h][3] <= kMagicMulSum;
    if (__all_sync(0xFFFFFFFFu, magic))
      score_row_fast<Route::magic4>(a, j, q, wb, sm, ring);
    else
      score_row_fast<Route::i2f4>(a, j, q, wb, sm, ring);
    return;
  }
  score_row_slow(a, j, sm.slow);
}

// Warp w's job: part w % parts of route-order slot first + w / parts (false: none).
__device__ __forceinline__ bool warp_job(const SparseLogitsArgs& a, int first, int rows, int parts, int w,
                                         SparseRowJob& j) {
  if (w >= rows * parts) return false;
  j = sparse_row_job(a, a.order[first + w / parts]);
  return slice_row_job(j, w % parts, parts);
}

// Warps a row of the mma.sync kernels is split among: one warp walking a row's 2048 blocks alone
// takes about 0.5 ms (decode's layers with an other row: 0.64 ms against 0.11, run 92), which is
// the kernel's time whenever its rows are fewer than the device's warp slots (a dozen rows a
// chunk-256k layer since the doubled group). Enough parts to fill the device once, at most 32
// (64 blocks a warp); one when the rows alone fill it.
inline int row_parts(int rows, int blocks_per_sm) {
  const int slots = current_device_sms() * blocks_per_sm * kWarps;
  return std::clamp((slots + rows - 1) / rows, 1, 32);
}

}  // namespace dsa::gpu::sparse_mma
