#include "gpu/common/check.cuh"
#include "gpu/topk/radix_topk.cuh"
#include "gpu/topk/topk.cuh"
#include "harness/core/constants.hpp"

namespace dsa::gpu {
namespace {

struct DenseRows {
  const float* data;
  int64_t ld;
  const int32_t* lens;
  __device__ int len(int row) const { return lens[row]; }
  __device__ uint32_t key(int row, int i) const { return order_f32(data[int64_t(row) * ld + i]); }
};

struct BlockKeyRows {
  const float* data;
  int64_t ld;
  const int32_t* L;
  __device__ int len(int row) const { return (L[row] + 7) / 8; }
  __device__ uint32_t key(int row, int i) const { return order_f32(data[int64_t(row) * ld + i]); }
};

struct MaskRows {
  const float* dense;
  int64_t ld;
  const int32_t* dense_row;
  const int32_t* blocks;
  const int32_t* valid_len;
  __device__ int len(int row) const { return valid_len[row]; }
  __device__ uint32_t key(int row, int c) const {
    const int64_t drow = dense_row ? dense_row[row] : row;
    const int64_t pos = int64_t(blocks[int64_t(row) * kTopkBlocks + c / kBlockSize]) * kBlockSize + c % kBlockSize;
    return order_f32(dense[drow * ld + pos]);
  }
};

struct Identity {
  __device__ int32_t id(int, int i) const { return i; }
};

struct PageTransform {
  const int32_t* blocks;
  __device__ int32_t id(int row, int c) const {
    return blocks[int64_t(row) * kTopkBlocks + c / kBlockSize] * kBlockSize + c % kBlockSize;
  }
};

__global__ void valid_len_kernel(const int32_t* len, int nrows, int32_t* valid_len) {
  const int row = blockIdx.x * blockDim.x + threadIdx.x;
  if (row >= nrows) return;
  const int L = len[row];
  const int kept = min(kTopkBlocks, (L + 7) / 8);
  valid_len[row] = L > 0 ? 8 * (kept - 1) + (L - 1) % 8 + 1 : 0;
}

}  // namespace

void launch_topk_dense(const float* dense, int64_t ld, const int32_t* len, int nrows, int k, int32_t* out) {
  if (nrows == 0) return;
  radix_topk_kernel<32><<<nrows, kTopkThreads>>>(DenseRows{dense, ld, len}, Identity{}, k, -1, out);
  DSA_LAUNCH_CHECK("radix_topk_kernel<dense>");
}

void launch_block_topk(const float* keys, int64_t ld, const int32_t* len, int nrows, int32_t* blocks,
                       int32_t* valid_len) {
  if (nrows == 0) return;
  radix_topk_kernel<32><<<nrows, kTopkThreads>>>(BlockKeyRows{keys, ld, len}, Identity{}, kTopkBlocks,
                                                  kBlockPad, blocks);
  DSA_LAUNCH_CHECK("radix_topk_kernel<blocks>");
  valid_len_kernel<<<(nrows + 255) / 256, 256>>>(len, nrows, valid_len);
  DSA_LAUNCH_CHECK("valid_len_kernel");
}

void launch_topk_mask(const float* dense, int64_t ld, const int32_t* dense_row, const int32_t* blocks,
                      const int32_t* valid_len, int nrows, int k, int32_t* out) {
  if (nrows == 0) return;
  radix_topk_kernel<32><<<nrows, kTopkThreads>>>(MaskRows{dense, ld, dense_row, blocks, valid_len},
                                                  PageTransform{blocks}, k, -1, out);
  DSA_LAUNCH_CHECK("radix_topk_kernel<mask>");
}

}  // namespace dsa::gpu
