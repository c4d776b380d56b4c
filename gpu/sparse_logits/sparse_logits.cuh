#pragma once
// Paged sparse logits (semantics.md "Sparse score"): for each table row, the candidate columns
// c < valid_len (position blocks[c/8]*8 + c%8) are scored straight from the index-K pool through
// the request's page table (only the published blocks' keys are read), with the bf16 epilogue:
// a = bf16(s) (negatives -> +0), w = bf16(weight), 4 lanes of single-rounding bf16 fmas,
// bf16(bf16(a0+a2) + bf16(a1+a3)). Keys on the fast path come from the key prep's shifted rows,
// re-laid by launch_sparse_key_frags; the rest is read through the page table.
#include <cstdint>

#include <vector_types.h>  // int2

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
  const int32_t* row_split;
  const float* weights;
  const int32_t* sel_len;  // [nsel] L
  const int32_t* sel_req;  // [nsel] request
  const int64_t* kcol;     // [nsel] flattened-K column of the row's position 0
  const int8_t* kfrag;     // [cols][128] launch_sparse_key_frags of the key prep's shifted keys
  const float* kscale;     // [cols] fast-path key scale, 0 = slow route
  // The table: n rows, each the selected row rows[i], blocks [n][2048], valid_len [n].
  const int32_t* rows;
  const int32_t* blocks;
  const int32_t* valid_len;
  int n;
  // Table rows by route: order[0, n_split) take the split route (row_split), the rest the others;
  // each kernel's warps then all have work and rows of one request stay together.
  const int32_t* order;
  int n_split;
  uint16_t* out;           // [n][16384] bf16 bits
};
void launch_sparse_logits(const SparseLogitsArgs& a);

// kfrag = the shifted keys ks [ncols][128] re-laid so that each mma lane's B fragments of a key
// are 32 contiguous bytes.
void launch_sparse_key_frags(const int8_t* ks, int64_t ncols, int8_t* kfrag);

}  // namespace dsa::gpu
