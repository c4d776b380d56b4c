#pragma once
// Scores of the indexer (docs/semantics.md, "Scores"): the exact head score rounded once
// to fp32, the dense fp32 score (4-lane fma order), the sparse bf16 score (single-rounding bf16
// fmas) and the exact fp64 score. Pure functions over rows: no I/O, no threads (callers
// parallelise rows).
#include <cstdint>
#include <stdexcept>
#include <string>

#include "core/constants.hpp"

namespace dsa::ref {

// The keys of one request: pool slot bytes of request-relative compressed position p.
struct KeyView {
  const uint8_t* pool = nullptr;   // /index_k/pool, [pages, P*68]
  int page_size = 128;             // P
  const int32_t* table = nullptr;  // the request's page-table row

  const uint8_t* page(int64_t p) const {
    return pool + int64_t(table[p / page_size]) * page_size * kSlotBytes;
  }
  const uint8_t* payload(int64_t p) const { return page(p) + (p % page_size) * kPackedDim; }
  const uint8_t* scale(int64_t p) const {
    return page(p) + int64_t(page_size) * kPackedDim + (p % page_size) * kScaleGroups;
  }
};

// One query row of one layer: q [H][64] packed e2m1, q_scale [H][4] ue8m0, weights [H].
struct QueryRow {
  const uint8_t* q = nullptr;
  const uint8_t* q_scale = nullptr;
  const float* weights = nullptr;
};

// Thrown by the row-level functions when an exact head score overflows fp32 (invalid input);
// the caller turns it into dsa::InputError naming the file, layer dataset and row.
struct ScoreOverflow : std::runtime_error {
  ScoreOverflow(int64_t position_, int head_)
      : std::runtime_error("head score overflows fp32 at position " + std::to_string(position_) +
                           ", head " + std::to_string(head_)),
        position(position_), head(head_) {}
  int64_t position;
  int head;
};

// ---- one (head, position) ----
// G_g = sum over the 32 dims of group g of fp4_twice(q) * fp4_twice(k): integers, |G| <= 4608.
void group_sums(const uint8_t* q64, const uint8_t* k64, int32_t g4[4]);
// sum_g G_g * 2^(qs_g + ks_g - 256) summed exactly (any exponents), rounded ONCE to fp32 with
// RNE and IEEE subnormals. Overflow gives +-inf.
float combine_fp32(const int32_t g4[4], const uint8_t qs4[4], const uint8_t ks4[4]);
// The same exact sum rounded once to fp64 (what the exact score uses).
double combine_fp64(const int32_t g4[4], const uint8_t qs4[4], const uint8_t ks4[4]);
// s = q . k on dequantized values, exact, rounded once (the two functions above composed).
float head_score_fp32(const uint8_t* q64, const uint8_t* qs4, const uint8_t* k64, const uint8_t* ks4);
double head_score_fp64(const uint8_t* q64, const uint8_t* qs4, const uint8_t* k64, const uint8_t* ks4);

// ---- one position, from its 32 head scores ----
// r_h = max(s_h, 0); lane l accumulates h = l, l+4, ..., l+28 with std::fma; (a0+a2)+(a1+a3).
float dense_score(const float s[kHeads], const float w[kHeads]);
// bf16(a*b + c) with ONE rounding (a, b, c bf16 bit patterns).
uint16_t bf16_fma(uint16_t a, uint16_t b, uint16_t c);
// RNE of a double to bf16 with one rounding (subnormals, overflow to inf).
uint16_t bf16_from_double(double x);
// a_h = bf16(s_h), negatives -> +0; w_h = bf16(w); 4 bf16 lanes of bf16_fma; then
// t0 = bf16(a0+a2), t1 = bf16(a1+a3), bf16(t0+t1). Returns bf16 bits.
uint16_t sparse_score(const float s[kHeads], const float w[kHeads]);
// sum_h w_h * max(s_h, 0) in double (s_h the exact head scores, rounded to double).
double exact_score(const double s[kHeads], const float w[kHeads]);

// ---- one row (the hot loops; tiled, SIMD, exact) ----
// Dense scores of positions [0, L): out[p]. Throws ScoreOverflow.
void dense_scores_row(const QueryRow& q, const KeyView& keys, int64_t L, float* out);
// Several rows of ONE request at once (they share the keys; decoded once per tile):
// out[i][p] for p < lens[i].
void dense_scores_rows(const QueryRow* rows, int n, const KeyView& keys, const int64_t* lens,
                       float* const* out);
// Exact fp64 scores of positions [0, L).
void exact_scores_row(const QueryRow& q, const KeyView& keys, int64_t L, double* out);
// At a list of positions (candidates): out[i] is the score of positions[i].
void dense_scores_at(const QueryRow& q, const KeyView& keys, const int32_t* positions, int64_t n, float* out);
void sparse_scores_at(const QueryRow& q, const KeyView& keys, const int32_t* positions, int64_t n,
                      uint16_t* out);
void exact_scores_at(const QueryRow& q, const KeyView& keys, const int32_t* positions, int64_t n,
                     double* out);
// Several queries (e.g. the consumer layers of one row) at the same positions: each tile of keys
// is decoded once for all of them. out[i][j] is query i's score at positions[j]; positions ==
// nullptr means positions 0..n-1.
void dense_scores_at_multi(const QueryRow* queries, int nq, const KeyView& keys, const int32_t* positions, int64_t n,
                           float* const* out);
void sparse_scores_at_multi(const QueryRow* queries, int nq, const KeyView& keys, const int32_t* positions, int64_t n,
                            uint16_t* const* out);
void exact_scores_at_multi(const QueryRow* queries, int nq, const KeyView& keys, const int32_t* positions, int64_t n,
                           double* const* out);
// The 32 head scores s_h (fp32) at each position: out[i * 32 + h].
void head_scores_at(const QueryRow& q, const KeyView& keys, const int32_t* positions, int64_t n, float* out);

// Straightforward scalar versions (one head, one position at a time) kept as the second,
// independent computation for tests and benchmarks.
void dense_scores_row_scalar(const QueryRow& q, const KeyView& keys, int64_t L, float* out);

}  // namespace dsa::ref
