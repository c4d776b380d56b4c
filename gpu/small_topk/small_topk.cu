#include "gpu/common/check.cuh"
#include "gpu/small_topk/small_topk.cuh"
#include "gpu/topk/radix_topk.cuh"
#include "gpu/topk/select_topk.cuh"
#include "core/constants.hpp"

namespace dsa::gpu {
namespace {

struct Bf16Rows {
  static constexpr int kBufferBytes = kCandidateWidth * 2;
  const uint16_t* scores;
  const int32_t* valid_len;
  __device__ int len(int row) const { return valid_len[row]; }
  __device__ const void* row_data(int row) const { return scores + int64_t(row) * kCandidateWidth; }
  __device__ unsigned row_bytes(int n) const { return unsigned(n + 7) / 8 * 16; }
  // 32 candidates from first (a multiple of 32) out of the copied row: ordered two at a time.
  __device__ void keys_from(const void* buf, int first, int n, uint32_t (&key)[32]) const {
    const uint4* p = reinterpret_cast<const uint4*>(static_cast<const uint16_t*>(buf) + first);
#pragma unroll
    for (int q = 0; q < 4; ++q) {
      const uint4 v = p[q];
      const uint32_t w[4] = {order_bf16x2(v.x), order_bf16x2(v.y), order_bf16x2(v.z), order_bf16x2(v.w)};
#pragma unroll
      for (int h = 0; h < 4; ++h) {
        key[8 * q + 2 * h] = first + 8 * q + 2 * h < n ? w[h] & 0xFFFFu : 0u;
        key[8 * q + 2 * h + 1] = first + 8 * q + 2 * h + 1 < n ? w[h] >> 16 : 0u;
      }
    }
  }
};

}  // namespace

void launch_small_topk(const uint16_t* scores, const int32_t* blocks, const int32_t* valid_len, int nrows,
                       int k, int32_t* out) {
  if (nrows == 0) return;
  static_assert(kCandidateWidth == 32 * kSelectThreads, "one row of candidates fills the block's registers");
  launch_select_stream<16, 32, 2>(Bf16Rows{scores, valid_len}, PageTransform{blocks}, nrows, k, -1, out);
  DSA_LAUNCH_CHECK("select_topk_stream_kernel<bf16>");
}

}  // namespace dsa::gpu
