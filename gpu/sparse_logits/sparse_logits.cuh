#pragma once
// Paged sparse logits (semantics.md "Sparse score"): for each table row, the candidate columns
// c < valid_len (position blocks[c/8]*8 + c%8) are scored straight from the index-K pool through
// the request's page table (only the published blocks' keys are read), with the bf16 epilogue:
// a = bf16(s) (negatives -> +0), w = bf16(weight), 4 lanes of single-rounding bf16 fmas,
// bf16(bf16(a0+a2) + bf16(a1+a3)).
#include <cstdint>

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
  const float* weights;
  const int32_t* sel_len;  // [nsel] L
  const int32_t* sel_req;  // [nsel] request
  // The table: n rows, each the selected row rows[i], blocks [n][2048], valid_len [n].
  const int32_t* rows;
  const int32_t* blocks;
  const int32_t* valid_len;
  int n;
  uint16_t* out;           // [n][16384] bf16 bits
};
void launch_sparse_logits(const SparseLogitsArgs& a);

}  // namespace dsa::gpu
