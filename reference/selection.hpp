#pragma once
// Selection of the indexer (docs/semantics.md, "Selection"): top-k with the reference
// tie rule (larger score, then smaller position), level one (blocks), level two on both paths,
// and the final ascending write. Pure functions over one row.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/constants.hpp"

namespace dsa::ref {

// ---- top-k with the reference tie rule ----
// The k best of n items (score[i], id[i]): larger score first, then smaller id. Returns the
// chosen ids sorted ascending, min(k, n) of them. `ids` == nullptr means id[i] = i.
// NaN scores are not expected (validation rejects their causes).
std::vector<int32_t> topk_ids(const float* score, const int32_t* ids, int64_t n, int k);
std::vector<int32_t> topk_ids(const double* score, const int32_t* ids, int64_t n, int k);
// bf16 bit patterns, compared as the floats they encode (+0 == -0).
std::vector<int32_t> topk_ids_bf16(const uint16_t* score, const int32_t* ids, int64_t n, int k);

// The source's own top-k (also plain layers): all positions when L <= k, else the k best of
// the dense scores [0, L). Ascending.
std::vector<int32_t> source_topk(const float* dense, int64_t L, int k);
std::vector<int32_t> source_topk(const double* exact, int64_t L, int k);

// ---- level one ----
struct LevelOne {
  std::vector<int32_t> blocks;  // kept block ids ascending (no padding), min(2048, nblocks)
  int64_t valid_len = 0;        // 8*(kept-1) + ((L-1) % 8) + 1, 0 for L = 0
};
int64_t block_count(int64_t L);  // ceil(L / 8)
// Block keys: key[i] = max of scores of positions 8i..8i+7 below L; the newest block +inf.
std::vector<float> block_keys(const float* dense, int64_t L);
std::vector<double> block_keys(const double* exact, int64_t L);
// All blocks when nblocks <= 2048, else the 2048 largest keys (ties -> smaller block id).
LevelOne level_one(const float* dense, int64_t L);
LevelOne level_one(const double* exact, int64_t L);
// valid_len of a kept-block count and L.
int64_t valid_len_of(int64_t kept, int64_t L);
// Candidate column c (< valid_len) -> position blocks[c/8]*8 + c%8.
inline int32_t candidate_position(const LevelOne& l1, int64_t c) {
  return l1.blocks[size_t(c / kBlockSize)] * kBlockSize + int32_t(c % kBlockSize);
}
// Positions of all valid_len candidate columns, in column order (ascending).
std::vector<int32_t> candidate_positions(const LevelOne& l1);

// ---- level two (scores given in candidate-column order, valid_len of them) ----
// Sparse path: rank by bf16 sparse scores. Mask path: rank by fp32 dense scores. Exact: fp64.
// valid_len <= k: all candidates. Returns positions ascending.
std::vector<int32_t> level_two_sparse(const LevelOne& l1, const uint16_t* sparse, int k);
std::vector<int32_t> level_two_mask(const LevelOne& l1, const float* dense, int k);
std::vector<int32_t> level_two_exact(const LevelOne& l1, const double* exact, int k);

// ---- final write ----
// picks (ascending) into a row of width k, -1 padding last.
void write_positions(const std::vector<int32_t>& picks, int k, int32_t* row);
// blocks (ascending) into a row of width 2048, INT32_MAX padding.
void write_blocks(const LevelOne& l1, int32_t* row);

}  // namespace dsa::ref
