#include <vector>

#include "gpu/block_amax/block_amax.cuh"
#include "gpu/common/check.cuh"
#include "gpu/common/device_buffer.cuh"
#include "gpu/common/order.cuh"
#include "gpu/dense_logits/dense_wgmma.cuh"

namespace dsa::gpu {
namespace {

// Block b's key of a row of nblocks blocks, from its dense scores.
__device__ __forceinline__ float block_key(const float* dense_row, int b, int nblocks) {
  if (b == nblocks - 1) return __int_as_float(0x7F800000);  // the newest block is always kept
  // Full block (8 positions below L): two 16-byte loads; ld_dense is a multiple of 8.
  const float4* p = reinterpret_cast<const float4*>(dense_row + int64_t(b) * 8);
  const float4 u = p[0], v = p[1];
  return fmaxf(fmaxf(fmaxf(u.x, u.y), fmaxf(u.z, u.w)), fmaxf(fmaxf(v.x, v.y), fmaxf(v.z, v.w)));
}

__global__ void block_amax_kernel(const float* dense, int64_t ld_dense, const int32_t* len, const int32_t* rows,
                                  int row0, float* keys, int64_t ld_keys) {
  const int sel = rows != nullptr ? rows[blockIdx.y] : row0 + int(blockIdx.y);
  const int64_t row = sel - row0;
  const int b = blockIdx.x * blockDim.x + threadIdx.x;
  const int nblocks = (len[sel] + 7) / 8;
  if (b < nblocks) keys[row * ld_keys + b] = block_key(dense + row * ld_dense, b, nblocks);
}

// Whether one of block b's scores below L still holds the poison's bits (kPoisonByteFloat): the
// check of a stored block when the dense kernel skipped stores, since the maximum passes over NaN.
__device__ __forceinline__ bool unwritten(const float* dense_row, int b, int L) {
  bool any = false;
  for (int e = 0; e < 8 && 8 * b + e < L; ++e) any = any || __float_as_uint(dense_row[8 * b + e]) == 0xFFFFFFFFu;
  return any;
}

__global__ void key_mismatch_kernel(const float* dense, int64_t ld_dense, const int32_t* len, int row0,
                                    const float* keys, int64_t ld_keys, const uint32_t* skip,
                                    unsigned long long* count) {
  const int64_t row = blockIdx.y;
  const int b = blockIdx.x * blockDim.x + threadIdx.x;
  const int L = len[row0 + row], nblocks = (L + 7) / 8;
  if (b >= nblocks) return;
  const float key = keys[row * ld_keys + b];
  const bool below = skip != nullptr && order_f32(key) < skip[row * kSkipWords + kSkipBins];
  const unsigned n = __popc(__ballot_sync(__activemask(), below));  // one atomic a warp
  if (n != 0 && (threadIdx.x & 31) == __ffs(__activemask()) - 1) atomicAdd(count + 2, (unsigned long long)n);
  if (below) return;  // maybe not stored
  if (__float_as_uint(block_key(dense + row * ld_dense, b, nblocks)) != __float_as_uint(key) ||
      (skip != nullptr && unwritten(dense + row * ld_dense, b, L))) {
    atomicAdd(count, 1ull);
    atomicMin(count + 1, (unsigned long long)(row0 + row) << 32 | unsigned(b));
  }
}

}  // namespace

void launch_block_amax(const float* dense, int64_t ld_dense, const int32_t* len, const int32_t* rows, int nrows,
                       int row0, int max_len, float* keys, int64_t ld_keys) {
  const int max_blocks = (max_len + 7) / 8;
  if (nrows == 0 || max_blocks == 0) return;
  // A listed piece moves the list (the kernel addresses dense and keys from row0); an unlisted
  // one moves row0, dense and keys.
  for_row_pieces(nrows, [&](int first, int n) {
    const int64_t off = rows != nullptr ? 0 : first;
    block_amax_kernel<<<dim3((max_blocks + 255) / 256, n), 256>>>(
        dense + off * ld_dense, ld_dense, len, rows != nullptr ? rows + first : nullptr, row0 + int(off),
        keys + off * ld_keys, ld_keys);
    DSA_LAUNCH_CHECK("block_amax_kernel");
  });
}

KeyMismatches count_block_key_mismatches(const float* dense, int64_t ld_dense, const int32_t* len, int nrows,
                                         int row0, int max_len, const float* keys, int64_t ld_keys,
                                         const uint32_t* skip) {
  const int max_blocks = (max_len + 7) / 8;
  if (nrows == 0 || max_blocks == 0) return {};
  DeviceBuffer<unsigned long long> count(3);
  count.fill_bytes(0, 1);
  count.fill_bytes(0xFF, 1, 1);
  count.fill_bytes(0, 1, 2);
  // row0 + first keeps len and the reported row global.
  for_row_pieces(nrows, [&](int first, int n) {
    key_mismatch_kernel<<<dim3((max_blocks + 255) / 256, n), 256>>>(
        dense + int64_t(first) * ld_dense, ld_dense, len, row0 + first, keys + int64_t(first) * ld_keys, ld_keys,
        skip != nullptr ? skip + int64_t(first) * kSkipWords : nullptr, count.get());
    DSA_LAUNCH_CHECK("key_mismatch_kernel");
  });
  const std::vector<unsigned long long> host = count.to_host(3);
  return {int64_t(host[0]), int(host[1] >> 32), int(host[1] & 0xFFFFFFFFu), int64_t(host[2])};
}

}  // namespace dsa::gpu
