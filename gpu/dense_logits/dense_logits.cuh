#pragma once
// Dense fp32 scores of every position p < L of the selected rows (docs/semantics.md, "Dense score"):
// exact head scores on the int8 tensor cores (gpu/common/fp4_mma.cuh), relu, the 4-lane fma
// order, (a0 + a2) + (a1 + a3).
#include <cstdint>

#include <vector_types.h>  // int2

namespace dsa::gpu {

struct DenseLogitsArgs {
  // Query operands of the selected rows (gpu/prep): [nsel][32][128], [nsel][32], [nsel].
  const int8_t* qs;
  const int8_t* qr;
  const uint32_t* qexp;
  const float* qscale;
  const int32_t* row_fast;
  const int8_t* qsplit;      // the split route (gpu/common/fp4_mma.cuh)
  const int2* qmul;
  const int32_t* row_split;
  const float* weights;   // [nsel][32]
  // Flattened keys (gpu/prep): [ncols][128], [ncols].
  const int8_t* ks;
  const int8_t* kr;
  const uint32_t* kexp;
  const float* kscale;
  // Row tiles: up to 8 selected rows of one request each, tile_rows[tile_first[i] + j] for j < tile_count[i].
  const int32_t* tile_rows;
  const int32_t* tile_first;
  const int32_t* tile_count;
  int ntiles;
  const int32_t* sel_len;   // [nsel] L
  const int64_t* sel_kcol;  // [nsel] flattened column of position 0
  int max_len;
  float* out;               // [rows][ld]: selected row i at out row i - row0 (a chunk of rows)
  int64_t ld;
  int row0;
};
void launch_dense_logits(const DenseLogitsArgs& a);
constexpr int kDenseTileRows = 8;

}  // namespace dsa::gpu
