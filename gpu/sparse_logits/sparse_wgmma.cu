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
// keys as A and the row's 32 heads as B, both in shared memory. Keys as A is what lets any block
// of the row's list be a tile row: a block's swizzled record (launch_key_blocks' kswz) copied whole
// to a 1024-byte-aligned slot is one 8-row group of a K-major A tile with the 128-byte swizzle.
// Warp w copies the step's blocks 2w and 2w + 1, the tile rows 16w .. 16w + 15 that its own part
// of the wgmma reads, into the group's ring, so a step needs no barrier (each thread fences its
// copies into the async proxy; wgmma starts once the four warps arrive). The keys never pass
// through registers: no shared loads, 16 fewer registers. A CTA is one warpgroup, four CTAs an SM,
// so a step's shared addresses and descriptors are uniform. wgmma runs the int8 rate at N = 32
// (bench/micro/mma_rate.cu, run 52: 1.9 POPS against mma.sync's 1.27). Steps run in pairs: one
// wait, fence, vote and store test for two steps' wgmma (run_pair).
//
// Head order: column c of B is head (c%8)/2 + 8(c/8) + 4(c%2), so a thread's 8 columns (2t, 2t+1
// + 8j) are the heads t, t+4, ..., t+28 of chain lane t, in chain order, for its two keys (rows g
// and g+8 of its warp: key g of blocks 2w and 2w + 1). The whole bf16 chain of a key then runs in
// one thread, two keys per instruction.
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

// Warpgroups (table rows) per CTA. One: the CTA's shared memory is its row's, so every shared
// address and descriptor of a step is uniform and stays on the uniform datapath (with four rows a
// CTA, run 89's step moved both descriptors of each wgmma there: 16 R2UR).
constexpr int kGroups = 1;
constexpr int kCtasPerSm = 4 / kGroups;  // 16 warps an SM, 128 registers a thread
constexpr int kUnits = 4;                // ring depth in steps: two pairs
// The staged list's padding: steps run in fours and read up to kUnits - 1 steps ahead, 8 entries a step.
constexpr int kIdsPad = 8 * (2 * kUnits);
static_assert(8 * ((kTopkBlocks / 8 + kUnits - 1) / kUnits * kUnits + kUnits - 1) <= kTopkBlocks + kIdsPad,
              "the list's padding covers the last iteration's lookahead");

constexpr int kTileBytes = 8 * kKeyBlockBytes;  // a step's A tile: 8 records, 1024-byte aligned

// A group's ring of A tiles; after the steps it stages the slow route's keys, a part a warp.
union TileRing {
  uint8_t tile[kUnits][kTileBytes];
  SlowSmem slow[4];
};

struct alignas(1024) GroupSmem {
  uint8_t q[32 * 128];  // B: the row's split-form query, head-permuted, 128-byte swizzle
  // B of the doubled group's second k-step: each row's first 32 bytes (the rest is never read)
  uint8_t qd[32 * 128];
  TileRing ring;
  // Key scales of each slot: [copy][warp][key g][block of the warp]; lanes 16..31 write copy 1,
  // never read, so the copy needs no branch.
  float scale[kUnits][2][4][8][2];
  uint32_t slow_blocks[kTopkBlocks / 32];
  int32_t ids[kTopkBlocks + kIdsPad];  // the row's block list; entries past nb repeat entry 0
};
static_assert(offsetof(GroupSmem, ids) == offsetof(GroupSmem, slow_blocks) + sizeof(GroupSmem::slow_blocks),
              "run_step finds slow_blocks from the list's address");

struct Smem {
  GroupSmem group[kGroups];
};

#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define DSA_SPARSE_WGMMA 1

constexpr uint32_t kBf16x2NegZero = 0x80008000u;  // -0, -0: adding it leaves every value as it is

// A shared-memory matrix descriptor's low word (its address in 16-byte units); the high word is
// the same for every operand here: 1024-byte stride between 8-row groups, 128-byte swizzle.
__device__ __forceinline__ uint32_t desc_lo(const void* p) { return (unsigned(__cvta_generic_to_shared(p)) & 0x3FFFF) >> 4; }
constexpr uint32_t kDescHi = (1024 >> 4) | (1u << 30);

// d (+)= A * B for one 32-dim k-step: A = the step's 64 keys, B = 32 heads, both by descriptor
// (low words a + kOffA, b + kOffB). The offsets are added inside, so the compiler neither holds
// the 20 descriptors of four unrolled steps across the loop nor carries 64-bit adds.
template <int kAccumulate, int kOffA, int kOffB>
__device__ __forceinline__ void wgmma_keys(int (&d)[16], uint32_t a, uint32_t b) {
  asm volatile(
      "{\n.reg .pred p;\n.reg .b32 al, bl;\n.reg .b64 da, db;\nsetp.ne.b32 p, %18, 0;\n"
      "add.u32 al, %16, %19;\nadd.u32 bl, %17, %20;\nmov.b64 da, {al, %21};\nmov.b64 db, {bl, %21};\n"
      "wgmma.mma_async.sync.aligned.m64n32k32.s32.s8.s8 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, "
      "%13, %14, %15}, da, db, p;\n}\n"
      : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3]), "+r"(d[4]), "+r"(d[5]), "+r"(d[6]), "+r"(d[7]),
        "+r"(d[8]), "+r"(d[9]), "+r"(d[10]), "+r"(d[11]), "+r"(d[12]), "+r"(d[13]), "+r"(d[14]), "+r"(d[15])
      : "r"(a), "r"(b), "n"(kAccumulate), "n"(kOffA), "n"(kOffB), "n"(kDescHi));
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

// Where this lane copies its step data from and to: block 0 of the request, ring slot 0.
struct StepCopy {
  const int8_t* frag;   // this lane's 16 bytes of half 0 of the request's block 0 record
  const float* scale;   // block 0's scale of key lane & 7
  unsigned ring;        // this lane's bytes of the warp's first block, half 0, of slot 0's tile
  unsigned ring_scale;  // scale[0][lane >> 4][w][lane & 7][(lane >> 3) & 1]
  bool second;          // lanes 8-15 and 24-31 copy block 1's scale
};

// Both 16-byte pieces of this lane of one 1 KB block record (halves 512 bytes apart); the ring
// offset is an immediate, so a step's copies cost one address each. Through L2 only (.cg): run
// 88 measured 2 % less time than caching them in L1 (.ca), whose hits the four rows of an SM share.
template <unsigned kDst>
__device__ __forceinline__ void cp_record(unsigned ring, const int8_t* src) {
  asm volatile(
      "cp.async.cg.shared.global [%0+%2], [%1], 16;\n\t"
      "cp.async.cg.shared.global [%0+%3], [%1+512], 16;" ::"r"(ring),
      "l"(src), "n"(kDst), "n"(kDst + 512));
}
template <unsigned kDst>
__device__ __forceinline__ void cp_scale(unsigned ring, const float* src) {
  asm volatile("cp.async.ca.shared.global [%0+%2], [%1], 4;" ::"r"(ring), "l"(src), "n"(kDst));
}

// Starts copying this warp's blocks of two steps (slots kSlot, kSlot + 1) into the ring; one
// commit group, no branch (the list's padding repeats a block of the row).
template <int kSlot>
__device__ __forceinline__ void request_pair(const StepCopy& c, int2 i0, int2 i1) {
  static_assert(kKeyBlockBytes == 1024, "records 1 KB apart, halves 512 bytes apart");
  constexpr unsigned o = unsigned(kSlot) * unsigned(kTileBytes);
  cp_record<o>(c.ring, c.frag + int64_t(i0.x) * kKeyBlockBytes);
  cp_record<o + 1024>(c.ring, c.frag + int64_t(i0.y) * kKeyBlockBytes);
  cp_record<o + kTileBytes>(c.ring, c.frag + int64_t(i1.x) * kKeyBlockBytes);
  cp_record<o + kTileBytes + 1024>(c.ring, c.frag + int64_t(i1.y) * kKeyBlockBytes);
  cp_scale<unsigned(kSlot * sizeof(GroupSmem::scale[0]))>(c.ring_scale, c.scale + int64_t(c.second ? i0.y : i0.x) * 8);
  cp_scale<unsigned((kSlot + 1) * sizeof(GroupSmem::scale[0]))>(c.ring_scale, c.scale + int64_t(c.second ? i1.y : i1.x) * 8);
  cp_async_commit();
}

// The bf16 chain of steps 0..7 for this thread's two keys without their scales, the lane sums,
// then the scales: every thread of a quad ends with the scores of keys g (low half) and g + 8
// (high half).
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
    acc = hw_fma_bf16x2(hw_relu_bf16x2(f[0], f[1]), r.w2[s], acc);
  }
  acc = hw_fma_bf16x2(acc, kBf16x2One, __shfl_xor_sync(0xFFFFFFFFu, acc, 2));  // lanes 0+2, 1+3
  acc = hw_fma_bf16x2(acc, kBf16x2One, __shfl_xor_sync(0xFFFFFFFFu, acc, 1));  // (0+2) + (1+3)
  return hw_fma_bf16x2(acc, sk2, kBf16x2NegZero);  // the key scale last (exact: see the top)
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

// What a warp's steps share: its copies, its scales, its outputs and the row's bounds.
struct StepCtx {
  StepCopy copy;
  unsigned scale;    // this thread's key scales of slot 0: scale[0][0][w][g][0..1]
  unsigned ids;      // the staged list's entry 2w (this warp's first block of step 0)
  uint16_t* out;     // this lane's first key of step 0: column 16w + g (the second is 8 further)
  int room;          // valid - that column: the first key is stored while room >= 1, the second 9
  int nb;
  uint32_t da, dq;   // descriptor low words: slot 0's A tile, B
  uint32_t dqd;      // the doubled group's B
  int doubled;       // that group (-1: none); its A is 2 * doubled further into the tile
};

// The k-steps of one tile (ring slot kSlot) into da, db.
template <int kSlot, bool kDoubled>
__device__ __forceinline__ void tile_mma(const StepCtx& c, int (&da)[16], int (&db)[16]) {
  // Descriptor addresses count 16 bytes: +2 is the next 32 bytes of K, a slot 512.
  constexpr int kA = kSlot * kTileBytes / 16;
  wgmma_keys<0, kA, 0>(da, c.da, c.dq);
  wgmma_keys<1, kA + 2, 2>(da, c.da, c.dq);
  wgmma_keys<1, kA + 4, 4>(da, c.da, c.dq);
  if (kDoubled) wgmma_keys<1, kA, 0>(da, c.da + 2u * unsigned(c.doubled), c.dqd);  // the doubled group again
  wgmma_keys<0, kA + 6, 6>(db, c.da, c.dq);
}

// Stores tile kSlot's two fast keys of this lane (sc: key g low half, g + 8 high half).
template <int kSlot>
__device__ __forceinline__ void store_tile(const StepCtx& c, int u0, uint16_t* out, int room, uint32_t sc, bool fast0,
                                           bool fast1) {
  const int t = threadIdx.x & 3;
  if (t == 0 && fast0 && room - 64 * kSlot >= 1) out[64 * kSlot] = uint16_t(sc & 0xFFFFu);
  if (t == 0 && fast1 && room - 64 * kSlot >= 9) out[64 * kSlot + 8] = uint16_t(sc >> 16);
  if (!(fast0 && fast1)) {  // slow_blocks lies just before the list: its entry 2w is 8w bytes in
    const int w = (threadIdx.x >> 5) & 3;
    mark_slow((fast0 ? 1u : 0u) | (fast1 ? 2u : 0u), 8 * (u0 + kSlot) + 2 * w, c.nb,
              c.ids - 8u * unsigned(w) - unsigned(sizeof(GroupSmem::slow_blocks)));
  }
}

// Steps u0 + kSlot and u0 + kSlot + 1 of a row (ring slots kSlot, kSlot + 1; u0 a multiple of
// kUnits, so every ring and list offset is an immediate): starts the copies of the next two steps
// into the other two slots (the last pair's, whose wgmma has completed), waits for its own, scores
// this warp's four blocks and stores their fast keys. Two steps a wait: the step's fixed work (the
// waits, the fence, the votes, the store tests) is shared by 32 keys, not 16. Runs 107-108:
// 5.19-5.40 ms a consumer against 5.38-5.59 one step at a time (run 110's profile: 245-259
// instructions a pair against 132-154 a step, 8 % fewer in all, for 3 % less time). out and room:
// c.out and c.room moved to step u0, so a step's stores take immediate offsets.
template <int kSlot, bool kDoubled>
__device__ __forceinline__ void run_pair(const StepCtx& c, const RowConsts& r, int u0, uint16_t* out, int room) {
  constexpr int kNext = (kSlot + 2) % kUnits;
  const unsigned ids = c.ids + unsigned(u0) * 32;  // 8 entries (32 bytes) a step
  // The last pair's scale reads (other lanes' copies into those slots) before this lane's copies
  // overwrite them: without it racecheck reported the slots (run 110; the votes in between order
  // them in practice, but a vote is not a memory barrier).
  __syncwarp();
  request_pair<kNext>(c.copy, lds64i(ids + (kSlot + 2) * 32), lds64i(ids + (kSlot + 3) * 32));
  cp_async_wait<1>();  // this pair has landed (the one just requested may not)
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");  // this thread's copies, for wgmma
  __syncwarp();                 // the scales: lanes read what other lanes copied
  const float2 sk0 = lds64f(c.scale + unsigned(kSlot * sizeof(GroupSmem::scale[0])));
  const float2 sk1 = lds64f(c.scale + unsigned((kSlot + 1) * sizeof(GroupSmem::scale[0])));
  int da0[16], db0[16], da1[16], db1[16];
  asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
  tile_mma<kSlot, kDoubled>(c, da0, db0);
  tile_mma<kSlot + 1, kDoubled>(c, da1, db1);
  asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
  const uint32_t sk20 = __byte_perm(__float_as_uint(sk0.x), __float_as_uint(sk0.y), 0x7632);
  const uint32_t sk21 = __byte_perm(__float_as_uint(sk1.x), __float_as_uint(sk1.y), 0x7632);
  const bool f00 = __all_sync(0xFFFFFFFFu, sk0.x != 0.0f), f01 = __all_sync(0xFFFFFFFFu, sk0.y != 0.0f);
  const bool f10 = __all_sync(0xFFFFFFFFu, sk1.x != 0.0f), f11 = __all_sync(0xFFFFFFFFu, sk1.y != 0.0f);
  asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
  pin(da0);
  pin(db0);
  pin(da1);
  pin(db1);
  const uint32_t sc0 = chain_scores(da0, db0, r, sk20);
  const uint32_t sc1 = chain_scores(da1, db1, r, sk21);
  store_tile<kSlot>(c, u0, out, room, sc0, f00, f01);
  store_tile<kSlot + 1>(c, u0, out, room, sc1, f10, f11);
}

// The row's steps, kUnits an iteration. kDoubled: the row has a doubled group. A template flag, not
// a test in the step: ptxas serialises every wgmma when one sits under a branch it cannot prove
// uniform (C7520; runs 91-92: 6.42-6.49 ms a consumer with the test, 6.06-6.19 with the flag).
template <bool kDoubled>
__device__ __forceinline__ void step_loop(const StepCtx& c, const RowConsts& r, int nsteps) {
  uint16_t* out = c.out;
  int room = c.room;
  for (int u0 = 0; u0 < nsteps; u0 += kUnits, out += 64 * kUnits, room -= 64 * kUnits) {
    // Opaque: else the compiler rebuilds each store's 64-bit address from the row's base (run 90's
    // SASS: about 12 instructions a step).
    asm volatile("" : "+l"(out));
    run_pair<0, kDoubled>(c, r, u0, out, room);
    run_pair<2, kDoubled>(c, r, u0, out, room);
  }
}

// Every step of the row from the group's ring (this warp's rows of it), kUnits steps an iteration (the steps
// past the row's last copy the list's padding and store nothing); blocks with a key off the fast
// path are left in sm.slow_blocks.
__device__ __forceinline__ void score_steps(GroupSmem& sm, const SparseRowJob& j, const RowConsts& r,
                                            const SparseLogitsArgs& a, int doubled) {
  const int lane = threadIdx.x & 31, w = (threadIdx.x >> 5) & 3, g = lane >> 2;
  StepCtx c;
  c.copy.frag = a.kswz + j.kblk * kKeyBlockBytes + lane * 16;
  c.copy.scale = a.kbscale + j.kblk * 8 + (lane & 7);
  c.copy.ring = smem_addr(&sm.ring.tile[0][2 * w * kKeyBlockBytes + lane * 16]);
  c.copy.ring_scale = smem_addr(&sm.scale[0][lane >> 4][w][lane & 7][(lane >> 3) & 1]);
  c.copy.second = (lane & 8) != 0;
  // Opaque, so the compiler keeps one base a copy (one IMAD.WIDE each) instead of re-deriving
  // kswz + kblk + lane + id every step (run 85's SASS: three more instructions a copy).
  asm volatile("" : "+l"(c.copy.frag), "+l"(c.copy.scale));
  c.scale = smem_addr(&sm.scale[0][0][w][g][0]);
  c.ids = smem_addr(&sm.ids[2 * w]);
  const int col = 16 * w + g;
  c.out = j.out + col;
  c.room = j.valid - col;
  c.nb = j.nb;
  c.da = desc_lo(sm.ring.tile[0]);
  c.dq = desc_lo(sm.q);
  c.dqd = desc_lo(sm.qd);
  c.doubled = doubled;
  const int nsteps = (j.nb + 7) / 8;
  static_assert(kUnits == 4, "run_pair's slots below");
  request_pair<0>(c.copy, lds64i(c.ids), lds64i(c.ids + 32));
  if (c.doubled >= 0)
    step_loop<true>(c, r, nsteps);
  else
    step_loop<false>(c, r, nsteps);
  cp_async_wait<0>();
}

// Sets up a warpgroup's row: B (and the doubled group's, if any) and the block list staged,
// slow_blocks cleared (the caller syncs the group). The list's entries past nb repeat entry 0, a
// block of the row, so a step's copies need no test.
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

// kGroups consecutive split-route rows (order[kGroups blockIdx.x + group]) per CTA, one per warpgroup.
__global__ void __launch_bounds__(kGroups * 128, kCtasPerSm) sparse_wgmma_kernel(SparseLogitsArgs a) {
#ifdef DSA_SPARSE_WGMMA
  extern __shared__ __align__(1024) uint8_t smem_raw[];
  // The swizzle works on absolute shared addresses: B starts on a 1024-byte boundary.
  const unsigned base = unsigned(__cvta_generic_to_shared(smem_raw));
  Smem& all = *reinterpret_cast<Smem*>(smem_raw + ((1024 - (base & 1023)) & 1023));
  const int group = kGroups == 1 ? 0 : int(threadIdx.x >> 7);
  const int w = (threadIdx.x >> 5) & 3;
  GroupSmem& sm = all.group[group];
  const int slot = blockIdx.x * kGroups + group;
  if (slot >= a.n_split) return;  // whole warpgroups only: the barriers below are per group
  const SparseRowJob j = sparse_row_job(a, a.order[slot]);
  const int split = a.row_split[j.row];  // 1, or 2 + the doubled group (prep.cuh)
  const int doubled = split >= 2 ? split - 2 : -1;
  start_row(sm, a, j, doubled);
  group_sync(group);
  RowConsts r;
  load_consts(r, a, j.row);
  score_steps(sm, j, r, a, doubled);
  group_sync(group);  // slow_blocks complete; each warp's ring is idle (its copies have landed)
  // The slow route: blocks with a key off the fast path, every fourth one to each of the group's warps.
  score_slow_blocks(a, j, sm.slow_blocks, 0x11111111u << w, sm.ring.slow[w]);
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
