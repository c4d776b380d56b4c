#pragma once
// A device self-test of the bf16 instructions the fast sparse route relies on: each checked
// against the step-by-step emulation of gpu/common/bf16.cuh on random operands (all finite
// bf16 patterns, subnormals, cancellations, ties). Used by tests/gpu (CUDA builds only).
#include <cstdint>
#include <string>

namespace dsa::gpu {

struct Bf16SelfTest {
  int64_t checked = 0;
  int64_t mismatches = 0;
  std::string first;  // the first mismatch with its operands, "" when none
};

// n cases of each kind: fma.rn.bf16x2 against the emulated single-rounding fma, and
// cvt.rn.relu.bf16x2.f32 against RNE + (negatives -> +0).
Bf16SelfTest bf16_selftest(uint64_t seed, int64_t n);

}  // namespace dsa::gpu
