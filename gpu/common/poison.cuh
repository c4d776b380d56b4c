#pragma once
// Output hygiene: outputs are poisoned (every byte set to a pattern) before a launch, and after
// it every slot that must have been written is checked to differ from the poison.
#include <cstdint>
#include <string>

namespace dsa::gpu {

constexpr int kPoisonByteFloat = 0xFF;  // fp32 / bf16: NaN, never a valid score
constexpr int kPoisonByteInt = 0xA5;    // int32: 0xA5A5A5A5, negative and not -1

// Counts cells of rows [0, nrows) still holding the poison: row i spans columns
// [0, lens[i] / len_div rounded up) (lens == nullptr: `width` columns).
int64_t count_poison_u32(const uint32_t* data, int64_t ld, int nrows, const int32_t* lens, int len_div,
                         int width, uint32_t poison);
int64_t count_poison_u16(const uint16_t* data, int64_t ld, int nrows, const int32_t* lens, int len_div,
                         int width, uint16_t poison);
// Throws std::runtime_error("<what>: N slots not written") when count != 0.
void require_written(int64_t count, const std::string& what);

}  // namespace dsa::gpu
