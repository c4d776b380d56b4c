// The device ceilings on a real GPU: every ceiling timed with >= 20 samples, rates in the range an
// H100/H200-class part can reach (a copy kernel that copies nothing, or a wgmma loop that
// serialises, lands outside it), wgmma measured exactly where sm_90a runs, the sustained int8
// rate no higher than the burst's.
#include "gpu/ceilings/ceilings.hpp"

#include <cstdio>

#include "gpu/gpu_implementations.hpp"
#include "tests/catch.hpp"

using namespace dsa;

namespace {

const KernelTiming* find(const gpu::CeilingRun& run, const std::string& name) {
  for (const KernelTiming& t : run.timings)
    if (t.kernel == name) return &t;
  return nullptr;
}

double per_second(const KernelTiming& t, double work) { return work / (t.median_ms / 1e3); }

}  // namespace

TEST_CASE("gpu ceilings: HBM copy, L2 read and the wgmma loops measured with plausible rates") {
  const gpu::CeilingRun run = gpu::measure_ceilings(20);
  for (const KernelTiming& t : run.timings) {
    INFO(t.kernel << ": " << t.median_ms << " ms (" << t.min_ms << ".." << t.max_ms << ")");
    CHECK(t.samples >= 20);
    CHECK(t.min_ms > 0);
    CHECK(t.min_ms <= t.median_ms);
    CHECK(t.median_ms <= t.max_ms);
  }
  const KernelTiming* hbm = find(run, gpu::kCeilingHbmCopy);
  const KernelTiming* l2 = find(run, gpu::kCeilingL2Read);
  REQUIRE(hbm);
  REQUIRE(l2);
  const double hbm_rate = per_second(*hbm, hbm->bytes), l2_rate = per_second(*l2, l2->bytes);
  std::printf("hbm copy %.3f TB/s, L2 read %.3f TB/s\n", hbm_rate / 1e12, l2_rate / 1e12);
  CHECK(hbm_rate > 0.5e12);
  CHECK(hbm_rate < 8e12);   // beyond any HBM3e part: the copy did not happen
  CHECK(l2_rate > 1.2 * hbm_rate);  // the buffer stays in L2

  // describe_device() names the architecture as "(sm_90, ...".
  const bool hopper = gpu::describe_device().find("(sm_90,") != std::string::npos;
  const KernelTiming* int8 = find(run, gpu::kCeilingInt8Wgmma);
  const KernelTiming* fp8 = find(run, gpu::kCeilingFp8Wgmma);
  if (hopper) {
    REQUIRE(int8);
    REQUIRE(fp8);
    const double int8_rate = per_second(*int8, int8->flops), fp8_rate = per_second(*fp8, fp8->flops);
    std::printf("int8 wgmma %.0f TOPS, fp8 wgmma %.0f TFLOP/s\n", int8_rate / 1e12, fp8_rate / 1e12);
    // The H200's datasheet is ~1979 dense; a serialised loop would be far below 400.
    CHECK(int8_rate > 400e12);
    CHECK(int8_rate < 2100e12);
    CHECK(fp8_rate > 400e12);
    CHECK(fp8_rate < 2100e12);
    // Sustained on random operands: at most the burst's rate (a little noise allowed), and not a
    // serialised loop either.
    const KernelTiming* held = find(run, gpu::kCeilingInt8WgmmaSustained);
    REQUIRE(held);
    const double held_rate = per_second(*held, held->flops);
    std::printf("int8 wgmma sustained %.0f TOPS (%.0f %% of the burst)\n", held_rate / 1e12, 100 * held_rate / int8_rate);
    CHECK(held_rate > 400e12);
    CHECK(held_rate < 1.05 * int8_rate);
    CHECK(run.not_supported.empty());
  } else {
    CHECK_FALSE(int8);
    CHECK_FALSE(fp8);
    CHECK_FALSE(find(run, gpu::kCeilingInt8WgmmaSustained));
    CHECK(run.not_supported.size() == 3);
  }
}
