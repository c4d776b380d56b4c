#pragma once
// Sparse path, level two: top-k over the bf16 candidate scores of each table row, with the page
// transform (candidate column c -> position blocks[c/8]*8 + c%8) and the ascending write.
#include <cstdint>

namespace dsa::gpu {

// scores [nrows][16384] bf16 bits (valid_len[i] per row); out [nrows][k], -1 padding.
void launch_small_topk(const uint16_t* scores, const int32_t* blocks, const int32_t* valid_len, int nrows,
                       int k, int32_t* out);

}  // namespace dsa::gpu
