// The bf16 instructions of the fast sparse route (gpu/common/bf16_selftest) against their
// step-by-step emulation: every finite operand kind, subnormals, cancellations.
#include "tests/catch.hpp"

#if DSA_HAVE_CUDA
#include "gpu/common/bf16_selftest.hpp"

TEST_CASE("gpu bf16: fma.rn.bf16x2 and cvt.rn.relu.bf16x2 equal the single-rounding emulation") {
  for (uint64_t seed : {1ull, 2ull, 3ull}) {
    const dsa::gpu::Bf16SelfTest r = dsa::gpu::bf16_selftest(seed, int64_t(1) << 24);
    INFO("seed " << seed << ": " << r.mismatches << " of " << r.checked << " differ; first: " << r.first);
    CHECK(r.checked == int64_t(2) << 24);
    CHECK(r.mismatches == 0);
  }
}
#endif
