#include "gpu/common/check.cuh"
#include "gpu/common/mbarrier.cuh"
#include "gpu/topk/radix_topk.cuh"
#include "gpu/topk/select_topk.cuh"
#include "gpu/topk/topk.cuh"
#include "core/constants.hpp"

namespace dsa::gpu {
namespace {

struct DenseRows {
  const float* data;
  int64_t ld;
  const int32_t* lens;
  __device__ int len(int row) const { return lens[row]; }
  __device__ uint32_t key(int row, int i) const { return order_f32(data[int64_t(row) * ld + i]); }
};

// Rows picked by a list: table row i is dense row rows[i], or no row when rows[i] == nrows (length
// 0: its block writes padding into the spare output row nrows and exits).
struct DenseRowsListed {
  const float* data;
  int64_t ld;
  const int32_t* lens;
  const int32_t* rows;
  int nrows;
  __device__ int len(int i) const { return rows[i] < nrows ? lens[rows[i]] : 0; }
  __device__ uint32_t key(int i, int c) const { return order_f32(data[int64_t(rows[i]) * ld + c]); }
};

// One warp per row: is the top-k over the published candidates the row's top-k? list[row] = row
// where it may not be, nrows (no row) where it is. Every entry is written, so the list needs no
// clearing and no count: the full-row pass runs over a fixed grid.
__global__ void own_topk_check_kernel(const float* dense, int64_t ld, const int32_t* len, int nrows, int k,
                                      const float* keys, int64_t ld_keys, const int32_t* blocks,
                                      const int32_t* picks, int32_t* list) {
  const int row = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32, lane = threadIdx.x & 31;
  if (row >= nrows) return;
  const int L = len[row];
  bool full = false;
  if (L > k && (L + 7) / 8 > kTopkBlocks) {  // else all positions, or every block published
    uint32_t kth = 0xFFFFFFFFu, key_min = 0xFFFFFFFFu;
    for (int j = lane; j < k; j += 32)
      kth = min(kth, order_f32(dense[int64_t(row) * ld + picks[int64_t(row) * k + j]]));
    for (int j = lane; j < kTopkBlocks; j += 32)
      key_min = min(key_min, order_f32(keys[int64_t(row) * ld_keys + blocks[int64_t(row) * kTopkBlocks + j]]));
    for (int o = 16; o > 0; o >>= 1) {
      kth = min(kth, __shfl_xor_sync(0xFFFFFFFFu, kth, o));
      key_min = min(key_min, __shfl_xor_sync(0xFFFFFFFFu, key_min, o));
    }
    full = !(kth > key_min);
  }
  if (lane == 0) list[row] = full ? row : nrows;
}

struct BlockKeyRows {
  const float* data;
  int64_t ld;
  const int32_t* L;
  __device__ int len(int row) const { return (L[row] + 7) / 8; }
  __device__ uint32_t key(int row, int i) const { return order_f32(data[int64_t(row) * ld + i]); }
  // kPer keys from first (a multiple of kPer): 16-byte loads when all are valid (ld % 4 == 0).
  template <int kPer>
  __device__ void load(int row, int first, int n, uint32_t (&key)[kPer]) const {
    const float* p = data + int64_t(row) * ld + first;
    if (first + kPer <= n) {
#pragma unroll
      for (int q = 0; q < kPer / 4; ++q) {
        const float4 v = reinterpret_cast<const float4*>(p)[q];
        key[4 * q] = order_f32(v.x), key[4 * q + 1] = order_f32(v.y);
        key[4 * q + 2] = order_f32(v.z), key[4 * q + 3] = order_f32(v.w);
      }
    } else {
#pragma unroll
      for (int j = 0; j < kPer; ++j) key[j] = first + j < n ? order_f32(p[j]) : 0u;
    }
  }
};

// Level one over rows that fit the registers (kPer keys a thread), one persistent block an SM:
// while the block selects one row from its registers, a bulk copy brings its next row into shared
// memory (128 KB), so the HBM reads of a row overlap the passes over the previous one (one block
// of 128-register threads fills an SM: without the copy, nothing would hide the load).
constexpr int kBulkChunk = 16384;  // bytes per bulk copy

template <int kPer>
__global__ void __launch_bounds__(kSelectThreads, 1) block_topk_stream_kernel(BlockKeyRows src, int nrows,
                                                                               int32_t* out) {
  extern __shared__ __align__(128) unsigned char stream_smem[];
  float* buf = reinterpret_cast<float*>(stream_smem);  // kPer * 512 keys
  __shared__ SelectSmem sm;
  __shared__ uint64_t bar;
  // Thread 0 starts the copy of row r when r will be selected from keys (more than 2048 blocks).
  auto fetch = [&](int r) {
    if (r >= nrows) return;
    const int n = src.len(r);
    if (n <= kTopkBlocks) return;
    const unsigned bytes = unsigned(n + 3) / 4 * 16;
    const char* from = reinterpret_cast<const char*>(src.data + int64_t(r) * src.ld);
    mbar_expect(&bar, bytes);
    for (unsigned off = 0; off < bytes; off += kBulkChunk)
      bulk_copy(reinterpret_cast<char*>(buf) + off, from + off, min(unsigned(kBulkChunk), bytes - off), &bar);
  };
  if (threadIdx.x == 0) {
    mbar_init(&bar, 1);
    fetch(blockIdx.x);
  }
  __syncthreads();
  unsigned parity = 0;
  const int first = threadIdx.x * kPer;
  for (int row = blockIdx.x; row < nrows; row += gridDim.x) {
    const int n = src.len(row);
    int32_t* dst = out + int64_t(row) * kTopkBlocks;
    if (n <= kTopkBlocks) {  // no copy was started for this row: the buffer is free
      if (threadIdx.x == 0) fetch(row + gridDim.x);
      take_all<kSelectThreads>(Identity{}, row, n, kTopkBlocks, kBlockPad, dst);
      continue;
    }
    mbar_wait(&bar, parity);
    parity ^= 1;
    uint32_t key[kPer];
#pragma unroll
    for (int q = 0; q < kPer / 4; ++q) {
      const float4 v = reinterpret_cast<const float4*>(buf + first)[q];
      const float f[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
      for (int e = 0; e < 4; ++e) key[4 * q + e] = first + 4 * q + e < n ? order_f32(f[e]) : 0u;
    }
    __syncthreads();  // every thread holds its keys: the buffer takes the next row
    if (threadIdx.x == 0) fetch(row + gridDim.x);
    select_row<32, kPer>(key, row, n, kTopkBlocks, first, Identity{}, dst, sm);
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
#pragma unroll
    for (int g = 0; g < 4; ++g) {
      const int c0 = first + 8 * g;
      if (c0 >= n) {
#pragma unroll
        for (int e = 0; e < 8; ++e) key[8 * g + e] = 0u;
        continue;
      }
      const int64_t pos = int64_t(blocks[int64_t(row) * kTopkBlocks + c0 / kBlockSize]) * kBlockSize;
      const float4* p = reinterpret_cast<const float4*>(dense + drow * ld + pos);
      const float4 a = p[0], b = p[1];
      const float v[8] = {a.x, a.y, a.z, a.w, b.x, b.y, b.z, b.w};
#pragma unroll
      for (int e = 0; e < 8; ++e) key[8 * g + e] = c0 + e < n ? order_f32(v[e]) : 0u;
    }
  }
};

}  // namespace

void launch_topk_dense(const float* dense, int64_t ld, const int32_t* len, int nrows, int k, int32_t* out) {
  if (nrows == 0) return;
  radix_topk_kernel<32><<<nrows, kTopkThreads>>>(DenseRows{dense, ld, len}, Identity{}, k, -1, out);
  DSA_LAUNCH_CHECK("radix_topk_kernel<dense>");
}

void launch_own_topk(const float* dense, int64_t ld, const int32_t* len, int nrows, int k, const float* keys,
                     int64_t ld_keys, const int32_t* blocks, const int32_t* valid_len, int32_t* out,
                     int32_t* list) {
  if (nrows == 0) return;
  launch_topk_mask(dense, ld, nullptr, blocks, valid_len, nrows, k, out);
  own_topk_check_kernel<<<(nrows + 7) / 8, 256>>>(dense, ld, len, nrows, k, keys, ld_keys, blocks, out, list);
  DSA_LAUNCH_CHECK("own_topk_check_kernel");
  // Every row gets a block; those the check passed exit at once (length 0). No count comes back
  // to the host, so the step has no synchronisation here and can be captured in a graph.
  radix_topk_kernel<32><<<nrows, kTopkThreads>>>(DenseRowsListed{dense, ld, len, list, nrows}, Identity{}, k, -1,
                                                  out, list);
  DSA_LAUNCH_CHECK("radix_topk_kernel<dense rows>");
}

int own_topk_full_rows(const std::vector<int32_t>& list) {
  const int nrows = int(list.size());
  int n = 0;
  for (int32_t r : list) n += r != nrows;
  return n;
}

void launch_block_topk(const float* keys, int64_t ld, const int32_t* len, int nrows, int max_len,
                       int32_t* blocks) {
  if (nrows == 0) return;
  constexpr int kPer = 64;  // block keys per thread: rows of up to 32768 blocks (262144 positions)
  if ((int64_t(max_len) + 7) / 8 <= int64_t(kPer) * kSelectThreads) {
    constexpr int kBuffer = kPer * kSelectThreads * int(sizeof(float));
    int device = 0, sms = 0;
    DSA_CUDA_CHECK(cudaGetDevice(&device));
    DSA_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
    DSA_CUDA_CHECK(cudaFuncSetAttribute(block_topk_stream_kernel<kPer>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                        kBuffer));
    block_topk_stream_kernel<kPer><<<std::min(nrows, sms), kSelectThreads, kBuffer>>>(BlockKeyRows{keys, ld, len},
                                                                                      nrows, blocks);
    DSA_LAUNCH_CHECK("block_topk_stream_kernel");
  } else {
    radix_topk_kernel<32><<<nrows, kTopkThreads>>>(BlockKeyRows{keys, ld, len}, Identity{}, kTopkBlocks,
                                                    kBlockPad, blocks);
    DSA_LAUNCH_CHECK("radix_topk_kernel<blocks>");
  }
}

void launch_topk_mask(const float* dense, int64_t ld, const int32_t* dense_row, const int32_t* blocks,
                      const int32_t* valid_len, int nrows, int k, int32_t* out) {
  if (nrows == 0) return;
  static_assert(kCandidateWidth == 32 * kSelectThreads, "one row of candidates fills the block's registers");
  select_topk_kernel<32, 32><<<nrows, kSelectThreads>>>(MaskRows{dense, ld, dense_row, blocks, valid_len},
                                                        PageTransform{blocks}, k, -1, out);
  DSA_LAUNCH_CHECK("select_topk_kernel<mask>");
}

}  // namespace dsa::gpu
