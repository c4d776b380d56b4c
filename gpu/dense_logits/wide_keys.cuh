#pragma once
// Wide keys on the dense wgmma route. A key whose four group exponents span more than 3 binades
// has no folded int8 form (its kscale is 0), so dense_wgmma_kernel leaves its scores unwritten and
// one pass after it scores them by the generic route (dense_common.cuh). The pass reads, per
// request, the ascending list of the 8-position groups that hold such a key, made once per batch
// with the request's exponent range.
//
// Why not inline: rescored in the wgmma kernel, one warp's generic route (global loads of the raw
// query and keys, double sums) held its whole warpgroup at the next step's wgmma. On chunk-256k
// that was 12 of the kernel's 59.6 ms for 0.09 % of the keys (device run 4).
#include <cuda_runtime.h>  // __host__ __device__ for host compilers too

#include <cstdint>

#include "gpu/dense_logits/dense_wgmma.cuh"

namespace dsa::gpu {

// Where request b's list starts: start / 8 + b. Lists never overlap, because the requests' columns
// [start, start + lc) never do and a list holds at most ceil(lc / 8) groups.
__host__ __device__ inline int64_t wide_list_offset(int64_t start, int b) { return start / 8 + b; }
// Entries all lists need for ncols key columns and nreq requests.
inline int64_t wide_list_capacity(int64_t ncols, int nreq) { return ncols / 8 + nreq + 1; }

// Per request b (columns start[b] .. start[b] + lc[b]): range[b] = the lowest and highest minimum
// group exponent of its folded keys ({127, 127} when it has none: the wgmma route's admission,
// gpu/prep), and count[b] groups g, ascending, at list[wide_list_offset(start[b], b)]: positions
// 8g .. 8g + 7 below lc[b] hold a key with kscale 0. One launch for all requests.
void launch_request_keys(const float* kscale, const int64_t* start, const int32_t* lc, int nreq, int2* range,
                         int32_t* count, int32_t* list);

// Scores the wide keys of the rows of a.tile_rows (the generic route), after launch_dense_wgmma's
// main kernel wrote every other position.
void launch_dense_wide(const DenseWgmmaArgs& a);

}  // namespace dsa::gpu
