#pragma once
// A table row of the paged sparse logits as one warp's (or warpgroup's) job, shared by both
// kernels.
#include <cstdint>

#include "core/constants.hpp"
#include "gpu/sparse_logits/sparse_logits.cuh"

namespace dsa::gpu {

struct SparseRowJob {
  int row, L, valid, nb;  // selected row, its length, candidates, candidate blocks
  int64_t kblk;           // key block of the request's position 0
  const int32_t* table;
  const int32_t* blocks;
  uint16_t* out;
};

__device__ __forceinline__ SparseRowJob sparse_row_job(const SparseLogitsArgs& a, int i) {
  SparseRowJob j;
  j.row = a.rows[i];
  j.L = a.sel_len[j.row];
  j.valid = a.valid_len[i];
  j.nb = (j.valid + 7) / 8;
  const int req = a.sel_req[j.row];
  j.kblk = a.req_blk[req];
  j.table = a.table + int64_t(req) * a.table_width;
  j.blocks = a.blocks + int64_t(i) * kTopkBlocks;
  j.out = a.out + int64_t(i) * kCandidateWidth;
  return j;
}

// Part `part` of `parts` of a row job: an even run of its blocks (the fast loop scores pairs), its
// columns and its valid count cut to them. False when the part holds no block.
__device__ __forceinline__ bool slice_row_job(SparseRowJob& j, int part, int parts) {
  const int per = ((j.nb + parts - 1) / parts + 1) & ~1;
  const int b0 = part * per;
  if (b0 >= j.nb) return false;
  const int nb = min(per, j.nb - b0);
  j.blocks += b0;
  j.out += b0 * 8;
  j.valid = min(j.valid - b0 * 8, nb * 8);
  j.nb = nb;
  return true;
}

}  // namespace dsa::gpu
