#pragma once
// Operand preparation for the tensor-core logits kernels: packed e2m1 + ue8m0 vectors become
// int8 rows of 2*values, both raw and "shifted" (see gpu/common/fp4_mma.cuh), with their
// exponents and the fast-path scale (0 when the vector needs the generic path).
#include <cstdint>

#include <vector_types.h>  // int2

namespace dsa::gpu {

// Keys of every request, flattened: column start[b] + j for position j < lc[b], read from the
// paged pool through the page tables. Outputs sized [sum lc][128] (ks, kr) and [sum lc].
struct KeyPrepArgs {
  const uint8_t* pool;
  int page_size;
  const int32_t* table;  // [nreq][table_width]
  int table_width;
  const int32_t* lc;     // [nreq]
  const int64_t* start;  // [nreq]
  int nreq;
  int max_lc;
  int8_t* ks;
  int8_t* kr;
  uint32_t* kexp;
  float* kscale;
};
void launch_key_prep(const KeyPrepArgs& a);

// Query rows of one layer for the selected rows: q [R][32][64], q_scale [R][32][4];
// outputs [nsel][32][128] (qs, qr, qsplit), [nsel][32] (qexp, qscale, qmul), [nsel] row_fast, row_split.
struct QueryPrepArgs {
  const uint8_t* q;
  const uint8_t* q_scale;
  const int32_t* sel_rows;  // [nsel] global rows
  int nsel;
  int8_t* qs;
  int8_t* qr;
  uint32_t* qexp;
  float* qscale;
  int32_t* row_fast;
  int8_t* qsplit;      // [nsel][32][128] the split form (gpu/common/fp4_mma.cuh)
  int2* qmul;          // [nsel][32] its multipliers {mA, mB}
  int8_t* qdouble;     // [nsel][32] 1 when the head's doubled group is added twice (split_vector)
  // [nsel] 1 when every head takes the split route; 2 + g when every head does with group g
  // doubled in some of them (the sparse wgmma kernel alone takes those rows); else 0.
  int32_t* row_split;
  // The wgmma form (gpu/dense_logits/dense_wgmma.cuh); null qw skips it.
  const float* weights;    // [nsel][32]
  const int32_t* sel_req;  // [nsel] request of each selected row
  const int2* req_fexp;    // [nreq] {lowest, highest} minimum group exponent of the request's folded keys
  int8_t* qw;              // [nsel][32][128]
  int32_t* qw_mul;         // [nsel][32] Horner plan: multiplier exponents m1 | m2 << 8 | m3 << 16 | order << 24
  float* qw_weight;        // [nsel][32]
  int32_t* qw_shift;       // [nsel]
  int32_t* row_wgmma;      // [nsel] exact on the wgmma route: 1 + its plan class (dense_wgmma.cuh); else 0
  // One multiplier a row where every head fits one (kUniformClass); false keeps every row on its
  // per-head plan (DSA_DENSE_PER_HEAD=1, to time the two plans on one machine).
  bool uniform_plan = true;
};
void launch_query_prep(const QueryPrepArgs& a);

}  // namespace dsa::gpu
