#include <cstddef>  // offsetof

#include "gpu/common/bf16.cuh"
#include "gpu/common/check.cuh"
#include "gpu/common/cp_async.cuh"
#include "gpu/common/wgmma_device.cuh"
#include "gpu/sparse_logits/sparse_logits.cuh"
#include "gpu/sparse_logits/row_job.cuh"
#include "gpu/sparse_logits/sparse_slow.cuh"

// Paged sparse logits of the split-route rows on Hopper's wgmma (sm_90a), bit-identical to the
// reference (docs/semantics.md, "Sparse score").
//
// One warpgroup scores one table row, 64 candidates (8 blocks) a step: wgmma m64n32k32 with the
// keys as A, from registers, and the row's 32 heads as B, in shared memory. Keys as A is what
// lets any block of the row's list be a tile row: each warp copies the two blocks it owns into its
// own cp.async ring as pair-order records (launch_key_blocks' kdfrag), where lane (g, t) reads
// keys 2p and 2p + 1 (p = g % 4) of block g / 4 as wgmma's A rows g and g + 8, one 16-byte read
// per k-step group without register moves or bank conflicts, so a step needs no barrier; the four rows of a CTA are adjacent rows of one request and share most
// blocks through L1. wgmma runs the int8 rate at N = 32 (bench/micro/mma_rate.cu, run 52: 1.9
// POPS against mma.sync's 1.27).
//
// Head order: column c of B is head (c%8)/2 + 8(c/8) + 4(c%2), so a thread's 8 columns (2t, 2t+1
// + 8j) are the heads t, t+4, ..., t+28 of chain lane t, in chain order, for its two keys (rows g
// and g+8 of its warp: adjacent positions, stored as one bf16 pair). The whole bf16 chain of a key then runs in one thread, two keys per
// instruction.
//
// Epilogue per head cell (split route of fp4_mma.cuh): S = A*mA + B*mB (two IMAD, the float bits
// of 2^23 added on the way), S = bits - 2^23 exactly (|S| < 2^23); then per two keys: relu and
// bf16 rounding (cvt.rn.relu.bf16x2), the key scale sk applied in bf16, one fma of the chain with
// the weight w' = bf16(w) * sq. Exact: the reference's a_h = bf16(S sq sk) equals bf16(S) sq sk
// because S sq sk >= 2^-90 stays normal (|S| >= 1, sq and sk within 2^+-45), so a_h * w equals
// (bf16(S) sk) * w' as real numbers and the chain's single roundings see the same values; the
// query prep admits a split row only when every w' is a normal bf16 or zero (folds_into_weight).
namespace dsa::gpu {
namespace {
using namespace sparse_slow;

constexpr int kGroups = 4;               // warpgroups (table rows) per CTA: 16 warps, one CTA per SM
constexpr int kUnits = 4;                // ring depth per warp in steps (a power of two)

// One warp's share of one step: its two blocks' fragments and key scales.
struct UnitSlot {
  uint4 frag[2][2][32];  // [block][half][lane]
  float scale[2][2][8];  // [copy][block][key]: lanes 16..31 write copy 1, never read
};

// A warp's ring; after the steps its first bytes stage the slow route's keys.
union WarpRing {
  UnitSlot unit[kUnits];
  SlowSmem slow;
};

struct alignas(1024) GroupSmem {
  uint8_t q[32 * 128];  // B: the row's split-form query, head-permuted, 128-byte swizzle
  uint32_t slow_blocks[kTopkBlocks / 32];
  WarpRing ring[4];
};

struct Smem {
  GroupSmem group[kGroups];
};

#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define DSA_SPARSE_WGMMA 1

constexpr uint32_t kBf16x2NegZero = 0x80008000u;  // -0, -0: adding it leaves every value as it is

__device__ __forceinline__ uint64_t smem_desc(const void* p) {
  const uint32_t a = unsigned(__cvta_generic_to_shared(p));
  return uint64_t((a & 0x3FFFF) >> 4) | (uint64_t(1024 >> 4) << 32) | (uint64_t(1) << 62);  // 128B swizzle
}

// d (+)= A * B for one 32-dim k-step: A = this warp's 16 keys (registers), B = 32 heads.
template <int kAccumulate>
__device__ __forceinline__ void wgmma_keys(int (&d)[16], const uint32_t (&a)[4], uint64_t db) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %21, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n32k32.s32.s8.s8 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, "
      "%13, %14, %15}, {%16, %17, %18, %19}, %20, p;\n}\n"
      : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3]), "+r"(d[4]), "+r"(d[5]), "+r"(d[6]), "+r"(d[7]),
        "+r"(d[8]), "+r"(d[9]), "+r"(d[10]), "+r"(d[11]), "+r"(d[12]), "+r"(d[13]), "+r"(d[14]), "+r"(d[15])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "n"(kAccumulate));
}

// Pins the accumulators around the asynchronous region so no access moves across it.
__device__ __forceinline__ void pin(int (&d)[16]) {
#pragma unroll
  for (int i = 0; i < 16; ++i) asm volatile("" : "+r"(d[i])::"memory");
}

__device__ __forceinline__ void group_sync(int group) {
  asm volatile("bar.sync %0, 128;" ::"r"(group + 1) : "memory");
}

// The head in column c of B (see the head order above).
__device__ __forceinline__ int head_of_column(int c) { return ((c & 7) >> 1) + 8 * (c >> 3) + 4 * (c & 1); }

// Stages the row's split-form query as B (rows = columns c, 128-byte swizzle) and returns this
// thread's constants of chain steps s = 0..7 (head t + 4s).
struct RowConsts {
  int ma[8], mb[8];
  uint32_t w2[8];  // w' = bf16(weight) * 2^(base-128) as bf16, twice
};

__device__ __forceinline__ void stage_query(uint8_t* q, const SparseLogitsArgs& a, int row) {
  const int i = threadIdx.x & 127;
  const int c = i >> 2, chunk = (i & 3) * 2;  // column c, 16-byte chunks chunk and chunk + 1
  const uint4* src = reinterpret_cast<const uint4*>(a.qsplit + int64_t(row) * 4096 + head_of_column(c) * 128);
#pragma unroll
  for (int k = 0; k < 2; ++k)
    *reinterpret_cast<uint4*>(q + c * 128 + (((chunk + k) ^ (c & 7)) << 4)) = src[chunk + k];
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

// Where this lane copies its step data from and to (blocks of the row's request, ring slot 0).
struct UnitCopy {
  const int8_t* frag;   // block 0 of the request, this lane's 16 bytes of half 0
  const float* scale;   // block 0's scale of key lane & 7
  unsigned ring;        // this lane's bytes of block 0, half 0, slot 0
  unsigned ring_scale;  // scale[lane >> 4][(lane >> 3) & 1][lane & 7] of slot 0
  int safe;             // a block of the row: what entries past its list copy (never stored)
};

// Starts copying this warp's blocks of step u (list entries first, first + 1; their ids in
// ids) into slot u % kUnits; one commit group, no branch: entries past the row's nb blocks copy
// block `safe` instead.
__device__ __forceinline__ void request_unit(const UnitCopy& c, int u, int2 ids, int first, int nb) {
  const int lane = threadIdx.x & 31;
  const unsigned slot = unsigned(u & (kUnits - 1)) * unsigned(sizeof(UnitSlot));
  const int b0 = first < nb ? ids.x : c.safe, b1 = first + 1 < nb ? ids.y : c.safe;
  const int8_t* s0 = c.frag + (int64_t(b0) << 10);
  const int8_t* s1 = c.frag + (int64_t(b1) << 10);
  static_assert(kKeyBlockBytes == 1024, "blocks addressed by shift");
  cp_async16(c.ring + slot, s0);
  cp_async16(c.ring + slot + 512, s0 + 512);
  cp_async16(c.ring + slot + 1024, s1);
  cp_async16(c.ring + slot + 1536, s1 + 512);
  cp_async4(c.ring_scale + slot, c.scale + int64_t((lane & 8) ? b1 : b0) * 8);
  cp_async_commit();
}

// The bf16 chain of steps 0..7 for this thread's two keys, then the lane sums: every thread of
// a quad ends with the scores of keys g (low half) and g + 8 (high half).
__device__ __forceinline__ uint32_t chain_scores(const int (&da)[16], const int (&db)[16], const RowConsts& r,
                                                 uint32_t sk2) {
  uint32_t acc = 0;  // +0, +0
#pragma unroll
  for (int s = 0; s < 8; ++s) {
    const int e = 4 * (s >> 1) + (s & 1);  // key g; key g + 8 at e + 2
    float f[2];
#pragma unroll
    for (int k = 0; k < 2; ++k) {
      const int bits = da[e + 2 * k] * r.ma[s] + (db[e + 2 * k] * r.mb[s] + 0x4B000000);  // 2^23 + S
      f[k] = __fadd_rn(__int_as_float(bits), -0x1p23f);                                   // S, exact
    }
    const uint32_t av = hw_fma_bf16x2(hw_relu_bf16x2(f[0], f[1]), sk2, kBf16x2NegZero);
    acc = hw_fma_bf16x2(av, r.w2[s], acc);
  }
  acc = hw_fma_bf16x2(acc, kBf16x2One, __shfl_xor_sync(0xFFFFFFFFu, acc, 2));  // lanes 0+2, 1+3
  return hw_fma_bf16x2(acc, kBf16x2One, __shfl_xor_sync(0xFFFFFFFFu, acc, 1));  // (0+2) + (1+3)
}


__device__ __forceinline__ int2 unit_ids(const SparseRowJob& j, int first) {
  return first < j.nb ? *reinterpret_cast<const int2*>(j.blocks + first) : make_int2(0, 0);
}

// This lane's keys of one step, read back from the warp's ring slot at `slot`: keys 2p and 2p + 1
// (p = g % 4) of the warp's block g / 4 as wgmma's A fragment of each k-step group (rows g and
// g + 8; the pair-order records of launch_key_blocks' kdfrag), and their scales.
struct StepRegs {
  uint4 frag[4];
  float2 sk;
};
__device__ __forceinline__ StepRegs load_step(unsigned slot) {
  const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
  const unsigned rec = slot + unsigned(g >> 2) * kKeyBlockBytes;
  StepRegs r;
#pragma unroll
  for (int gr = 0; gr < 4; ++gr) r.frag[gr] = lds128(rec + unsigned(16 * gr + pair_slot(g & 3, t)) * 16);
  r.sk = lds64f(slot + unsigned(offsetof(UnitSlot, scale)) + unsigned((g >> 2) * 8 + 2 * (g & 3)) * 4);
  return r;
}

// One step of a row: this warp's two blocks (list entries i0, i0 + 1) already in registers.
// under() runs between the wgmma's commit and its wait. Scores go to j.out, two adjacent positions
// a lane; blocks with a key off the fast path are marked in slow_blocks.
template <class Under>
__device__ __forceinline__ void score_step(const StepRegs& k, uint64_t dq, const RowConsts& r, const SparseRowJob& j,
                                           int i0, uint32_t* slow_blocks, Under under) {
  const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
  uint32_t ak[4][4];
#pragma unroll
  for (int gr = 0; gr < 4; ++gr) {
    ak[gr][0] = k.frag[gr].x;
    ak[gr][1] = k.frag[gr].y;
    ak[gr][2] = k.frag[gr].z;
    ak[gr][3] = k.frag[gr].w;
  }
  int da[16], db[16];
  asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
  wgmma_keys<0>(da, ak[0], dq);
  wgmma_keys<1>(da, ak[1], dq + 2);  // +2 in the descriptor: the next 32 bytes of K
  wgmma_keys<1>(da, ak[2], dq + 4);
  wgmma_keys<0>(db, ak[3], dq + 6);
  asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
  under();
  const uint32_t sk2 = __byte_perm(__float_as_uint(k.sk.x), __float_as_uint(k.sk.y), 0x7632);
  // Block 0's keys sit in lanes 0-15, block 1's in lanes 16-31.
  const unsigned fast_lanes = __ballot_sync(0xFFFFFFFFu, k.sk.x != 0.0f && k.sk.y != 0.0f);
  const bool fast0 = (fast_lanes & 0xFFFFu) == 0xFFFFu, fast1 = (fast_lanes >> 16) == 0xFFFFu;
  asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
  pin(da);
  pin(db);
  const uint32_t sc = chain_scores(da, db, r, sk2);  // keys 2p (low half) and 2p + 1 (high half)
  const int col = 8 * (i0 + (g >> 2)) + 2 * (g & 3);
  if (t == 0 && ((g >> 2) ? fast1 : fast0)) {
    if (col + 1 < j.valid)
      *reinterpret_cast<uint32_t*>(j.out + col) = sc;
    else if (col < j.valid)
      j.out[col] = uint16_t(sc & 0xFFFFu);
  }
  if (lane == 0) {
    if (!fast0 && i0 < j.nb) atomicOr(&slow_blocks[i0 >> 5], 1u << (i0 & 31));
    if (!fast1 && i0 + 1 < j.nb) atomicOr(&slow_blocks[(i0 + 1) >> 5], 1u << ((i0 + 1) & 31));
  }
}

// Every step of the row from the warp's own cp.async ring; blocks with a key off the fast path
// are left in sm.slow_blocks.
__device__ __forceinline__ void score_steps(GroupSmem& sm, const SparseRowJob& j, const RowConsts& r,
                                            const SparseLogitsArgs& a) {
  const int lane = threadIdx.x & 31, w = (threadIdx.x >> 5) & 3;
  UnitCopy c;
  c.frag = a.kdfrag + j.kblk * kKeyBlockBytes + lane * 16;
  c.scale = a.kbscale + j.kblk * 8 + (lane & 7);
  c.ring = smem_addr(&sm.ring[w].unit[0].frag[0][0][lane]);
  c.ring_scale = smem_addr(&sm.ring[w].unit[0].scale[lane >> 4][(lane >> 3) & 1][lane & 7]);
  c.safe = j.nb > 0 ? j.blocks[0] : 0;
  const unsigned mine = smem_addr(&sm.ring[w].unit[0]);
  const uint64_t dq = smem_desc(sm.q);
  const int nsteps = (j.nb + 7) / 8;
  // Step u's ids are loaded one request ahead of their copies.
  int2 next = unit_ids(j, 2 * w);
#pragma unroll
  for (int u = 0; u < kUnits - 1; ++u) {
    const int2 ids = next;
    next = unit_ids(j, 8 * (u + 1) + 2 * w);
    request_unit(c, u, ids, 8 * u + 2 * w, j.nb);
  }
  for (int u = 0; u < nsteps; ++u) {
    cp_async_wait<kUnits - 2>();  // step u has landed (the groups of steps u + 1 .. u + kUnits - 2 may not)
    __syncwarp();  // the scales were copied by lanes 0..15 (copy 0)
    const unsigned s = mine + unsigned(u & (kUnits - 1)) * unsigned(sizeof(UnitSlot));
    score_step(load_step(s), dq, r, j, 8 * u + 2 * w, sm.slow_blocks, [&] {
      // under the wgmma: the copies of step u + kUnits - 1, into the slot step u - 1 used
      const int ahead = u + kUnits - 1;
      const int2 ids = next;
      next = unit_ids(j, 8 * (ahead + 1) + 2 * w);
      request_unit(c, ahead, ids, 8 * ahead + 2 * w, j.nb);
    });
  }
  cp_async_wait<0>();
}

// Sets up a warpgroup's row: B staged, slow_blocks cleared (the caller syncs the group), the
// thread's constants.
__device__ __forceinline__ void start_row(uint8_t* q, uint32_t* slow_blocks, const SparseLogitsArgs& a, int row) {
  stage_query(q, a, row);
  for (int i = threadIdx.x & 127; i < kTopkBlocks / 32; i += 128) slow_blocks[i] = 0;
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");  // B is read by wgmma (async proxy)
}

#endif  // DSA_SPARSE_WGMMA

// 4 consecutive split-route rows (order[4 blockIdx.x + group]) per CTA, one per warpgroup.
__global__ void __launch_bounds__(kGroups * 128, 1) sparse_wgmma_kernel(SparseLogitsArgs a) {
#ifdef DSA_SPARSE_WGMMA
  extern __shared__ __align__(1024) uint8_t smem_raw[];
  // The swizzle works on absolute shared addresses: B starts on a 1024-byte boundary.
  const unsigned base = unsigned(__cvta_generic_to_shared(smem_raw));
  Smem& all = *reinterpret_cast<Smem*>(smem_raw + ((1024 - (base & 1023)) & 1023));
  const int group = threadIdx.x >> 7;
  const int w = (threadIdx.x >> 5) & 3;
  GroupSmem& sm = all.group[group];
  const int slot = blockIdx.x * kGroups + group;
  if (slot >= a.n_split) return;  // whole warpgroups only: the barriers below are per group
  const SparseRowJob j = sparse_row_job(a, a.order[slot]);
  start_row(sm.q, sm.slow_blocks, a, j.row);
  group_sync(group);
  RowConsts r;
  load_consts(r, a, j.row);
  score_steps(sm, j, r, a);
  group_sync(group);  // slow_blocks complete; each warp's ring is idle (its copies have landed)
  // The slow route: blocks with a key off the fast path, every fourth one to each of the group's warps.
  score_slow_blocks(a, j, sm.slow_blocks, 0x11111111u << w, sm.ring[w].slow);
#endif
}

}  // namespace

bool sparse_wgmma_supported() { return wgmma_device(); }

void launch_sparse_wgmma(const SparseLogitsArgs& a) {
  if (a.n_split == 0) return;
  const int smem = int(sizeof(Smem)) + 1024;  // room to align (sparse_wgmma_kernel)
  DSA_CUDA_CHECK(cudaFuncSetAttribute(sparse_wgmma_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  sparse_wgmma_kernel<<<unsigned((a.n_split + kGroups - 1) / kGroups), kGroups * 128, smem>>>(a);
  DSA_LAUNCH_CHECK("sparse_wgmma_kernel");
}

}  // namespace dsa::gpu
