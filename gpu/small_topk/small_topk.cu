#include "gpu/common/check.cuh"
#include "gpu/small_topk/small_topk.cuh"
#include "gpu/topk/radix_topk.cuh"
#include "gpu/topk/select_topk.cuh"
#include "core/constants.hpp"

namespace dsa::gpu {
namespace {

struct Bf16Rows {
  const uint16_t* scores;
  const int32_t* valid_len;
  __device__ int len(int row) const { return valid_len[row]; }
  // 32 candidates from first (a multiple of 32): four 16-byte loads when all are valid.
  __device__ void load(int row, int first, int n, uint32_t (&key)[32]) const {
    const uint16_t* p = scores + int64_t(row) * kCandidateWidth + first;
    if (first + 32 <= n) {
#pragma unroll
      for (int q = 0; q < 4; ++q) {
        const uint4 v = reinterpret_cast<const uint4*>(p)[q];
        const uint32_t w[4] = {order_bf16x2(v.x), order_bf16x2(v.y), order_bf16x2(v.z), order_bf16x2(v.w)};
#pragma unroll
        for (int h = 0; h < 4; ++h) {
          key[8 * q + 2 * h] = w[h] & 0xFFFFu;
          key[8 * q + 2 * h + 1] = w[h] >> 16;
        }
      }
    } else {
#pragma unroll
      for (int j = 0; j < 32; ++j) key[j] = first + j < n ? order_bf16(p[j]) : 0u;
    }
  }
};

}  // namespace

void launch_small_topk(const uint16_t* scores, const int32_t* blocks, const int32_t* valid_len, int nrows,
                       int k, int32_t* out) {
  if (nrows == 0) return;
  static_assert(kCandidateWidth == 32 * kSelectThreads, "one row of candidates fills the block's registers");
  // A plain grid, two blocks an SM: the persistent row-streaming kernel that level one uses was
  // 7 % slower here (run 49: 0.53 against 0.50 ms a consumer on chunk-256k).
  select_topk_kernel<16, 32><<<nrows, kSelectThreads>>>(Bf16Rows{scores, valid_len}, PageTransform{blocks}, k, -1, out);
  DSA_LAUNCH_CHECK("select_topk_kernel<bf16>");
}

}  // namespace dsa::gpu
