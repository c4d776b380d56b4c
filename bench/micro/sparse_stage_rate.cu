// Micro-benchmark: the sparse logits step (gpu/sparse_logits/sparse_wgmma.cu) fed from a staged
// union of adjacent rows' blocks instead of gathered from L2 per row.
//
// Why: the consumer's wgmma kernel gathers 34 GB of key records from L2 a consumer on
// chunk-256k (16384 rows x 2048 blocks x 1 KB), about 5 ms at the measured L2 read ceiling of
// 6.9 TB/s (H100), and takes 5.0-5.3 ms: the target of 2.5 ms cannot be met while every row
// fetches its own records. Adjacent rows of one request share blocks, so a CTA of four rows can
// copy the union of their lists once into shared memory (bulk copies, in windows of W union
// blocks through a ring) and each warpgroup read its row's A fragments from there. Before a
// kernel is built on it, this measures what that does to the step's time, with the step's own
// instructions: four wgmma m64n32k32 (A from registers, B = one row's 32 heads in shared memory),
// the epilogue of chain_scores (two IMAD and an FADD a head cell, a relu-convert and a bf16 FMA
// per two), the two-steps-ahead loads and one 32-bit store a lane.
//
//   gather: today's layout. One warpgroup a row, four CTAs an SM, each lane loading its 16-byte
//           fragments of the step's blocks from global memory two steps ahead.
//   staged: four warpgroups (rows r..r+3) a CTA, one CTA an SM. The CTA builds the union of the
//           four lists (a bitmap over the request's 32768 blocks, a scan of its words), numbers
//           each list entry by its rank in the union, and streams the union in windows of kWin
//           blocks (1 KB of keys + 32 bytes of scales each) through kRing slots. A warp waits for
//           the windows of the step it loads, and releases a window once its next step starts
//           past it; the sixteenth warp to release a window starts the copy of the window kRing
//           further into the freed slot (one block a lane). Loads are shared-memory reads.
//           Three forms: 1 KB bulk copies (one a block, "staged4"), the same multicast to a
//           cluster of four CTAs whose 16 rows share one union ("staged16"), and cp.async by the
//           releasing warp's lanes, 16 bytes an instruction ("staged4 cp.async").
//   smem only: the staged kernel's step with every load from shared memory and no copies or
//           waits (wrong operands): the step's own rate once its operands are near.
//
// Run 170 (H100): the bulk-copied forms took about 4 us a window of 64 copies whether each CTA
// copied its own windows or one CTA multicast them to four, 3-9x slower than the gather.
//
// Lists: 16384 rows (a chunk-256k consumer), each 2048 sorted blocks of a 32768-block request.
// Every 16 rows draw their blocks from one set of U16 x 2048 blocks (generated data: the union of
// 16 adjacent rows is about 4.9 x 2048), so four rows' union is about 2.9 x 2048 here (2.4 in
// generated data: this model is a little pessimistic for the staged form). The scores are
// not checked: operands are random bytes and the output is a timing sink.
// Build and run on the device (repo root):
//   nvcc -std=c++17 -O3 -I. --expt-relaxed-constexpr -gencode arch=compute_90a,code=sm_90a bench/micro/sparse_stage_rate.cu -o /tmp/ssr && /tmp/ssr
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <numeric>
#include <random>
#include <vector>

#include <cub/block/block_scan.cuh>

#include "bench/micro/micro_common.cuh"
#include "gpu/common/bf16.cuh"
#include "gpu/common/mbarrier.cuh"
#include "gpu/common/swizzle.cuh"
#include "gpu/sparse_logits/wgmma_step.cuh"  // the kernel's step: wgmma_rs, StepA, chain_scores

using namespace dsa::gpu;
using namespace dsa::gpu::sparse_step;

constexpr int kRows = 16384;
constexpr int kList = 2048;        // blocks a row
constexpr int kPool = 32768;       // blocks of the request (262144 positions)
constexpr int kRecord = 1024;      // key bytes a block
constexpr int kSteps = kList / 8;  // 64 keys a step
constexpr int kPad = 24;           // list entries past the end: steps load two ahead
constexpr int kGroupRows = 4;      // rows a staged CTA
constexpr int kWin = 32;           // union blocks a window
constexpr int kRing = 4;           // windows in shared memory

__device__ __forceinline__ void load_consts(RowConsts& r, int row) {
#pragma unroll
  for (int s = 0; s < 8; ++s) {
    const uint32_t h = mix32(uint32_t(row) * 64u + s * 8u + (threadIdx.x & 3));
    r.ma[s] = int(h & 15) + 1;
    r.mb[s] = int((h >> 4) & 15) + 1;
    const uint32_t w = 0x3C00u | ((h >> 8) & 0x7Fu);  // a bf16 near 2^-7
    r.w2[s] = w | (w << 16);
  }
}

// The row's B (its 32 heads x 128 int8), random bytes in the 128-byte-swizzled layout.
__device__ __forceinline__ void stage_query(uint8_t* q, int row) {
  const int i = threadIdx.x & 127, c = i >> 2, chunk = (i & 3) * 2;
#pragma unroll
  for (int k = 0; k < 2; ++k) {
    const uint32_t h = mix32(uint32_t(row) * 4096u + uint32_t(i) * 2u + k);
    *reinterpret_cast<uint4*>(q + swizzled_offset(c, chunk + k)) = make_uint4(h, h * 3u, h * 5u, h * 7u);
  }
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
}

// How the gather kernel's step runs (kMode): the kernel's step; its epilogue left out (the
// accumulators' first words stored: the wgmma and the loads alone); its wgmma left out (the
// epilogue over words of A: the loads and the epilogue alone); pipelined: step u + 1's wgmma
// issued before step u's epilogue, into a second set of accumulators.
enum Mode { kStep = 0, kNoEpilogue = 1, kNoWgmma = 2, kPipelined = 3 };

struct Acc {
  int da[16], db[16];
};

__device__ __forceinline__ void issue(Acc& c, const StepA& a, uint32_t dq) {
  asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
  wgmma_rs<0, 0>(c.da, a.f[0], dq);
  wgmma_rs<1, 2>(c.da, a.f[1], dq);
  wgmma_rs<1, 4>(c.da, a.f[2], dq);
  wgmma_rs<0, 6>(c.db, a.f[3], dq);
  asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
}

__device__ __forceinline__ uint32_t sk_pair(const StepA& a) {
  return __byte_perm(__float_as_uint(a.sk.x), __float_as_uint(a.sk.y), 0x7632);
}

__device__ __forceinline__ void store(uint16_t* out, int u, uint32_t sc) {
  if ((threadIdx.x & 3) == 0) *reinterpret_cast<uint32_t*>(out + 64 * u) = sc;
}

// One step (A in a[kBuf]): the k-steps, step u + 2's loads into the same registers, the scores.
template <int kBuf, int kMode, class Loader>
__device__ __forceinline__ void run_step(Loader& ld, const RowConsts& r, uint32_t dq, uint16_t* out, int u,
                                         StepA (&a)[2]) {
  Acc c;
  if constexpr (kMode == kNoWgmma) {
#pragma unroll
    for (int i = 0; i < 16; ++i) {
      c.da[i] = int((&a[kBuf].f[i / 4].x)[i % 4]);
      c.db[i] = int((&a[kBuf].f[3 - i / 4].x)[(i + 1) % 4]);
    }
  } else {
    issue(c, a[kBuf], dq);
  }
  const uint32_t sk2 = sk_pair(a[kBuf]);
  if constexpr (kMode != kNoWgmma) asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
  pin(c.da);
  pin(c.db);
  keep(a[kBuf]);
  ld.done_with(u);
  ld.load(a[kBuf], u + 2);
  if constexpr (kMode == kNoEpilogue)
    store(out, u, uint32_t(c.da[u & 15] ^ c.db[(u + 3) & 15]) ^ sk2);
  else
    store(out, u, chain_scores(c.da, c.db, r, sk2));
}

template <int kMode, class Loader>
__device__ __forceinline__ void row_steps(Loader& ld, const RowConsts& r, uint32_t dq, uint16_t* out) {
  StepA a[2];
  ld.load(a[0], 0);
  ld.load(a[1], 1);
  for (int u = 0; u < kSteps; u += 2) {
    run_step<0, kMode>(ld, r, dq, out, u, a);
    run_step<1, kMode>(ld, r, dq, out, u + 1, a);
  }
}

// Half an iteration of the pipelined loop: step u + 1's wgmma into `next` (A in an), step u's
// epilogue from `done` meanwhile, then the wait and step u + 3's loads into an.
template <class Loader>
__device__ __forceinline__ void pipelined_half(Loader& ld, const RowConsts& r, uint32_t dq, uint16_t* out, int u,
                                               const Acc& done, uint32_t sk_done, Acc& next, StepA& an,
                                               uint32_t& sk_next) {
  issue(next, an, dq);
  store(out, u, chain_scores(done.da, done.db, r, sk_done));
  asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
  pin(next.da);
  pin(next.db);
  keep(an);
  sk_next = sk_pair(an);
  ld.load(an, u + 3);
}

// Pipelined: while step u + 1's wgmma runs, step u's epilogue; A two steps ahead as before (steps
// past the end are padding, never stored).
template <class Loader>
__device__ __forceinline__ void row_steps_pipelined(Loader& ld, const RowConsts& r, uint32_t dq, uint16_t* out) {
  StepA a[2];
  Acc c[2];
  ld.load(a[0], 0);
  ld.load(a[1], 1);
  issue(c[0], a[0], dq);
  asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
  pin(c[0].da);
  pin(c[0].db);
  keep(a[0]);
  uint32_t sk[2] = {sk_pair(a[0]), 0};
  ld.load(a[0], 2);
  for (int u = 0; u < kSteps; u += 2) {  // c[0]: step u's sums; a[1]: step u + 1's keys; a[0]: u + 2's
    pipelined_half(ld, r, dq, out, u, c[0], sk[0], c[1], a[1], sk[1]);
    pipelined_half(ld, r, dq, out, u + 1, c[1], sk[1], c[0], a[0], sk[0]);
  }
}

// The lane's output: keys 2p, 2p + 1 of its block of each step.
__device__ __forceinline__ uint16_t* lane_out(uint16_t* out, int row) {
  const int lane = threadIdx.x & 31, w = (threadIdx.x >> 5) & 3, g = lane >> 2;
  return out + int64_t(row) * (kList * 8) + 8 * (2 * w + (g >> 2)) + 2 * (g & 3);
}

// gather: fragments from global memory, as the kernel does today.
struct GatherLoader {
  const uint4* frag;     // pool + this lane's 16-byte slot
  const float2* scale;   // scales + keys 2p, 2p + 1
  const int32_t* ids;    // the row's list (shared memory), entry 2w + lane / 16 of step 0
  __device__ void load(StepA& k, int u) const {
    const int id = ids[8 * u];
    const uint4* f = frag + int64_t(id) * (kRecord / 16);
#pragma unroll
    for (int gr = 0; gr < 4; ++gr) k.f[gr] = __ldg(f + 16 * gr);
    k.sk = __ldg(scale + int64_t(id) * 4);
  }
  __device__ void done_with(int) const {}
};

template <int kMode, int kMinBlocks>
__global__ void __launch_bounds__(128, kMinBlocks)
    gather_kernel(const uint8_t* pool, const float* scales, const int32_t* lists, uint16_t* out) {
  __shared__ __align__(1024) uint8_t q[32 * 128 + 1024];
  __shared__ int32_t ids[kList + kPad];
  uint8_t* qa = q + ((1024 - (unsigned(__cvta_generic_to_shared(q)) & 1023)) & 1023);
  const int row = blockIdx.x;
  for (int i = threadIdx.x; i < kList + kPad; i += 128) ids[i] = lists[int64_t(row) * kList + min(i, kList - 1)];
  stage_query(qa, row);
  __syncthreads();
  RowConsts r;
  load_consts(r, row);
  const int lane = threadIdx.x & 31, w = threadIdx.x >> 5, g = lane >> 2;
  GatherLoader ld{reinterpret_cast<const uint4*>(pool) + (lane & 15),
                  reinterpret_cast<const float2*>(scales) + 2 * (g & 3), ids + 2 * w + (g >> 2)};
  const uint32_t dq = desc_lo(qa);
  if constexpr (kMode == kPipelined)
    row_steps_pipelined(ld, r, dq, lane_out(out, row));
  else
    row_steps<kMode>(ld, r, dq, lane_out(out, row));
}

// staged: the CTA's shared memory (kCluster CTAs of one cluster hold the same union and ring).
struct alignas(1024) StageSmem {
  uint8_t q[kGroupRows][32 * 128];             // each warpgroup's B
  uint8_t keys[kRing][kWin][kRecord];          // the ring of windows
  float2 sk[kRing][kWin][4];                   // their blocks' scales
  uint16_t rank[kGroupRows][kList + kPad];     // each list entry's rank in the union
  uint32_t bits[kPool / 32];                   // the union as a bitmap (the cluster's)
  uint32_t own_bits[kPool / 32];               // this CTA's rows' blocks
  int word_base[kPool / 32];                   // the rank of each word's first union block
  int released[kPool / kWin];                  // this CTA's warps done with each window
  int cluster_released[kPool / kWin];          // (rank 0's) CTAs done with each window
  uint64_t full[kRing];
  cub::BlockScan<int, 512>::TempStorage scan;
  int nunion;
};

__device__ __forceinline__ uint32_t cluster_rank() {
  uint32_t r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
  return r;
}
__device__ __forceinline__ void cluster_sync() {
  asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;" ::: "memory");
}
// The same shared variable in CTA `rank` of the cluster (a generic address).
template <class T>
__device__ __forceinline__ T* in_cta(T* p, uint32_t rank) {
  uint64_t q;
  asm volatile("mapa.u64 %0, %1, %2;" : "=l"(q) : "l"(p), "r"(rank));
  return reinterpret_cast<T*>(q);
}

// The union block of rank r: the word whose base is the last one <= r, its (r - base)-th set bit.
__device__ __forceinline__ int union_id(const StageSmem& sm, int r) {
  int lo = 0, hi = kPool / 32 - 1;
  while (lo < hi) {
    const int mid = (lo + hi + 1) >> 1;
    if (sm.word_base[mid] <= r) lo = mid; else hi = mid - 1;
  }
  return 32 * lo + int(__fns(sm.bits[lo], 0, r - sm.word_base[lo] + 1));
}

// Arms this CTA's barrier of window w (its bytes, from whichever CTA copies it).
__device__ __forceinline__ void arm_window(StageSmem& sm, int w) {
  const int n = min(kWin, sm.nunion - w * kWin);
  mbar_expect(&sm.full[w % kRing], unsigned(n) * (kRecord + 32));
}

// Copies window w into its slot of every CTA of the cluster: one block a lane.
// kCluster 0: one CTA, copied by the warp's lanes with cp.async (16 bytes an instruction), each
// lane's completion arriving on the window's barrier (32 arrivals a phase).
template <int kCluster>
__device__ __forceinline__ void fetch_window(StageSmem& sm, const uint8_t* pool, const float* scales, int w) {
  const int lane = threadIdx.x & 31, slot = w % kRing, first = w * kWin;
  const int n = min(kWin, sm.nunion - first);
  if constexpr (kCluster == 0) {
    static_assert(kWin == 32, "a block a lane");
    if (lane < n) {
      const int id = union_id(sm, first + lane);
      const uint8_t* src = pool + int64_t(id) * kRecord;
      const uint32_t dst = smem_addr(sm.keys[slot][lane]);
#pragma unroll 8
      for (int c = 0; c < kRecord / 16; ++c)
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(dst + 16 * c), "l"(src + 16 * c) : "memory");
      const uint32_t sdst = smem_addr(sm.sk[slot][lane]);
      const float* ssrc = scales + int64_t(id) * 8;
      asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(sdst), "l"(ssrc) : "memory");
      asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(sdst + 16), "l"(ssrc + 4) : "memory");
    }
    asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];" ::"r"(smem_addr(&sm.full[slot])) : "memory");
  } else {
    for (int b = lane; b < n; b += 32) {
      const int id = union_id(sm, first + b);
      if constexpr (kCluster == 1) {
        bulk_copy(sm.keys[slot][b], pool + int64_t(id) * kRecord, kRecord, &sm.full[slot]);
        bulk_copy(sm.sk[slot][b], scales + int64_t(id) * 8, 32, &sm.full[slot]);
      } else {
        const uint16_t mask = (1u << (kCluster > 0 ? kCluster : 1)) - 1u;
        asm volatile(
            "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster [%0], [%1], %2, [%3], %4;\n"
            "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster [%5], [%6], %7, [%3], %4;" ::"r"(
                smem_addr(sm.keys[slot][b])),
            "l"(pool + int64_t(id) * kRecord), "r"(kRecord), "r"(smem_addr(&sm.full[slot])), "h"(mask),
            "r"(smem_addr(sm.sk[slot][b])), "l"(scales + int64_t(id) * 8), "r"(32)
            : "memory");
      }
    }
  }
}

template <int kCluster>
struct StagedLoader {
  StageSmem* sm;
  const uint8_t* pool;
  const float* scales;
  const uint16_t* rank;       // the row's ranks, entry 2w + lane / 16 of step 0
  const uint16_t* step_rank;  // the row's ranks (entry 0)
  int nwin;
  int waited;    // windows this warp has waited for: 0..waited - 1
  int released;  // windows this warp has released: 0..released - 1
  int slot16, pair;  // this lane's 16-byte slot in a record, its key pair

  __device__ void wait_through(int w) {
    for (; waited <= w; ++waited) mbar_wait(&sm->full[waited % kRing], unsigned(waited / kRing) & 1u);
  }
  // The sixteenth warp of a CTA to release window w arms the CTA's barrier for window w + kRing
  // (its phase for w is complete: every warp waited for it); the last CTA to do so copies it.
  __device__ void release_below(int w) {
    for (; released < w; ++released) {
      int last = 0;
      const int next = released + kRing;
      if ((threadIdx.x & 31) == 0 && atomicAdd(&sm->released[released], 1) == 15) {
        if (next < nwin && kCluster > 0) arm_window(*sm, next);  // bulk copies complete bytes
        last = kCluster <= 1 || atomicAdd(in_cta(&sm->cluster_released[released], 0), 1) == kCluster - 1;
      }
      last = __shfl_sync(0xFFFFFFFFu, last, 0);
      if (last && next < nwin) fetch_window<kCluster>(*sm, pool, scales, next);
    }
  }
  // Step u's fragments (called after step u - 2's wgmma, which released the windows below step
  // u - 1's first entry). This warp can wait only for windows below that one + kRing: a later
  // one needs a window this warp still holds released first. A block further on (rows whose 16
  // entries from step u - 1 on span more than kRing windows) is read from global memory.
  __device__ void load(StepA& k, int u) {
    if constexpr (kCluster < 0) {  // the step fed from shared memory alone: no copies, no waits
      const int rk = rank[8 * u];
      const uint4* f = reinterpret_cast<const uint4*>(sm->keys[(rk / kWin) % kRing][rk % kWin]) + slot16;
#pragma unroll
      for (int gr = 0; gr < 4; ++gr) k.f[gr] = f[16 * gr];
      k.sk = sm->sk[(rk / kWin) % kRing][rk % kWin][pair];
      return;
    }
    const int lim = step_rank[8 * max(u - 1, 0)] / kWin + kRing - 1;
    wait_through(min(step_rank[8 * u + 7] / kWin, lim));  // the step's last entry has its highest rank
    const int rk = rank[8 * u], win = rk / kWin;
    if (win > lim) {
      const int id = union_id(*sm, rk);
      const uint4* f = reinterpret_cast<const uint4*>(pool + int64_t(id) * kRecord) + slot16;
#pragma unroll
      for (int gr = 0; gr < 4; ++gr) k.f[gr] = __ldg(f + 16 * gr);
      k.sk = __ldg(reinterpret_cast<const float2*>(scales + int64_t(id) * 8) + pair);
      return;
    }
    const int slot = win % kRing, b = rk % kWin;
    const uint4* f = reinterpret_cast<const uint4*>(sm->keys[slot][b]) + slot16;
#pragma unroll
    for (int gr = 0; gr < 4; ++gr) k.f[gr] = f[16 * gr];
    k.sk = sm->sk[slot][b][pair];
  }
  // After step u's wgmma: the windows below step u + 1's first entry are no longer read.
  __device__ void done_with(int u) {
    if constexpr (kCluster >= 0) release_below(step_rank[8 * (u + 1)] / kWin);
  }
  // Every window waited for (so this CTA's phases complete in order), each only after this warp
  // released the window kRing below it, then released.
  __device__ void finish() {
    if constexpr (kCluster >= 0) {
      for (int w = waited; w < nwin; ++w) {
        release_below(max(released, w - kRing + 1));
        wait_through(w);
      }
      release_below(nwin);
    }
  }
};

// The union of the cluster's rows (kCluster CTAs of kGroupRows rows each), every list entry's
// rank in it, and the first windows armed.
__device__ __forceinline__ void build_union(StageSmem& sm, const int32_t* lists, int row0, int cluster) {
  const int tid = threadIdx.x;
  for (int i = tid; i < kPool / 32; i += 512) sm.own_bits[i] = 0;
  for (int i = tid; i < kPool / kWin; i += 512) sm.released[i] = sm.cluster_released[i] = 0;
  __syncthreads();
  for (int i = tid; i < kGroupRows * kList; i += 512) {
    const int id = lists[int64_t(row0) * kList + i];
    atomicOr(&sm.own_bits[id >> 5], 1u << (id & 31));
  }
  if (cluster > 1) cluster_sync(); else __syncthreads();
  for (int i = tid; i < kPool / 32; i += 512) {
    uint32_t m = 0;
    if (cluster <= 1) m = sm.own_bits[i];
    for (int c = 0; c < cluster && cluster > 1; ++c) m |= *in_cta(&sm.own_bits[i], uint32_t(c));
    sm.bits[i] = m;
  }
  __syncthreads();
  const uint32_t w0 = sm.bits[2 * tid], w1 = sm.bits[2 * tid + 1];
  int base, total;
  cub::BlockScan<int, 512>(sm.scan).ExclusiveSum(__popc(w0) + __popc(w1), base, total);
  sm.word_base[2 * tid] = base;
  sm.word_base[2 * tid + 1] = base + __popc(w0);
  if (tid == 0) sm.nunion = total;
  __syncthreads();
  // Entries past the list repeat its last (their window is already needed).
  for (int i = tid; i < kGroupRows * (kList + kPad); i += 512) {
    const int r = i / (kList + kPad), e = min(i % (kList + kPad), kList - 1);
    const int id = lists[int64_t(row0 + r) * kList + e];
    const uint32_t below = sm.bits[id >> 5] & ((1u << (id & 31)) - 1u);
    sm.rank[r][i % (kList + kPad)] = uint16_t(sm.word_base[id >> 5] + __popc(below));
  }
  const int nwin = (total + kWin - 1) / kWin;
  if (tid < kRing) mbar_init(&sm.full[tid], cluster == 0 ? 32 : 1);
  __syncthreads();
  if (tid < kRing && tid < nwin && cluster > 0) arm_window(sm, tid);  // bulk copies only
  if (cluster > 1) cluster_sync(); else __syncthreads();  // every CTA armed before any copy lands
}

template <int kCluster>
__global__ void __launch_bounds__(512, 1)
    staged_kernel(const uint8_t* pool, const float* scales, const int32_t* lists, uint16_t* out) {
  extern __shared__ __align__(1024) uint8_t raw[];
  StageSmem& sm = *reinterpret_cast<StageSmem*>(raw + ((1024 - (unsigned(__cvta_generic_to_shared(raw)) & 1023)) & 1023));
  const int tid = threadIdx.x, row0 = blockIdx.x * kGroupRows;
  build_union(sm, lists, row0, kCluster);
  const int nwin = (sm.nunion + kWin - 1) / kWin;
  // The first windows: CTA c of the cluster copies windows c, c + kCluster, ... below kRing.
  if (tid < 32 && kCluster >= 0)
    for (int w = kCluster <= 1 ? 0 : int(cluster_rank()); w < kRing && w < nwin; w += max(kCluster, 1))
      fetch_window<kCluster>(sm, pool, scales, w);
  const int grp = tid >> 7, row = row0 + grp;
  stage_query(sm.q[grp], row);
  __syncthreads();
  RowConsts r;
  load_consts(r, row);
  const int lane = tid & 31, w = (tid >> 5) & 3, g = lane >> 2;
  StagedLoader<kCluster> ld{&sm, pool, scales, &sm.rank[grp][2 * w + (g >> 2)], sm.rank[grp], nwin, 0, 0,
                            lane & 15, g & 3};
  row_steps<kStep>(ld, r, desc_lo(sm.q[grp]), lane_out(out, row));
  ld.finish();
  if (kCluster > 1) cluster_sync();  // rank 0's counts and every CTA's ring stay until all are done
}

__global__ void fill(uint32_t* p, size_t n, uint32_t seed) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x)
    p[i] = mix32(uint32_t(i) * 2654435761u + seed);
}

__global__ void fill_scales(float* p, size_t n) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x)
    p[i] = ldexpf(1.0f, -int(mix32(uint32_t(i)) % 8));  // powers of two, never zero
}

// Lists of kRows rows: every 16 rows pick their 2048 blocks from one set of u16 * 2048 blocks.
std::vector<int32_t> make_lists(double u16, uint64_t seed, double* union4, double* union16) {
  std::mt19937_64 rng(seed);
  std::vector<int32_t> lists(size_t(kRows) * kList);
  std::vector<int32_t> all(kPool);
  std::iota(all.begin(), all.end(), 0);
  const int nset = std::min(kPool, int(u16 * kList));
  double sum4 = 0, sum16 = 0;
  for (int g = 0; g < kRows / 16; ++g) {
    std::shuffle(all.begin(), all.end(), rng);
    std::vector<int32_t> set(all.begin(), all.begin() + nset);
    for (int r = 0; r < 16; ++r) {
      std::shuffle(set.begin(), set.end(), rng);
      int32_t* row = &lists[size_t(g * 16 + r) * kList];
      std::copy(set.begin(), set.begin() + kList, row);
      std::sort(row, row + kList);
    }
    for (int q = 0; q < 16; q += kGroupRows) {
      std::vector<int32_t> u(&lists[size_t(g * 16 + q) * kList], &lists[size_t(g * 16 + q + kGroupRows) * kList]);
      std::sort(u.begin(), u.end());
      sum4 += double(std::unique(u.begin(), u.end()) - u.begin()) / kList;
    }
    std::vector<int32_t> u(&lists[size_t(g * 16) * kList], &lists[size_t(g * 16 + 16) * kList]);
    std::sort(u.begin(), u.end());
    sum16 += double(std::unique(u.begin(), u.end()) - u.begin()) / kList;
  }
  *union4 = sum4 / (kRows / kGroupRows);
  *union16 = sum16 / (kRows / 16);
  return lists;
}

int main() {
  int dev = 0, sms = 0;
  cudaGetDevice(&dev);
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
  uint8_t* pool = nullptr;
  float* scales = nullptr;
  int32_t* lists = nullptr;
  uint16_t* out = nullptr;
  cudaMalloc(&pool, size_t(kPool + 16) * kRecord);
  cudaMalloc(&scales, size_t(kPool + 16) * 8 * sizeof(float));
  cudaMalloc(&lists, size_t(kRows) * kList * sizeof(int32_t));
  cudaMalloc(&out, size_t(kRows) * kList * 8 * sizeof(uint16_t));
  fill<<<1024, 256>>>(reinterpret_cast<uint32_t*>(pool), size_t(kPool + 16) * kRecord / 4, 17u);
  fill_scales<<<1024, 256>>>(scales, size_t(kPool + 16) * 8);
  const size_t smem = sizeof(StageSmem) + 1024;
  for (auto k : {staged_kernel<-1>, staged_kernel<0>, staged_kernel<1>, staged_kernel<4>})
    if (cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)) != cudaSuccess) {
      std::printf("staged_kernel: %zu bytes of shared memory refused\n", smem);
      return 1;
    }
  auto launch_cluster = [&] {
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3(kRows / kGroupRows);
    cfg.blockDim = dim3(512);
    cfg.dynamicSmemBytes = smem;
    cudaLaunchAttribute attr[1];
    attr[0].id = cudaLaunchAttributeClusterDimension;
    attr[0].val.clusterDim.x = 4;
    attr[0].val.clusterDim.y = 1;
    attr[0].val.clusterDim.z = 1;
    cfg.attrs = attr;
    cfg.numAttrs = 1;
    cudaLaunchKernelEx(&cfg, staged_kernel<4>, static_cast<const uint8_t*>(pool), static_cast<const float*>(scales),
                       static_cast<const int32_t*>(lists), out);
  };
  {  // The gather's step taken apart, on the first lists below.
    double union4 = 0, union16 = 0;
    const std::vector<int32_t> host = make_lists(4.9, 42, &union4, &union16);
    cudaMemcpy(lists, host.data(), host.size() * sizeof(int32_t), cudaMemcpyHostToDevice);
    const auto time = [&](auto kernel) { return best_ms([&] { kernel<<<kRows, 128>>>(pool, scales, lists, out); }, 3); };
    const float step = time(gather_kernel<kStep, 4>), no_epi = time(gather_kernel<kNoEpilogue, 4>),
                no_mma = time(gather_kernel<kNoWgmma, 4>), pipe4 = time(gather_kernel<kPipelined, 4>),
                pipe3 = time(gather_kernel<kPipelined, 3>);
    const cudaError_t err = cudaDeviceSynchronize();
    std::printf("gather (U16 4.9), ms: step %.3f | without the epilogue %.3f | without the wgmma %.3f | pipelined, "
                "4 CTAs an SM %.3f | pipelined, 3 CTAs an SM %.3f (%s)\n",
                step, no_epi, no_mma, pipe4, pipe3, cudaGetErrorString(err));
  }
  std::printf("%d SMs; staged: %d rows a CTA (x4 in a cluster), windows of %d blocks, %d in the ring, %zu bytes of "
              "shared memory\n", sms, kGroupRows, kWin, kRing, smem);
  std::printf("%-6s %-8s %-9s %-10s %-13s %-14s %-11s %-12s %-12s\n", "U16", "union 4", "union 16", "gather ms",
              "smem only ms", "staged4 cp.async", "staged4 ms", "staged16 ms", "gathered GB");
  for (double u16 : {4.9, 3.0, 1.5}) {
    double union4 = 0, union16 = 0;
    const std::vector<int32_t> host = make_lists(u16, 42, &union4, &union16);
    cudaMemcpy(lists, host.data(), host.size() * sizeof(int32_t), cudaMemcpyHostToDevice);
    const float g = best_ms([&] { gather_kernel<kStep, 4><<<kRows, 128>>>(pool, scales, lists, out); }, 3);
    cudaError_t err = cudaDeviceSynchronize();
    const float r4 = best_ms([&] { staged_kernel<-1><<<kRows / kGroupRows, 512, smem>>>(pool, scales, lists, out); }, 3);
    if (err == cudaSuccess) err = cudaDeviceSynchronize();
    const float a4 = best_ms([&] { staged_kernel<0><<<kRows / kGroupRows, 512, smem>>>(pool, scales, lists, out); }, 3);
    if (err == cudaSuccess) err = cudaDeviceSynchronize();
    const float s4 = best_ms([&] { staged_kernel<1><<<kRows / kGroupRows, 512, smem>>>(pool, scales, lists, out); }, 3);
    if (err == cudaSuccess) err = cudaDeviceSynchronize();
    const float s16 = best_ms(launch_cluster, 3);
    if (err == cudaSuccess) err = cudaDeviceSynchronize();
    if (err != cudaSuccess) {
      std::printf("error: %s\n", cudaGetErrorString(err));
      return 1;
    }
    std::printf("%-6.1f %-8.2f %-9.2f %-10.3f %-13.3f %-14.3f %-11.3f %-12.3f %-12.1f\n", u16, union4, union16, g, r4, a4,
                s4, s16,
                double(kRows) * kList * (kRecord + 32) / 1e9);
  }
  return 0;
}
