#include <cstddef>  // offsetof

#include "gpu/common/bf16.cuh"
#include "gpu/common/check.cuh"
#include "gpu/common/cp_async.cuh"  // smem_addr
#include "gpu/common/swizzle.cuh"
#include "gpu/common/wgmma_device.cuh"
#include "gpu/sparse_logits/sparse_logits.cuh"
#include "gpu/sparse_logits/row_job.cuh"
#include "gpu/sparse_logits/sparse_mma.cuh"
#include "gpu/sparse_logits/sparse_slow.cuh"
#include "gpu/sparse_logits/wgmma_step.cuh"

// Paged sparse logits of the split-route rows on Hopper's wgmma (sm_90a), bit-identical to the
// reference (docs/semantics.md, "Sparse score").
//
// One warpgroup scores one table row, 64 candidates (8 blocks) a step: wgmma m64n32k32 with the
// keys as A from registers and the row's 32 heads as B in shared memory. Keys as A is what lets
// any block of the row's list be a tile row: warp w's 16 rows are the step's blocks 2w and 2w + 1,
// and each lane loads its fragment of them straight from the pair-order records (launch_key_blocks'
// kdfrag, as the dense wgmma kernel reads them) two steps ahead, one 16-byte load per k-step
// group. No shared-memory ring, no copies to wait for, no proxy fence and no barrier in the step.
// At N = 32 wgmma with A in shared memory reaches only 1.28 POPS, two thirds of the register form's
// 1.92 (bench/micro/mma_rate.cu, run 112), and 0.21 with cp.async writes beside it; the ring and
// its copies (run 87 to run 111) ran the consumer layer at 5.3-5.4 ms, A from registers at
// 4.95-5.03 (run 112). A CTA is one warpgroup, four CTAs an SM, so a step's shared addresses and
// descriptors are uniform. A lane's two keys are adjacent positions of one block: one 32-bit store
// takes both scores.
//
// Head order: column c of B is head (c%8)/2 + 8(c/8) + 4(c%2), so a thread's 8 columns (2t, 2t+1
// + 8j) are the heads t, t+4, ..., t+28 of chain lane t, in chain order, for its two keys (rows g
// and g+8 of its warp: keys 2p and 2p + 1, p = g % 4, of the step's block 2w + g / 4). The whole
// bf16 chain of a key then runs in one thread, two keys per instruction.
//
// Epilogue per head cell (split route of fp4_mma.cuh): S = A*mA + B*mB (two IMAD, the float bits
// of 2^23 added on the way), S = bits - 2^23 exactly (|S| < 2^23); then per two keys: relu and
// bf16 rounding (cvt.rn.relu.bf16x2) and one fma of the chain with the weight w' = bf16(w) * sq;
// the key scale sk multiplies the key's final sum once. Exact: the reference's a_h = bf16(S sq sk)
// equals bf16(S) sq sk because S sq sk >= 2^-90 stays normal (|S| >= 1, sq and sk within
// 2^+-45), so a_h * w = sk (bf16(S) * w') as real numbers; the query prep admits a split row only
// when every w' is a normal bf16 or zero (folds_into_weight).
//
// The key scale last: the chain without sk equals the reference's chain divided by sk at every
// rounding, because sk is a power of two and neither chain meets a rounding the other does not.
// Every value of the unscaled chain is a multiple of G = 2^(min ilogb(w') - 7) (the bf16(S) are
// integers, each w' a multiple of its own ulp), so a value below 2^8 G is exact in bf16 and its
// sk multiple is too when G sk >= 2^-133 (the smallest subnormal), and a value that rounds keeps
// at least 2^8 G sk >= 2^-125 scaled, a normal number, where rounding commutes with the power of
// two. The query prep admits a split row only when ilogb(w') lies in [-81, 52] for every nonzero
// w' (weights_scale_last): sk >= 2^-45 then gives G sk >= 2^-133, and no value of either chain
// reaches 2^127. Saves seven of the eight bf16 multiplies a thread spent on sk each step.
//
// The doubled group: a head whose groups 0-2 span 4 binades (11.5 % of chunk-256k's consumer rows
// have one, and no other reason to leave the route) would need its top group shifted by 4, which
// overflows int8; the query prep stores it shifted by 3 and the step adds that group once more as
// a fifth k-step into A's accumulator, with B holding the group for the heads that double it and
// zeros for the rest (GroupSmem::qd). One group a row (row_split = 2 + g), so the fifth k-step's
// A offset is the same for every head.
namespace dsa::gpu {
namespace {
using namespace sparse_slow;
using namespace sparse_step;

// Warpgroups (table rows) per CTA. One: the CTA's shared memory is its row's, so every shared
// address and descriptor of a step is uniform and stays on the uniform datapath (with four rows a
// CTA, run 89's step moved both descriptors of each wgmma there: 16 R2UR).
constexpr int kGroups = 1;
constexpr int kCtasPerSm = 4 / kGroups;  // 16 warps an SM, 128 registers a thread
// The staged list's padding: steps run in twos and load two steps ahead, 8 entries a step.
constexpr int kIdsPad = 64;
static_assert(8 * ((kTopkBlocks / 8 + 1) / 2 * 2 + 2) <= kTopkBlocks + kIdsPad, "the list's padding covers the loads ahead");

struct alignas(1024) GroupSmem {
  uint8_t q[32 * 128];  // B: the row's split-form query, head-permuted, 128-byte swizzle
  // B of the doubled group's second k-step: each row's first 32 bytes (the rest is never read)
  uint8_t qd[32 * 128];
  SlowSmem slow[4];     // after the steps: the slow route's keys, a part a warp
  uint32_t slow_blocks[kTopkBlocks / 32];
  int32_t ids[kTopkBlocks + kIdsPad];  // the row's block list; entries past nb repeat entry 0
};

struct Smem {
  GroupSmem group[kGroups];
};

#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define DSA_SPARSE_WGMMA 1

__device__ __forceinline__ void group_sync(int group) {
  asm volatile("bar.sync %0, 128;" ::"r"(group + 1) : "memory");
}

// The head in column c of B (see the head order above).
__device__ __forceinline__ int head_of_column(int c) { return ((c & 7) >> 1) + 8 * (c >> 3) + 4 * (c & 1); }

// Stages the row's split-form query as B (rows = columns c, 128-byte swizzle).
__device__ __forceinline__ void stage_query(uint8_t* q, const SparseLogitsArgs& a, int row) {
  const int i = threadIdx.x & 127;
  const int c = i >> 2, chunk = (i & 3) * 2;  // column c, 16-byte chunks chunk and chunk + 1
  const uint4* src = reinterpret_cast<const uint4*>(a.qsplit + int64_t(row) * 4096 + head_of_column(c) * 128);
#pragma unroll
  for (int k = 0; k < 2; ++k)
    *reinterpret_cast<uint4*>(q + swizzled_offset(c, chunk + k)) = src[chunk + k];
}

// The doubled group's B (split_vector): the group's 32 bytes of each head that doubles it, zeros
// for the others, in q's layout.
__device__ __forceinline__ void stage_doubled(uint8_t* qd, const SparseLogitsArgs& a, int row, int group) {
  const int i = threadIdx.x & 127, c = i >> 2, chunk = i & 3;
  if (chunk >= 2) return;
  const int h = head_of_column(c);
  uint4 v = make_uint4(0, 0, 0, 0);
  if (a.qdouble[int64_t(row) * 32 + h] != 0)
    v = reinterpret_cast<const uint4*>(a.qsplit + int64_t(row) * 4096 + h * 128 + group * 32)[chunk];
  *reinterpret_cast<uint4*>(qd + swizzled_offset(c, chunk)) = v;
}

__device__ __forceinline__ void load_consts(RowConsts& r, const SparseLogitsArgs& a, int row) {
  const int t = threadIdx.x & 3;
#pragma unroll
  for (int s = 0; s < 8; ++s) {
    const int h = t + 4 * s;
    const int2 m = a.qmul[int64_t(row) * 32 + h];
    r.ma[s] = m.x;
    r.mb[s] = m.y;
    const float wf = bf16_value(soft_bf16_rne(a.weights[int64_t(row) * 32 + h])) * a.qscale[int64_t(row) * 32 + h];
    const uint32_t w = __float_as_uint(wf) >> 16;  // exact (folds_into_weight)
    r.w2[s] = w | (w << 16);
  }
}

// Marks this warp's blocks of a step (list entries i0, i0 + 1) that hold a key off the fast path
// (fast: bit b set when block b is); rare, so kept off the step's path. slow_blocks: its shared
// address.
__device__ __forceinline__ void mark_slow(unsigned fast, int i0, int nb, unsigned slow_blocks) {
  if ((threadIdx.x & 31) != 0) return;
  for (int b = 0; b < 2; ++b)
    if (((fast >> b) & 1u) == 0 && i0 + b < nb)
      asm volatile("red.shared.or.b32 [%0], %1;" ::"r"(slow_blocks + unsigned((i0 + b) >> 5) * 4u),
                   "r"(1u << ((i0 + b) & 31))
                   : "memory");
}

// Lane (g, t)'s walk: its record is list entry 8u + 2w + g / 4 of step u, its keys 2p and 2p + 1
// of that block, p = g % 4 (adjacent positions: one 32-bit store for both scores).
struct LaneWalk {
  const uint4* frag;    // kdfrag of the request's block 0, this lane's slot of k-step group 0
  const float2* scale;  // kbscale of the request's block 0, keys 2p and 2p + 1
  unsigned ids;         // the staged list's entry 2w + g / 4 (step 0)
  uint16_t* out;        // the lane's first position of step 0
  int room;             // valid - that position
  int nb;
  uint32_t dq, dqd;     // B descriptors' low words: the query, the doubled group's
  unsigned slow;        // slow_blocks' shared address
};

// Loads step u's A operand (the list's padding repeats a block of the row, so no test).
__device__ __forceinline__ void load_step(StepA& k, const LaneWalk& l, int u) {
  int id;
  asm volatile("ld.shared.b32 %0, [%1];" : "=r"(id) : "r"(l.ids + unsigned(u) * 32u));
  const uint4* f = l.frag + int64_t(id) * (kKeyBlockBytes / 16);
#pragma unroll
  for (int gr = 0; gr < 4; ++gr) k.f[gr] = __ldg(f + 16 * gr);
  k.sk = __ldg(l.scale + int64_t(id) * 4);
}

// Step u (A in buffer kBuf): the k-steps, then step u + 2's keys loaded into the same registers
// (wgmma has read them), then the scores of this lane's two keys. kDoubled: the row's doubled
// group (-1: none).
template <int kBuf, int kDoubled>
__device__ __forceinline__ void run_step(const LaneWalk& l, const RowConsts& r, int u, StepA (&a)[2]) {
  const int lane = threadIdx.x & 31, t = lane & 3;
  int da[16], db[16];
  asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
  wgmma_rs<0, 0>(da, a[kBuf].f[0], l.dq);
  wgmma_rs<1, 2>(da, a[kBuf].f[1], l.dq);
  wgmma_rs<1, 4>(da, a[kBuf].f[2], l.dq);
  if constexpr (kDoubled >= 0) wgmma_rs<1, 0>(da, a[kBuf].f[kDoubled], l.dqd);  // the doubled group again
  wgmma_rs<0, 6>(db, a[kBuf].f[3], l.dq);
  asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
  const float2 sk = a[kBuf].sk;
  const uint32_t sk2 = __byte_perm(__float_as_uint(sk.x), __float_as_uint(sk.y), 0x7632);
  // A block is fast when its 8 keys are: lanes 0-15 hold block 2w's, lanes 16-31 block 2w + 1's.
  const unsigned fast = __ballot_sync(0xFFFFFFFFu, sk.x != 0.0f && sk.y != 0.0f);
  const bool fast0 = (fast & 0xFFFFu) == 0xFFFFu, fast1 = (fast >> 16) == 0xFFFFu;
  asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
  pin(da);
  pin(db);
  keep(a[kBuf]);
  load_step(a[kBuf], l, u + 2);
  const uint32_t sc = chain_scores(da, db, r, sk2);  // keys 2p (low half) and 2p + 1 (high)
  const int room = l.room - 64 * u;
  if (t == 0 && (lane < 16 ? fast0 : fast1) && room >= 1) {
    uint16_t* o = l.out + 64 * u;
    if (room >= 2)
      *reinterpret_cast<uint32_t*>(o) = sc;
    else
      *o = uint16_t(sc & 0xFFFFu);
  }
  if (!(fast0 && fast1)) {
    const int w = (threadIdx.x >> 5) & 3;
    mark_slow((fast0 ? 1u : 0u) | (fast1 ? 2u : 0u), 8 * u + 2 * w, l.nb, l.slow);
  }
}

// The row's steps, two an iteration (the A buffers), each loading the keys two steps ahead.
template <int kDoubled>
__device__ __forceinline__ void step_loop(const LaneWalk& l, const RowConsts& r, int nsteps) {
  StepA a[2];
  load_step(a[0], l, 0);
  load_step(a[1], l, 1);
  for (int u = 0; u < nsteps; u += 2) {
    run_step<0, kDoubled>(l, r, u, a);
    run_step<1, kDoubled>(l, r, u + 1, a);
  }
}

// Every step of the row; blocks with a key off the fast path are left in sm.slow_blocks. A
// template per doubled group, not a test in the step: ptxas serialises every wgmma when one sits
// under a branch it cannot prove uniform (C7520, runs 91-92), and the doubled group's registers
// must be named at compile time.
__device__ __forceinline__ void score_steps(GroupSmem& sm, const SparseRowJob& j, const RowConsts& r,
                                            const SparseLogitsArgs& a, int doubled) {
  const int lane = threadIdx.x & 31, w = (threadIdx.x >> 5) & 3, g = lane >> 2, t = lane & 3;
  const int p = g & 3, b = g >> 2;
  LaneWalk l;
  l.frag = reinterpret_cast<const uint4*>(a.kdfrag + j.kblk * kKeyBlockBytes) + pair_slot(p, t);
  l.scale = reinterpret_cast<const float2*>(a.kbscale + j.kblk * 8 + 2 * p);
  asm volatile("" : "+l"(l.frag), "+l"(l.scale));
  l.ids = smem_addr(&sm.ids[2 * w + b]);
  const int col = 8 * (2 * w + b) + 2 * p;
  l.out = j.out + col;
  l.room = j.valid - col;
  l.nb = j.nb;
  l.dq = desc_lo(sm.q);
  l.dqd = desc_lo(sm.qd);
  l.slow = smem_addr(sm.slow_blocks);
  const int nsteps = (j.nb + 7) / 8;
  if (doubled == 0)
    step_loop<0>(l, r, nsteps);
  else if (doubled == 1)
    step_loop<1>(l, r, nsteps);
  else if (doubled == 2)
    step_loop<2>(l, r, nsteps);
  else
    step_loop<-1>(l, r, nsteps);
}

// Sets up a warpgroup's row: B (and the doubled group's, if any) and the block list staged,
// slow_blocks cleared (the caller syncs the group). The list's entries past nb repeat entry 0, a
// block of the row, so a step's loads need no test.
__device__ __forceinline__ void start_row(GroupSmem& sm, const SparseLogitsArgs& a, const SparseRowJob& j, int doubled) {
  stage_query(sm.q, a, j.row);
  if (doubled >= 0) stage_doubled(sm.qd, a, j.row, doubled);
  for (int i = threadIdx.x & 127; i < kTopkBlocks / 32; i += 128) sm.slow_blocks[i] = 0;
  // All loads first, then the stores: one memory latency, not one per entry (run 86: 3 % of the
  // kernel's samples waited on these).
  constexpr int kPer = (kTopkBlocks + kIdsPad + 127) / 128;
  const int safe = j.nb > 0 ? j.blocks[0] : 0, i0 = threadIdx.x & 127;
  int v[kPer];
#pragma unroll
  for (int k = 0; k < kPer; ++k) v[k] = i0 + 128 * k < j.nb ? j.blocks[i0 + 128 * k] : safe;
#pragma unroll
  for (int k = 0; k < kPer; ++k)
    if (i0 + 128 * k < kTopkBlocks + kIdsPad) sm.ids[i0 + 128 * k] = v[k];
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");  // B is read by wgmma (async proxy)
}

#endif  // DSA_SPARSE_WGMMA

// Blocks of four warps that score `rows` other rows, `parts` warps a row (score_other_rows).
__host__ __device__ constexpr int other_row_ctas(int rows, int parts) { return (rows * parts + 3) / 4; }

// The other rows' shared memory in a block of the wgmma kernel: sparse_mma's per-warp state and
// key ring, as its kernels hold them.
constexpr size_t kOtherRingOffset = (sizeof(sparse_mma::WarpSmem) * 4 + 127) / 128 * 128;
constexpr size_t kOtherSmemBytes = kOtherRingOffset + sizeof(sparse_mma::TileSlot) * 4 * sparse_mma::kDepth;

#ifdef DSA_SPARSE_WGMMA  // only the wgmma kernel calls it (no unused-function warning for sm_100a)
// A block of the other rows (table rows order[n_split..]): a part of a row a warp, on the
// mma.sync routes.
__device__ __forceinline__ void score_other_rows(const SparseLogitsArgs& a, int parts, uint8_t* smem) {
  static_assert(kGroups == 1 && sparse_mma::kWarps == 4, "four warps a block, as sparse_mma's kernels");
  auto* warp_smem = reinterpret_cast<sparse_mma::WarpSmem*>(smem);
  auto* ring = reinterpret_cast<sparse_mma::TileSlot(*)[sparse_mma::kDepth]>(smem + kOtherRingOffset);
  const int warp = threadIdx.x >> 5;
  SparseRowJob j;
  if (sparse_mma::warp_job(a, a.n_split, a.n - a.n_split, parts, blockIdx.x * 4 + warp, j))
    sparse_mma::score_other_part(a, j, warp_smem[warp], ring[warp]);
}
#endif

// kGroups consecutive split-route rows (order[kGroups blockIdx.x + group]) per CTA, one per
// warpgroup. kOther: the first blocks score the other rows instead (score_other_rows, `parts`
// warps a row), so that a small batch on both routes takes one launch (sparse_one_launch); they
// come first so that their longer walks start first.
template <bool kOther>
__global__ void __launch_bounds__(kGroups * 128, kCtasPerSm) sparse_wgmma_kernel(SparseLogitsArgs a, int parts) {
#ifdef DSA_SPARSE_WGMMA
  extern __shared__ __align__(1024) uint8_t smem_raw[];
  // The swizzle works on absolute shared addresses: B starts on a 1024-byte boundary.
  const unsigned base = unsigned(__cvta_generic_to_shared(smem_raw));
  uint8_t* aligned = smem_raw + ((1024 - (base & 1023)) & 1023);
  int cta = blockIdx.x;
  if constexpr (kOther) {
    const int other_ctas = other_row_ctas(a.n - a.n_split, parts);
    if (cta < other_ctas) return score_other_rows(a, parts, aligned);
    cta -= other_ctas;
  }
  Smem& all = *reinterpret_cast<Smem*>(aligned);
  const int group = kGroups == 1 ? 0 : int(threadIdx.x >> 7);
  const int w = (threadIdx.x >> 5) & 3;
  GroupSmem& sm = all.group[group];
  const int slot = cta * kGroups + group;
  if (slot >= a.n_split) return;  // whole warpgroups only: the barriers below are per group
  const SparseRowJob j = sparse_row_job(a, a.order[slot]);
  const int split = a.row_split[j.row];  // 1, or 2 + the doubled group (prep.cuh)
  const int doubled = split >= 2 ? split - 2 : -1;
  start_row(sm, a, j, doubled);
  group_sync(group);
  RowConsts r;
  load_consts(r, a, j.row);
  score_steps(sm, j, r, a, doubled);
  group_sync(group);  // slow_blocks complete
  // The slow route: blocks with a key off the fast path, every fourth one to each of the group's warps.
  score_slow_blocks(a, j, sm.slow_blocks, 0x11111111u << w, sm.slow[w]);
#endif
}

}  // namespace

bool sparse_wgmma_supported() { return wgmma_device(); }

void launch_sparse_wgmma(const SparseLogitsArgs& a, bool with_other) {
  if (a.n_split == 0) return;
  const unsigned split_ctas = unsigned((a.n_split + kGroups - 1) / kGroups);
  if (!with_other || a.n == a.n_split) {
    const int smem = int(sizeof(Smem)) + 1024;  // room to align (sparse_wgmma_kernel)
    DSA_CUDA_CHECK(cudaFuncSetAttribute(sparse_wgmma_kernel<false>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
    sparse_wgmma_kernel<false><<<split_ctas, kGroups * 128, smem>>>(a, 0);
    DSA_LAUNCH_CHECK("sparse_wgmma_kernel");
    return;
  }
  const int rows = a.n - a.n_split, parts = sparse_mma::row_parts(rows, kCtasPerSm);
  const unsigned other_ctas = unsigned(other_row_ctas(rows, parts));
  const int smem = int(std::max(sizeof(Smem), kOtherSmemBytes)) + 1024;
  DSA_CUDA_CHECK(cudaFuncSetAttribute(sparse_wgmma_kernel<true>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  sparse_wgmma_kernel<true><<<other_ctas + split_ctas, kGroups * 128, smem>>>(a, parts);
  DSA_LAUNCH_CHECK("sparse_wgmma_kernel<other rows too>");
}

}  // namespace dsa::gpu
