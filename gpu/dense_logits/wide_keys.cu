#include "gpu/common/check.cuh"
#include "gpu/dense_logits/dense_common.cuh"
#include "gpu/dense_logits/wide_keys.cuh"
#include "gpu/dense_logits/wide_row.cuh"

namespace dsa::gpu {
namespace {

constexpr int kFactsThreads = 256;
constexpr int kWideSplits = 8;  // warps a row's list is dealt over (each loads the row's query once)

// Group j of request b (positions 8j .. 8j + 7 below L): whether it holds a wide key; folds the
// others' minimum exponents into lo and hi.
__device__ __forceinline__ bool scan_group(const float* kscale, int j, int L, int& lo, int& hi) {
  bool wide = false;
  for (int p = 8 * j; p < min(8 * j + 8, L); ++p) {
    const float v = kscale[p];
    if (v == 0.0f) {
      wide = true;
      continue;
    }
    const int fmin = ((__float_as_int(v) >> 23) & 0xFF) + 1;
    lo = min(lo, fmin);
    hi = max(hi, fmin);
  }
  return wide;
}

// One block a request; each round, thread i scans group base + i and the wide groups of the round
// are written in order (ballot ranks, then the warps' counts in shared memory).
__global__ void __launch_bounds__(kFactsThreads) request_keys_kernel(const float* kscale, const int64_t* start,
                                                                     const int32_t* lc, int2* range, int32_t* count,
                                                                     int32_t* list) {
  __shared__ int lo_warp[kFactsThreads / 32], hi_warp[kFactsThreads / 32], n_warp[kFactsThreads / 32];
  const int b = blockIdx.x, lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int L = lc[b], ngroups = (L + 7) / 8;
  const float* ks = kscale + start[b];
  int32_t* out = list + wide_list_offset(start[b], b);
  int lo = 1 << 20, hi = -(1 << 20), total = 0;
  for (int base = 0; base < ngroups; base += kFactsThreads) {
    const int j = base + threadIdx.x;
    const bool wide = j < ngroups && scan_group(ks, j, L, lo, hi);
    const unsigned vote = __ballot_sync(0xFFFFFFFFu, wide);
    if (lane == 0) n_warp[warp] = __popc(vote);
    __syncthreads();
    int before = total;
    for (int w = 0; w < kFactsThreads / 32; ++w) {
      if (w == warp) before = total;
      total += n_warp[w];
    }
    if (wide) out[before + __popc(vote & ((1u << lane) - 1))] = j;
    __syncthreads();  // n_warp is rewritten next round
  }
  lo = __reduce_min_sync(0xFFFFFFFFu, lo);
  hi = __reduce_max_sync(0xFFFFFFFFu, hi);
  if (lane == 0) lo_warp[warp] = lo, hi_warp[warp] = hi;
  __syncthreads();
  if (threadIdx.x == 0) {
    for (int w = 1; w < kFactsThreads / 32; ++w) lo = min(lo, lo_warp[w]), hi = max(hi, hi_warp[w]);
    range[b] = lo <= hi ? make_int2(lo, hi) : make_int2(127, 127);
    count[b] = total;
  }
}

// One warp a (row, split): wide_row.cuh.
__global__ void __launch_bounds__(128) dense_wide_kernel(DenseWgmmaArgs a) {
  const int row = a.tile_rows[int64_t(blockIdx.y) * kWgmmaTileRows + (threadIdx.x >> 5)];
  if (row >= 0) score_wide_row(a, row, blockIdx.x, kWideSplits);
}

}  // namespace

void launch_request_keys(const float* kscale, const int64_t* start, const int32_t* lc, int nreq, int2* range,
                         int32_t* count, int32_t* list) {
  if (nreq == 0) return;
  request_keys_kernel<<<nreq, kFactsThreads>>>(kscale, start, lc, range, count, list);
  DSA_LAUNCH_CHECK("request_keys_kernel");
}

void launch_dense_wide(const DenseWgmmaArgs& a) {
  if (a.ntiles == 0 || a.max_len == 0) return;
  dense_wide_kernel<<<dim3(kWideSplits, a.ntiles), 128>>>(a);
  DSA_LAUNCH_CHECK("dense_wide_kernel");
}

}  // namespace dsa::gpu
