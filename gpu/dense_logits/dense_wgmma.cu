#include <cuda_runtime.h>

#include "core/constants.hpp"
#include "gpu/common/check.cuh"
#include "gpu/common/order.cuh"
#include "gpu/common/wgmma_device.cuh"
#include "gpu/common/wgmma_operands.cuh"
#include "gpu/common/cp_async.cuh"
#include "gpu/common/swizzle.cuh"
#include "gpu/dense_logits/dense_wgmma.cuh"
#include "gpu/dense_logits/wide_keys.cuh"
#include "gpu/prep/key_blocks.cuh"

namespace dsa::gpu {
namespace {

[[maybe_unused]] constexpr int kKeys = 64;      // M: key positions per step (8 key blocks, 2 a warp)
// Positions per block: fewer prologues (runs 81-83: 2048, 4096, 8192, 16384: 49.7, 48.7, 47.7, 48.5 ms).
constexpr int kChunk = 8192;
constexpr int kCols = kWgmmaTileRows * 32;
constexpr int kRowPad = 36;
// Weight vectors (float4) of the epilogue loaded before the step's last wgmma wait, off the
// epilogue's path: two fit in 128 registers (four spill 8 bytes and ran 4 % slower, run 109).
[[maybe_unused]] constexpr int kEarlyWeights = 2;

// B (the queries) in shared memory in wgmma's 128-byte swizzled K-major layout: rows of 128
// bytes (the whole K), 16-byte chunk c of row r stored at chunk c ^ (r & 7), 8-row atoms of 1024
// bytes (stride byte offset), 1024-aligned; a k32 step starts 32 bytes further. A (the keys) comes
// from registers, loaded by each warp straight from the key block records (kKeyBlockBytes): with
// both operands in shared memory, plus the copies that staged the keys, ncu measured L1/TEX 86 %
// busy (run 71), the kernel's limit.
struct __align__(1024) WgmmaSmem {
  int8_t q[kCols * 128];           // B: column n = 8 j + 2 t + par holds head 2 j + par of row t
  // [row][head], rows 36 words apart: the four rows' 16-byte reads of one warp instruction
  // fall in different banks.
  float w[kWgmmaTileRows][kRowPad];       // w''
  int mul[3][kWgmmaTileRows][kRowPad];    // [point]: 2^m before position point + 1's k-step
  // The exponents m before group 3 (point 2), four a word: head h in byte h % 4 of word h / 4.
  uint32_t mexp[kWgmmaTileRows][8];
};

#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define DSA_WGMMA 1

__device__ __forceinline__ uint64_t smem_desc(const void* p) {
  const uint32_t a = unsigned(__cvta_generic_to_shared(p));
  return uint64_t((a & 0x3FFFF) >> 4) | (uint64_t(1024 >> 4) << 32) | (uint64_t(1) << 62);  // 128B swizzle
}
__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory"); }
__device__ __forceinline__ void wgmma_wait() { asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory"); }
// Pins the accumulators around the asynchronous region so no access moves across it.
__device__ __forceinline__ void pin(int (&d)[64]) {
#pragma unroll
  for (int i = 0; i < 64; ++i) asm volatile("" : "+r"(d[i])::"memory");
}
// Shared memory written by threads (cp.async, st.shared), read next by wgmma (the async proxy).
__device__ __forceinline__ void fence_proxy_async() { asm volatile("fence.proxy.async.shared::cta;" ::: "memory"); }

// d (+)= A B for one 32-dim k-step: A = this warp's 16 keys (registers), B = the 128 columns.
__device__ __forceinline__ void wgmma_s8(int (&d)[64], const uint32_t (&a)[4], uint64_t db, int scale_d) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %69, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128k32.s32.s8.s8 " DSA_WGMMA_D64_LIST ", {%64, %65, %66, %67}, %68, p;\n}\n"
      : DSA_WGMMA_D64(d)
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(scale_d));
}

// The block's Horner plan: its k-step order (shared by its rows) and its mode: 0 when no head
// multiplies, 1 when heads multiply only before group 3 (group 3 far below the others: the common
// case), 3 when they do and each row's heads all by one 2^K (kUniformClass), 2 when some head
// multiplies before position 1 or 2.
struct TilePlan {
  int mode, order;
};

// The query columns, weights and multipliers of the block's rows; returns the block's plan (a
// barrier for the whole block).
__device__ __forceinline__ TilePlan stage_queries(WgmmaSmem& sm, const DenseWgmmaArgs& a, const int (&rows)[kWgmmaTileRows]) {
  for (int i = threadIdx.x; i < kCols * 8; i += 128) {
    const int n = i >> 3, c = i & 7;
    const int r = (n >> 1) & 3, head = 2 * (n >> 3) + (n & 1);
    int8_t* dst = sm.q + swizzled_offset(n, c);
    if (rows[r] >= 0)
      cp_async16(dst, a.qw + (int64_t(rows[r]) * 32 + head) * 128 + c * 16);
    else
      *reinterpret_cast<uint4*>(dst) = make_uint4(0, 0, 0, 0);
  }
  const int r = threadIdx.x >> 5, h = threadIdx.x & 31;
  float w = 0.0f;
  int m = 0;  // the head's packed multiplier exponents
  if (rows[r] >= 0) {
    w = a.qw_weight[int64_t(rows[r]) * 32 + h];
    m = a.qw_mul[int64_t(rows[r]) * 32 + h];
  }
  sm.w[r][h] = w;
#pragma unroll
  for (int p = 0; p < 3; ++p) sm.mul[p][r][h] = 1 << multiplier_exponent(m, p);
  const int m3 = multiplier_exponent(m, 2);
  reinterpret_cast<uint8_t*>(sm.mexp[r])[h] = uint8_t(m3);
  // Warp r stages row r, a lane a head: the row's heads share one multiplier when every lane's
  // equals lane 0's (an empty row's are all 0).
  const bool one_per_row = __all_sync(0xFFFFFFFFu, m3 == __shfl_sync(0xFFFFFFFFu, m3, 0));
  const bool early = __syncthreads_or(multiplies_early(m)) != 0;
  const bool late = __syncthreads_or(multiplies(m)) != 0;
  const bool uniform = __syncthreads_and(one_per_row) != 0;
  return {early ? 2 : late ? (uniform ? 3 : 1) : 0, plan_order(a.qw_mul[int64_t(rows[0]) * 32])};
}

// Accumulator d[4 j + e] holds A row g + 8 (e >> 1), i.e. key 16 warp + 2 g + (e >> 1) of the
// step (Lane), and column 8 j + 2 t + (e & 1): row t, head 2 j + (e & 1). So lane (g, t) holds all
// 32 heads of row t for two keys, and the whole score of each (no shuffles): head h of key `key`
// is d[acc(h, key)].
__device__ __forceinline__ constexpr int acc(int h, int key) { return 4 * (h >> 1) + 2 * key + (h & 1); }

__device__ __forceinline__ void apply_mul(int (&d)[64], const WgmmaSmem& sm, int point, int t) {
  const int4* m4 = reinterpret_cast<const int4*>(sm.mul[point][t]);
#pragma unroll
  for (int c = 0; c < 8; ++c) {
    const int4 m = m4[c];
    const int mk[4] = {m.x, m.y, m.z, m.w};
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      d[acc(4 * c + i, 0)] *= mk[i];
      d[acc(4 * c + i, 1)] *= mk[i];
    }
  }
}

// 2^(amt & 31): the funnel shift reads only the amount's low five bits, so a packed word's low
// byte needs no mask.
__device__ __forceinline__ int pow2_low5(uint32_t amt) {
  int r;
  asm("shf.l.wrap.b32 %0, %1, %2, %3;" : "=r"(r) : "r"(0), "r"(1), "r"(amt));
  return r;
}

// The multiply before group 3 by the packed exponents (mx: sm.mexp[t], held in 8 registers for
// the whole block): no shared loads in the step, where the 32 multipliers of apply_mul cost 8
// LDS.128 whose latency the multiply waited for (run 107's profile: the L1/shared pipe 87 % busy,
// short scoreboard 32 % of the stalls; runs 108-109: 45.7-45.8 ms against 46.5-46.8). Each head's
// 2^m is one funnel shift and its two cells multiply with IMAD, on the FMA pipe: shifting the
// cells themselves put 64 more instructions a step on the half-rate integer pipe, which run 110's
// profile found the busiest (run 112: 44.1 ms against 45.5).
__device__ __forceinline__ void apply_exponents(int (&d)[64], const uint32_t (&mx)[8]) {
#pragma unroll
  for (int c = 0; c < 8; ++c)
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const uint32_t amt = i == 0 ? mx[c] : mx[c] >> (8 * i);
      const int mul = pow2_low5(amt);
      d[acc(4 * c + i, 0)] *= mul;
      d[acc(4 * c + i, 1)] *= mul;
    }
}

// relu(S) as the float x = S * 2^-149 and the reference's sum over heads with the pre-scaled
// weights: four chains a_c over heads c + 4 k (k ascending), then (a0 + a2) + (a1 + a3).
__device__ __forceinline__ void scores(const int (&d)[64], const float4 (&early)[kEarlyWeights], const WgmmaSmem& sm,
                                       float (&res)[2]) {
  const float4* w4 = reinterpret_cast<const float4*>(sm.w[threadIdx.x & 3]);
  float a[2][4] = {};
#pragma unroll
  for (int k = 0; k < 8; ++k) {
    const float4 w = k < kEarlyWeights ? early[k] : w4[k];
    const float wk[4] = {w.x, w.y, w.z, w.w};
#pragma unroll
    for (int key = 0; key < 2; ++key)
#pragma unroll
      for (int c = 0; c < 4; ++c)
        a[key][c] = __fmaf_rn(__int_as_float(max(d[acc(4 * k + c, key)], 0)), wk[c], a[key][c]);
  }
#pragma unroll
  for (int key = 0; key < 2; ++key) res[key] = __fadd_rn(__fadd_rn(a[key][0], a[key][2]), __fadd_rn(a[key][1], a[key][3]));
}

// The block's rows and positions.
struct BlockRows {
  int tile;
  int rows[kWgmmaTileRows];
  int p0, p1;
  int64_t blk0;  // the key block record of position p0
};

// Lane (g, t)'s keys of one step (keys 2p and 2p + 1 of record 2 warp + g / 4, see Lane): one
// 16-byte load per k-step group, and the two keys' scales.
struct StepKeys {
  uint4 frag[4];  // [k-step group]: wgmma's A fragment as it is (launch_key_blocks' kdfrag)
  float scale[2];
};

// Lane (g, t)'s walk through the block, as offsets from the block's start so the loop does
// 32-bit arithmetic. The lane feeds wgmma's A rows g and g + 8 with keys 2p and 2p + 1 (p = g % 4)
// of the warp's record 2 warp + g / 4, so its two keys are adjacent positions 16 warp + 2 g and
// + 1 of the step (one 8-byte store), and a key block's 8 keys sit in the 4 lanes g = 4 (g / 4) ..
// of one t (block amax in two shuffles).
struct Lane {
  const uint4* frag;   // this lane's record of step 0, its slot of k-step group 0
  const float* scale;  // the same record's scale of key 2p
  float* out;          // row t, position p0 + 16 warp + 2 g
  int lim;             // step offset + key < lim: a position of the row
  int shift;
  unsigned keys;       // block amax: row t's key of the lane's record of step 0, from a.keys
  float bound;         // stores skipped: a block's scores are stored when its key reaches this
};

// The float of a bound (an order_f32 bin edge): keys at or above it are the keys whose order
// reaches it; the edges of the lowest bins (below every finite float) are -inf.
__device__ __forceinline__ float unorder_bound(uint32_t o) {
  if (o < 0x00800000u) return __int_as_float(0xFF800000);
  return __uint_as_float(o & 0x80000000u ? o ^ 0x80000000u : ~o);
}

__device__ __forceinline__ Lane lane_walk(const DenseWgmmaArgs& a, const BlockRows& b) {
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
  const int row = a.tile_rows[b.tile * kWgmmaTileRows + t];  // not b.rows[t]: a register array
  const int first = b.p0 + 16 * warp + 2 * g;
  const int64_t out_row = row >= 0 ? row - a.row0 : 0;
  const int64_t rec = b.blk0 + 2 * warp + (g >> 2);
  Lane l;
  l.frag = reinterpret_cast<const uint4*>(a.kdfrag + rec * kKeyBlockBytes) + pair_slot(g & 3, t);
  l.scale = a.kbscale + rec * 8 + 2 * (g & 3);
  l.out = a.out + out_row * a.ld + first;
  l.lim = (row >= 0 ? a.sel_len[row] : 0) - first;
  l.shift = row >= 0 ? a.qw_shift[row] : 0;
  l.keys = unsigned(out_row * a.ld_keys + b.p0 / 8 + 2 * warp + (g >> 2));  // keys_ < 2^32 floats (engine)
  l.bound = a.skip != nullptr && row >= 0 ? unorder_bound(__ldcg(a.skip + out_row * kSkipWords + kSkipBins))
                                          : __int_as_float(0xFF800000);
  return l;
}

// Loads step s's keys. Steps past the block's end read records past it (kKeyBlockPad covers the
// end of the last request), and their scores are never stored.
__device__ __forceinline__ void load_keys(StepKeys& k, const Lane& l, int s) {
  const unsigned r = unsigned(s) * (kKeys / 8);
#pragma unroll
  for (int gr = 0; gr < 4; ++gr) k.frag[gr] = __ldg(l.frag + r * (kKeyBlockBytes / 16) + 16 * gr);
  const float2 sc = __ldg(reinterpret_cast<const float2*>(l.scale + r * 8));
  k.scale[0] = sc.x;
  k.scale[1] = sc.y;
}

// wgmma reads A's registers asynchronously: keeps them from reuse until after the wait.
__device__ __forceinline__ void keep(const StepKeys& k) {
#pragma unroll
  for (int gr = 0; gr < 4; ++gr)
    asm volatile("" ::"r"(k.frag[gr].x), "r"(k.frag[gr].y), "r"(k.frag[gr].z), "r"(k.frag[gr].w) : "memory");
}

// wgmma's A fragment of group kGroup's k-step: rows g (key 2p) and g + 8 (key 2p + 1), dims 4t..
// and 16 + 4t.. of the group's 32, as one load delivered them.
template <int kGroup>
__device__ __forceinline__ void fragment(const StepKeys& k, uint32_t (&f)[4]) {
  f[0] = k.frag[kGroup].x;
  f[1] = k.frag[kGroup].y;
  f[2] = k.frag[kGroup].z;
  f[3] = k.frag[kGroup].w;
}

// The exact epilogue of step s (accumulators d complete): the scores of the lane's two keys, then
// (kWithKeys) the block keys. Neither needs a mask: a wide key (scale 0) gets a meaningless score,
// which launch_dense_wide overwrites along with its block's key, and the only block with
// positions past the row's end is the newest, whose key is +inf.
template <int kWithKeys>
__device__ __forceinline__ void epilogue(const int (&d)[64], const float4 (&early)[kEarlyWeights], const WgmmaSmem& sm,
                                         const Lane& l, int s, const float (&scale)[2], float* keys) {
  float res[2];
  scores(d, early, sm, res);
  const int at = s * kKeys;
  float v[2];
#pragma unroll
  for (int key = 0; key < 2; ++key) v[key] = __fmul_rn(res[key], __int_as_float(__float_as_int(scale[key]) + l.shift));
  // The pair's second position may be L itself (L odd): still inside the row (ld is a multiple
  // of 8), a column that does not exist and is never read.
  const float inf = __int_as_float(0x7F800000);
  // Without skipping, the scores are stored before the keys' shuffles.
  if constexpr (kWithKeys != 2) {
    if (at < l.lim) *reinterpret_cast<float2*>(l.out + at) = make_float2(v[0], v[1]);
    if constexpr (!kWithKeys) return;
  }
  // Skipping: a wide position's score here is meaningless, so it stays out of the block key,
  // which the wide pass rewrites with the block's 8 scores (a block holding one may go unstored).
  float m = kWithKeys == 2 ? fmaxf(scale[0] != 0.0f ? v[0] : -inf, scale[1] != 0.0f ? v[1] : -inf)
                           : fmaxf(v[0], v[1]);
  m = fmaxf(m, __shfl_xor_sync(0xFFFFFFFFu, m, 4));  // the block's 8 keys: lanes g = 4 (g / 4) + 0..3
  m = fmaxf(m, __shfl_xor_sync(0xFFFFFFFFu, m, 8));
  // Skipping: the newest block (key +inf) is always stored: its lanes' positions are within 8 of
  // L (so are a few of the block before it, stored too).
  if constexpr (kWithKeys == 2)
    if (at < l.lim && (m >= l.bound || at + 8 >= l.lim)) *reinterpret_cast<float2*>(l.out + at) = make_float2(v[0], v[1]);
  // Lanes g % 4 == 0 (at = the block's first position): its key, +inf for the newest block.
  if ((threadIdx.x & 12) == 0 && at < l.lim) keys[l.keys + s * (kKeys / 8)] = l.lim <= at + 8 ? inf : m;
}

// Multiplies the accumulators in place before position point + 1's k-step: the k-steps issued so
// far must have completed.
__device__ __forceinline__ void multiply_between(int (&d)[64], const WgmmaSmem& sm, int point, int t) {
  wgmma_commit();
  wgmma_wait();
  pin(d);
  apply_mul(d, sm, point, t);
  pin(d);
  wgmma_fence();
}

// Mode 3's multiply before group 3: row t's one multiplier for all 64 accumulators (no
// per-head exponents to extract: 64 IMAD a step where apply_exponents spends 120).
__device__ __forceinline__ void multiply_uniform(int (&d)[64], int mul) {
  wgmma_commit();
  wgmma_wait();
  pin(d);
#pragma unroll
  for (int i = 0; i < 64; ++i) d[i] *= mul;
  pin(d);
  wgmma_fence();
}

// Mode 1's multiply before group 3 (the k-steps issued so far must have completed).
__device__ __forceinline__ void multiply_before_group3(int (&d)[64], uint32_t (&mx)[8]) {
  wgmma_commit();
  wgmma_wait();
  pin(d);
#pragma unroll
  for (int c = 0; c < 8; ++c) asm volatile("" : "+r"(mx[c]));  // opaque: the byte extractions stay in the step
  apply_exponents(d, mx);
  pin(d);
  wgmma_fence();
}

// The k-step at position kPos of order kOrder.
template <int kOrder, int kPos>
__device__ __forceinline__ void kstep(int (&d)[64], const StepKeys& k, uint64_t db) {
  constexpr int gr = wgmma_order_group(kOrder, kPos);
  uint32_t f[4];
  fragment<gr>(k, f);
  wgmma_s8(d, f, db + 2 * gr, kPos == 0 ? 0 : 1);  // +2 in the descriptor: the next 32 bytes of K
}

// One step: the k-steps on keys k (the multiplies kMode asks for between them), then step
// s + 1's keys loaded into the same registers (wgmma has read them) under the epilogue.
template <int kMode, int kOrder, int kWithKeys>
__device__ __forceinline__ void one_step(const WgmmaSmem& sm, const Lane& l, uint64_t db, int s, StepKeys& k,
                                         float* keys, uint32_t (&mx)[8]) {
  const int t = threadIdx.x & 3;
  int d[64];
  pin(d);
  wgmma_fence();
  kstep<kOrder, 0>(d, k, db);
  if constexpr (kMode == 2) multiply_between(d, sm, 0, t);
  kstep<kOrder, 1>(d, k, db);
  if constexpr (kMode == 2) multiply_between(d, sm, 1, t);
  kstep<kOrder, 2>(d, k, db);
  if constexpr (kMode == 2) multiply_between(d, sm, 2, t);
  if constexpr (kMode == 1) multiply_before_group3(d, mx);
  if constexpr (kMode == 3) multiply_uniform(d, int(mx[0]));
  kstep<kOrder, 3>(d, k, db);
  wgmma_commit();
  // The first weights loaded while the last k-step runs (kEarlyWeights).
  float4 w4[kEarlyWeights];
  const float4* ws = reinterpret_cast<const float4*>(sm.w[t]);
#pragma unroll
  for (int i = 0; i < kEarlyWeights; ++i)  // volatile: issued here, before the wait, and used after it
    asm volatile("ld.shared.v4.f32 {%0, %1, %2, %3}, [%4];"
                 : "=f"(w4[i].x), "=f"(w4[i].y), "=f"(w4[i].z), "=f"(w4[i].w)
                 : "r"(unsigned(__cvta_generic_to_shared(ws + i))));
  wgmma_wait();
  pin(d);
  keep(k);
  const float scale[2] = {k.scale[0], k.scale[1]};
  load_keys(k, l, s + 1);
  epilogue<kWithKeys>(d, w4, sm, l, s, scale, keys);
}

// The steps of one block. kMode (stage_queries): the multiplies a step needs; kOrder: the k-step
// order, which matters only when heads multiply before position 1 or 2 (integer sums are exact).
// Templates, so the wgmma sequence has no branch inside (ptxas serialises wgmma across divergent
// paths). No barrier: each warp loads its own keys, one step ahead.
template <int kMode, int kOrder, int kWithKeys>
__device__ __forceinline__ void run_steps(const WgmmaSmem& sm, const DenseWgmmaArgs& a, const BlockRows& b) {
  const int nsteps = (b.p1 - b.p0 + kKeys - 1) / kKeys;
  const Lane l = lane_walk(a, b);
  uint64_t db = smem_desc(sm.q);
  asm volatile("" : "+l"(db));  // opaque: held in registers, not rebuilt from the CTA id (run 83: no change)
  StepKeys k;
  load_keys(k, l, 0);
  uint32_t mx[8] = {};  // mode 1's exponents (apply_exponents); mode 3's multiplier in mx[0]
  if constexpr (kMode == 1) {
#pragma unroll
    for (int c = 0; c < 8; ++c) mx[c] = sm.mexp[threadIdx.x & 3][c];
  }
  if constexpr (kMode == 3) mx[0] = uint32_t(pow2_low5(sm.mexp[threadIdx.x & 3][0]));  // head 0's: every head's
  for (int s = 0; s < nsteps; ++s) one_step<kMode, kOrder, kWithKeys>(sm, l, db, s, k, a.keys, mx);
}

// The three-multiply steps in the block's k-step order (orders kOrder and up).
template <int kWithKeys, int kOrder = 0>
__device__ __forceinline__ void run_early(int order, const WgmmaSmem& sm, const DenseWgmmaArgs& a, const BlockRows& b) {
  if constexpr (kOrder + 1 < kWgmmaOrders) {
    if (order != kOrder) return run_early<kWithKeys, kOrder + 1>(order, sm, a, b);
  }
  run_steps<2, kOrder, kWithKeys>(sm, a, b);
}

// The block's steps in its plan's mode and order; kWithKeys: 1 with the block keys (a.keys), 2
// also with stores skipped below the rows' bounds (a.skip), 0 scores only.
template <int kWithKeys>
__device__ __forceinline__ void run_plan(const TilePlan& plan, const WgmmaSmem& sm, const DenseWgmmaArgs& a,
                                         const BlockRows& b) {
  if (plan.mode == 0)
    run_steps<0, 0, kWithKeys>(sm, a, b);
  else if (plan.mode == 1)
    run_steps<1, 0, kWithKeys>(sm, a, b);
  else if (plan.mode == 3)
    run_steps<3, 0, kWithKeys>(sm, a, b);
  else
    run_early<kWithKeys>(plan.order, sm, a, b);
}

// Stores skipped (dense_wgmma.cuh): warp r counts row r's keys of this block that reach the row's
// bound, then raises the bound to the highest bin edge with skip_need counted keys at or above it.
__device__ __forceinline__ void raise_bound(const DenseWgmmaArgs& a, const BlockRows& b) {
  const int lane = threadIdx.x & 31;
  const int row = a.tile_rows[b.tile * kWgmmaTileRows + (threadIdx.x >> 5)];
  if (row < 0) return;
  const int nblocks = (a.sel_len[row] + 7) / 8;
  if (nblocks <= kTopkBlocks) return;  // the own top-k reads every block of such a row
  const int64_t out_row = row - a.row0;
  uint32_t* sk = a.skip + out_row * kSkipWords;
  const float* keys = a.keys + out_row * a.ld_keys;
  const int end = min((b.p1 + 7) / 8, nblocks - 1);  // the newest block's +inf not counted
  const uint32_t bound = __ldcg(sk + kSkipBins);
  uint32_t top = 0;
  for (int j = b.p0 / 8 + lane; j < end; j += 32) {
    const uint32_t o = order_f32(keys[j]);
    top = max(top, o);
    if (o >= bound) atomicAdd(sk + (o >> kSkipShift), 1u);
  }
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) top = max(top, __shfl_xor_sync(0xFFFFFFFFu, top, off));
  if (lane == 0) top = max(top, atomicMax(sk + kSkipBins + 1, top));
  top = __shfl_sync(0xFFFFFFFFu, top, 0);
  // From the top bin down, 32 bins a round (lane 0 the highest): counts read from L2, where the
  // atomics are; a count missing another block's latest keys only leaves the bound lower.
  uint32_t above = 0;
  for (int hi = int(top >> kSkipShift), round = 0; hi >= 0 && round < 4; hi -= 32, ++round) {
    uint32_t c = hi - lane >= 0 ? __ldcg(sk + hi - lane) : 0u;
#pragma unroll
    for (int off = 1; off < 32; off <<= 1) {
      const uint32_t x = __shfl_up_sync(0xFFFFFFFFu, c, off);
      if (lane >= off) c += x;
    }
    c += above;
    const unsigned hit = __ballot_sync(0xFFFFFFFFu, c >= uint32_t(a.skip_need));
    if (hit != 0) {
      if (lane == 0) atomicMax(sk + kSkipBins, uint32_t(hi - (__ffs(hit) - 1)) << kSkipShift);
      return;
    }
    above = __shfl_sync(0xFFFFFFFFu, c, 31);
  }
}

#endif


// One block: up to 4 rows of one request x kChunk positions; one warpgroup. Per step of 64 keys:
// wgmma m64n128k32 over the four groups with the in-place multiplies the block's heads need (one
// before group 3 in most blocks), then the exact epilogue. Blocks of other rows overlap their
// math with this one's (4 per SM: registers).
__global__ void __launch_bounds__(128, 4) dense_wgmma_kernel(DenseWgmmaArgs a) {
#ifdef DSA_WGMMA
  extern __shared__ __align__(1024) uint8_t smem_raw[];
  // The swizzle works on absolute shared addresses: operands start on a 1024-byte boundary.
  const unsigned base = unsigned(__cvta_generic_to_shared(smem_raw));
  WgmmaSmem& sm = *reinterpret_cast<WgmmaSmem*>(smem_raw + ((1024 - (base & 1023)) & 1023));
  BlockRows b;
  // Stores skipped: chunk-major, so a row's earlier positions have raised its bound.
  b.tile = a.skip != nullptr ? blockIdx.x : blockIdx.y;
  int lmax = 0;
#pragma unroll
  for (int r = 0; r < kWgmmaTileRows; ++r) {
    b.rows[r] = a.tile_rows[b.tile * kWgmmaTileRows + r];
    lmax = max(lmax, b.rows[r] >= 0 ? a.sel_len[b.rows[r]] : 0);
  }
  b.p0 = (a.skip != nullptr ? blockIdx.y : blockIdx.x) * kChunk;
  if (b.p0 >= lmax) return;
  b.p1 = min(b.p0 + kChunk, lmax);
  b.blk0 = a.req_blk[a.sel_req[b.rows[0]]] + b.p0 / 8;
  const TilePlan plan = stage_queries(sm, a, b.rows);
  cp_async_commit();
  cp_async_wait<0>();
  fence_proxy_async();
  __syncthreads();  // B is in place for every warp's wgmma
  if (a.skip != nullptr) {
    run_plan<2>(plan, sm, a, b);
    __syncthreads();  // the block's keys written
    raise_bound(a, b);
  } else if (a.keys != nullptr) {
    run_plan<1>(plan, sm, a, b);
  } else {
    run_plan<0>(plan, sm, a, b);
  }
#endif
}

}  // namespace

bool dense_wgmma_supported() { return wgmma_device(); }

void launch_dense_wgmma(const DenseWgmmaArgs& a, bool wide) {
  if (a.ntiles == 0 || a.max_len == 0) return;
  const unsigned chunks = (a.max_len + kChunk - 1) / kChunk;
  const dim3 grid = a.skip != nullptr ? dim3(a.ntiles, chunks) : dim3(chunks, a.ntiles);
  const int smem = int(sizeof(WgmmaSmem)) + 1024;  // room to align (dense_wgmma_kernel)
  DSA_CUDA_CHECK(cudaFuncSetAttribute(dense_wgmma_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  dense_wgmma_kernel<<<grid, 128, smem>>>(a);
  DSA_LAUNCH_CHECK("dense_wgmma_kernel");
  if (wide) launch_dense_wide(a);
}

}  // namespace dsa::gpu
