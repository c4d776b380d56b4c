#pragma once
// Level-one block keys (docs/semantics.md "Level one"): key[b] = max of the dense scores of
// positions 8b..8b+7 (all below L except in the newest block, whose key is +inf).
#include <cstdint>

namespace dsa::gpu {

// dense [nrows][ld_dense] -> keys [nrows][ld_keys] for b < ceil(L/8).
void launch_block_amax(const float* dense, int64_t ld_dense, const int32_t* len, int nrows, int max_len,
                       float* keys, int64_t ld_keys);

}  // namespace dsa::gpu
