#pragma once
// Paged sparse logits (semantics.md "Sparse score"): for each table row, the candidate columns
// c < valid_len (position blocks[c/8]*8 + c%8) are scored straight from the index-K pool through
// the request's page table (only the published blocks' keys are read), with the bf16 epilogue:
// a = bf16(s) (negatives -> +0), w = bf16(weight), 4 lanes of single-rounding bf16 fmas,
// bf16(bf16(a0+a2) + bf16(a1+a3)). Keys on the fast path come from the key prep's shifted rows,
// re-laid per candidate block by launch_key_blocks; the rest is read through the page table.
// Split-route rows run on wgmma (sparse_wgmma.cu) where the device has it, else on mma.sync.
#include <cstdint>

#include <vector_types.h>  // int2

#include "gpu/prep/key_blocks.cuh"  // the key block records

namespace dsa::gpu {

struct SparseLogitsArgs {
  const uint8_t* pool;
  int page_size;
  const int32_t* table;   // [nreq][table_width]
  int table_width;
  // Query operands of the selected rows (gpu/prep), indexed by selected row.
  const int8_t* qs;
  const int8_t* qr;
  const uint32_t* qexp;
  const float* qscale;
  const int32_t* row_fast;
  const int8_t* qsplit;      // the split route (gpu/common/fp4_mma.cuh)
  const int2* qmul;
  const int8_t* qdouble;     // [nsel][32] heads whose doubled group is added twice (row_split 2 + g)
  const int32_t* row_split;
  const float* weights;
  const int32_t* sel_len;  // [nsel] L
  const int32_t* sel_req;  // [nsel] request
  const int64_t* req_blk;  // [nreq] key block of each request's position 0 (key_block_starts)
  const int8_t* kbfrag;    // [blocks][kKeyBlockBytes] launch_key_blocks
  const int8_t* kdfrag;    // the same records in pair order (the wgmma kernel's A, from registers)
  const float* kbscale;    // [blocks][8] fast-path key scale, 0 = slow route
  // The table: n rows, each the selected row rows[i], blocks [n][2048], valid_len [n].
  const int32_t* rows;
  const int32_t* blocks;
  const int32_t* valid_len;
  int n;
  // Table rows by route: order[0, n_split) take the split route (row_split), the rest the others;
  // each kernel's warps then all have work and rows of one request stay together.
  const int32_t* order;
  int n_split;
  int split_wgmma;         // the split rows take the wgmma kernel (sparse_wgmma_supported())
  uint16_t* out;           // [n][16384] bf16 bits
};
void launch_sparse_logits(const SparseLogitsArgs& a);

// Whether launch_sparse_logits scores rows on both routes in one launch (few rows, a decode step:
// the wgmma kernel with extra blocks for the other rows, or on devices without wgmma one mma.sync
// kernel for all). DSA_SPARSE_ONE_LAUNCH_ROWS sets the most rows (default two a streaming
// multiprocessor; 0: never).
bool sparse_one_launch(int n, int n_split);

// Whether this device runs the wgmma kernel of the split rows (sm_90; elsewhere mma.sync).
bool sparse_wgmma_supported();
// The split rows, order[0, n_split); with_other: the other rows too, in the same launch (on the
// mma.sync routes, in extra blocks).
void launch_sparse_wgmma(const SparseLogitsArgs& a, bool with_other = false);

}  // namespace dsa::gpu
