#include <algorithm>
#include <cstdlib>

#include "gpu/common/check.cuh"
#include "gpu/sparse_logits/sparse_logits.cuh"
#include "gpu/sparse_logits/sparse_mma.cuh"

// The portable kernels over the routes of sparse_mma.cuh.
namespace dsa::gpu {
namespace {
using namespace sparse_mma;

// Rows on the split route (nearly all): a kernel of their own, so that its register budget (and
// with it the warps per SM that hide the key loads' latency) is not set by the other routes.
// Split like the other kernel's rows when few (row_parts). Whole warps only: no block-wide
// barriers in these kernels.
__global__ void __launch_bounds__(kWarps * 32, kSplitBlocksPerSm) sparse_split_kernel(SparseLogitsArgs a, int parts) {
  __shared__ __align__(16) WarpSmem smem[kWarps];
  __shared__ __align__(16) TileSlot ring[kWarps][kDepth];
  const int warp = threadIdx.x >> 5;
  SparseRowJob j;
  if (warp_job(a, 0, a.n_split, parts, blockIdx.x * kWarps + warp, j)) score_split_part(a, j, smem[warp], ring[warp]);
}

// The other rows. Each row's blocks are split among `parts` consecutive warps (slice_row_job).
__global__ void __launch_bounds__(kWarps * 32, kOtherBlocksPerSm) sparse_other_kernel(SparseLogitsArgs a, int parts) {
  __shared__ __align__(16) WarpSmem smem[kWarps];
  __shared__ __align__(16) TileSlot ring[kWarps][kDepth];
  const int warp = threadIdx.x >> 5;
  SparseRowJob j;
  if (warp_job(a, a.n_split, a.n - a.n_split, parts, blockIdx.x * kWarps + warp, j))
    score_other_part(a, j, smem[warp], ring[warp]);
}

// Every row in one launch, each part on its row's route: few rows on both routes (a decode step)
// on a device without the wgmma kernel. Rows of either route may sit anywhere in the route order.
__global__ void __launch_bounds__(kWarps * 32, kOtherBlocksPerSm) sparse_rows_kernel(SparseLogitsArgs a, int parts) {
  __shared__ __align__(16) WarpSmem smem[kWarps];
  __shared__ __align__(16) TileSlot ring[kWarps][kDepth];
  const int warp = threadIdx.x >> 5, w = blockIdx.x * kWarps + warp;
  SparseRowJob j;
  if (!warp_job(a, 0, a.n, parts, w, j)) return;
  // The doubled group (row_split 2 + g) is the wgmma kernel's alone: those rows take the others.
  if (a.row_split[j.row] == 1)
    score_split_part(a, j, smem[warp], ring[warp]);
  else
    score_other_part(a, j, smem[warp], ring[warp]);
}

}  // namespace

bool sparse_one_launch(int n, int n_split) {
  int most = 2 * current_device_sms();
  if (const char* env = std::getenv("DSA_SPARSE_ONE_LAUNCH_ROWS")) most = std::max(std::atoi(env), 0);
  return n <= most && n > n_split && n_split > 0;
}

void launch_sparse_logits(const SparseLogitsArgs& a) {
  if (a.n == 0) return;
  if (sparse_one_launch(a.n, a.n_split)) {
    if (a.split_wgmma) return launch_sparse_wgmma(a, true);
    const int parts = row_parts(a.n, kOtherBlocksPerSm);
    sparse_rows_kernel<<<unsigned((a.n * parts + kWarps - 1) / kWarps), kWarps * 32>>>(a, parts);
    DSA_LAUNCH_CHECK("sparse_rows_kernel");
    return;
  }
  if (a.n_split > 0 && a.split_wgmma) {
    launch_sparse_wgmma(a);
  } else if (a.n_split > 0) {
    const int parts = row_parts(a.n_split, kSplitBlocksPerSm);
    sparse_split_kernel<<<unsigned((a.n_split * parts + kWarps - 1) / kWarps), kWarps * 32>>>(a, parts);
    DSA_LAUNCH_CHECK("sparse_split_kernel");
  }
  if (a.n > a.n_split) {
    const int rows = a.n - a.n_split, parts = row_parts(rows, kOtherBlocksPerSm);
    sparse_other_kernel<<<unsigned((rows * parts + kWarps - 1) / kWarps), kWarps * 32>>>(a, parts);
    DSA_LAUNCH_CHECK("sparse_other_kernel");
  }
}

}  // namespace dsa::gpu
