#include "gpu/block_amax/block_amax.cuh"
#include "gpu/common/check.cuh"

namespace dsa::gpu {
namespace {

__global__ void block_amax_kernel(const float* dense, int64_t ld_dense, const int32_t* len, float* keys,
                                  int64_t ld_keys) {
  const int row = blockIdx.y;
  const int b = blockIdx.x * blockDim.x + threadIdx.x;
  const int L = len[row];
  const int nblocks = (L + 7) / 8;
  if (b >= nblocks) return;
  float key;
  if (b == nblocks - 1) {
    key = __int_as_float(0x7F800000);  // the newest block is always kept
  } else {
    // Full block (8 positions below L): two 16-byte loads; ld_dense is a multiple of 8.
    const float4* p = reinterpret_cast<const float4*>(dense + int64_t(row) * ld_dense + int64_t(b) * 8);
    const float4 u = p[0], v = p[1];
    key = fmaxf(fmaxf(fmaxf(u.x, u.y), fmaxf(u.z, u.w)), fmaxf(fmaxf(v.x, v.y), fmaxf(v.z, v.w)));
  }
  keys[int64_t(row) * ld_keys + b] = key;
}

}  // namespace

void launch_block_amax(const float* dense, int64_t ld_dense, const int32_t* len, int nrows, int max_len,
                       float* keys, int64_t ld_keys) {
  const int max_blocks = (max_len + 7) / 8;
  if (nrows == 0 || max_blocks == 0) return;
  dim3 grid((max_blocks + 255) / 256, nrows);
  block_amax_kernel<<<grid, 256>>>(dense, ld_dense, len, keys, ld_keys);
  DSA_LAUNCH_CHECK("block_amax_kernel");
}

}  // namespace dsa::gpu
