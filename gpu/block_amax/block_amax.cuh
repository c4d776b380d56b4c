#pragma once
// Level-one block keys (docs/semantics.md "Level one"): key[b] = max of the dense scores of
// positions 8b..8b+7 (all below L except in the newest block, whose key is +inf).
//
// The dense wgmma kernel computes them in its epilogue (DenseWgmmaArgs::keys); this kernel covers
// the rows of the portable kernel (and every row where the wgmma kernel does not run).
#include <cstdint>

namespace dsa::gpu {

// dense [nrows][ld_dense] -> keys [nrows][ld_keys] for b < ceil(L/8): selected row i (rows[j], or
// row0 + j without a list) at dense and keys row i - row0, L = len[i].
void launch_block_amax(const float* dense, int64_t ld_dense, const int32_t* len, const int32_t* rows, int nrows,
                       int row0, int max_len, float* keys, int64_t ld_keys);

// The engine's check of the fused keys: how many of rows row0 .. row0 + nrows - 1's keys differ
// (bits) from what launch_block_amax computes from their dense scores, and the first of them.
// skip (the dense kernel's stores skipped, dense_wgmma.cuh): only the blocks whose keys reach their
// row's final bound are checked, and each of their scores below L must be written (not the
// poison's NaN bits, which the maximum would pass over).
struct KeyMismatches {
  int64_t count = 0;
  int row = -1, block = -1;  // selected row, block index
  int64_t below = 0;         // with skip: the blocks below their row's bound (not checked)
};
KeyMismatches count_block_key_mismatches(const float* dense, int64_t ld_dense, const int32_t* len, int nrows,
                                         int row0, int max_len, const float* keys, int64_t ld_keys,
                                         const uint32_t* skip = nullptr);

}  // namespace dsa::gpu
