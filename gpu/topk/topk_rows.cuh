#pragma once
// The rows the top-k launchers select from (Src of radix_topk.cuh and select_topk.cuh) and what
// a selection reports besides its picks (Kth), shared by topk.cu and source_select.cu.
#include <cstdint>

#include "core/constants.hpp"
#include "gpu/topk/radix_topk.cuh"
#include "gpu/topk/select_topk.cuh"  // kSelectThreads

namespace dsa::gpu {

struct DenseRows {
  const float* data;
  int64_t ld;
  const int32_t* lens;
  __device__ int len(int row) const { return lens[row]; }
  __device__ uint32_t key(int row, int i) const { return order_f32(data[int64_t(row) * ld + i]); }
};

// Rows picked by a list: table row i is dense row rows[i], or no row when rows[i] == nrows (its
// block writes nothing: radix_topk_kernel's no_row).
struct DenseRowsListed {
  const float* data;
  int64_t ld;
  const int32_t* lens;
  const int32_t* rows;
  int nrows;
  __device__ int len(int i) const { return rows[i] < nrows ? lens[rows[i]] : 0; }
  __device__ uint32_t key(int i, int c) const { return order_f32(data[int64_t(rows[i]) * ld + c]); }
};

// Level one's reports, each optional (null: not wanted): the k-th largest block key of each row
// it selected (the smallest key of the published blocks), for the own top-k's check at k = 2048,
// and the published blocks' keys in table order (ordered integers, [rows][2048], rows counted
// from the launch's first), for the own top-k's narrowing (own_narrow.cuh). A row of at most 2048
// blocks (all published) gets neither.
struct LevelOneReport {
  static constexpr bool kUsed = true;
  uint32_t* kth;
  uint32_t* pick_keys;
  __device__ bool wanted() const { return kth != nullptr; }
  __device__ void picked(int row, uint32_t v) const {
    if (kth != nullptr) kth[row] = v;
  }
  __device__ void took_all(int row) const {
    if (kth != nullptr) kth[row] = 0u;  // every block published: never read
  }
  __device__ bool wants_pick_keys() const { return pick_keys != nullptr; }
  // Thread t: picks 4t..4t + 3 (written by the block before the barrier that precedes this), their
  // keys read back from the row in global memory, where the row copy left them in L2.
  template <class Src>
  __device__ void store_pick_keys(const Src& src, int row, const int32_t* picks) const {
    static_assert(kTopkBlocks == 4 * kSelectThreads, "four picks a thread");
    const int4 id = reinterpret_cast<const int4*>(picks)[threadIdx.x];
    const uint4 v = make_uint4(src.key(row, id.x), src.key(row, id.y), src.key(row, id.z), src.key(row, id.w));
    reinterpret_cast<uint4*>(pick_keys + int64_t(row) * kTopkBlocks)[threadIdx.x] = v;
  }
};

// The own top-k's check, on the k-th largest candidate key (k = 2048 only: for k <= 2047 the
// candidates always hold the row's top-k, docs/semantics.md): the top-k over the published
// candidates is the row's top-k when that key beats the smallest published block key (every
// unpublished position scores at most its block's key, which is at most that one) or every block
// is published. list[row] = row where it may not be (the full-row pass takes it), nrows where it
// is: every entry is written, so the list needs no clearing and no count.
struct OwnCheck {
  static constexpr bool kUsed = true;
  const int32_t* L;
  const uint32_t* level_kth;
  int32_t* list;
  int nrows;
  int k;
  __device__ bool wanted() const { return k >= kTopkBlocks; }  // the k-th key decides nothing below
  __device__ void picked(int row, uint32_t kth) const {
    const bool full = k >= kTopkBlocks && (L[row] + 7) / 8 > kTopkBlocks && !(kth > level_kth[row]);
    list[row] = full ? row : nrows;
  }
  __device__ void took_all(int row) const { list[row] = nrows; }
};

struct BlockKeyRows {
  static constexpr int kPer = 64;  // block keys a thread: rows of up to 32768 blocks (262144 positions)
  static constexpr int kBufferBytes = kPer * kSelectThreads * int(sizeof(float));
  const float* data;
  int64_t ld;
  const int32_t* L;
  __device__ int len(int row) const { return (L[row] + 7) / 8; }
  // The stream kernel's contiguous row: n keys from data + row * ld (ld % 4 == 0, so the bytes
  // rounded up to 16 stay inside the row).
  __device__ const void* row_data(int row) const { return data + int64_t(row) * ld; }
  __device__ unsigned row_bytes(int n) const { return unsigned(n + 3) / 4 * 16; }
  // A thread's 64 keys are 256 contiguous bytes of the copied row, so 16-byte reads in column
  // order would put a warp's lanes 256 bytes apart, on the same banks (8-way conflicts: run 48's
  // profile of this kernel). Lane l reads its chunks starting at chunk l % 16 instead, so 8
  // neighbouring lanes hit 8 different banks; key[j] then holds column first + (j + 4 l) % 64.
  __device__ int keys_from(const void* buf, int first, int n, uint32_t (&key)[kPer]) const {
    static_assert(kPer == 64, "16 chunks of 4 keys");
    const float4* p = reinterpret_cast<const float4*>(static_cast<const float*>(buf) + first);
    const int lane = threadIdx.x & 31, lim = n - first;  // columns first + c with c < lim exist
    if (lim >= kPer) {  // every column exists (all threads but the row's last few): no tests
#pragma unroll
      for (int q = 0; q < kPer / 4; ++q) {
        const float4 v = p[(q + lane) & 15];
        const float f[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
        for (int e = 0; e < 4; ++e) key[4 * q + e] = order_f32(f[e]);
      }
    } else {
#pragma unroll
      for (int q = 0; q < kPer / 4; ++q) {
        const int chunk = (q + lane) & 15;
        const float4 v = p[chunk];
        const float f[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
        for (int e = 0; e < 4; ++e) key[4 * q + e] = 4 * chunk + e < lim ? order_f32(f[e]) : 0u;
      }
    }
    return (4 * lane) & (kPer - 1);
  }
  __device__ uint32_t key(int row, int i) const { return order_f32(data[int64_t(row) * ld + i]); }
};

// The ordered keys of G blocks of 8 scores of one dense row, block g at position pos(g), into
// key[8 g ..]; column e of block g is kept where keep(g, e), else 0. Every load first, none under a
// branch (a stand-in position for a block that does not exist): loads behind a per-block branch
// were issued one block after another (run 97, ncu: long_sb 52 % of the kernel's stalls).
template <int G, class Pos, class Keep>
__device__ __forceinline__ void load_blocks(const float* base, Pos pos, Keep keep, uint32_t* key) {
  float4 v[G][2];
#pragma unroll
  for (int g = 0; g < G; ++g) {
    const float4* p = reinterpret_cast<const float4*>(base + pos(g));
    v[g][0] = p[0];
    v[g][1] = p[1];
  }
#pragma unroll
  for (int g = 0; g < G; ++g) {
    const float f[8] = {v[g][0].x, v[g][0].y, v[g][0].z, v[g][0].w, v[g][1].x, v[g][1].y, v[g][1].z, v[g][1].w};
#pragma unroll
    for (int e = 0; e < 8; ++e) key[8 * g + e] = keep(g, e) ? order_f32(f[e]) : 0u;
  }
}

struct MaskRows {
  const float* dense;
  int64_t ld;
  const int32_t* dense_row;
  const int32_t* blocks;
  const int32_t* valid_len;
  __device__ int len(int row) const { return valid_len[row]; }
  // 32 candidates from first (a multiple of 32): four blocks of 8 positions, two 16-byte loads
  // each (ld % 8 == 0; a partial newest block reads past L inside the row and masks it).
  __device__ void load(int row, int first, int n, uint32_t (&key)[32]) const {
    const int64_t drow = dense_row ? dense_row[row] : row;
    // The four block ids in one 16-byte load (first / 8 is a multiple of 4, inside the row's 2048
    // entries), then load_blocks, position 0 of the row standing in for a block past n.
    const int4 ids = *reinterpret_cast<const int4*>(blocks + int64_t(row) * kTopkBlocks + first / kBlockSize);
    const int id[4] = {ids.x, ids.y, ids.z, ids.w};
    load_blocks<4>(
        dense + drow * ld, [&](int g) { return first + 8 * g < n ? int64_t(id[g]) * kBlockSize : 0; },
        [&](int g, int e) { return first + 8 * g + e < n; }, key);
  }
};

}  // namespace dsa::gpu
