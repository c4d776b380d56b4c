// gpu/engine: steps of one batch shape (issue 12). On the decode preset (64 requests x 2 rows,
// ragged contexts up to 131072) and on smoke: a plain step with the output checks, a second plain
// step of the same shape that must allocate no device memory, then one step captured in a CUDA
// graph (no memset, no copy, the launches per layer printed and bounded) and replayed twice, each
// replay bit-identical to the plain step; on smoke, a replay of other values of the same shape.
// ctest -L gpu; exits 77 without a GPU.
#if DSA_HAVE_CUDA
#include <cstdio>
#include <string>

#include "gpu/engine/engine.cuh"
#include "harness/generate/generate.hpp"
#include "tests/catch.hpp"
#include "tests/gpu/same_results.hpp"

using namespace dsa;
using dsa::gpu::DeviceMemoryMeter;
using dsa::test::require_identical;

namespace {

struct MeterMark {
  int64_t bytes = DeviceMemoryMeter::allocated_bytes(), allocations = DeviceMemoryMeter::allocations();
  int64_t copies = DeviceMemoryMeter::copies(), memsets = DeviceMemoryMeter::memsets();
};

// A replay of other values of the captured shape either holds to the plan and equals a plain run
// of those values on a fresh engine, or refuses with the plan's error (never wrong outputs).
void check_other_values(gpu::GpuEngine& engine, PathKind path, const GenerateOptions& captured) {
  GenerateOptions g = captured;
  g.seed = captured.seed + 1;
  const Batch other = generate_batch(g);
  INFO("other values: --seed " << g.seed);
  const RunOptions o;
  gpu::GpuEngine fresh(path);
  const Results plain = fresh.run(other, o);
  try {
    const Results replayed = engine.replay(other, o);
    std::printf("  replay of --seed %llu: the plan held\n", static_cast<unsigned long long>(g.seed));
    require_identical(other, plain, replayed, "replay of other values");
  } catch (const std::runtime_error& e) {
    std::printf("  replay of --seed %llu: %s\n", static_cast<unsigned long long>(g.seed), e.what());
    CHECK(std::string(e.what()).find("captured plan") != std::string::npos);
  }
}

void check_steps(PathKind path, const std::string& preset, bool other_values) {
  GenerateOptions g;
  g.preset = preset;
  g.seed = 11;
  const Batch batch = generate_batch(g);
  const std::string id = std::string(path == PathKind::sparse ? "gpu-sparse" : "gpu-mask") +
                         " on `dsa-harness generate --preset " + preset + " --seed 11`";
  INFO(id);
  std::printf("gpu engine steps: %s, %d rows, max L %d\n", id.c_str(), batch.rows(), batch.max_len());
  gpu::GpuEngine engine(path);
  engine.set_keep_workspace(true);
  const RunOptions o;
  const Results checked = engine.run(batch, o);  // output checks on: every slot written

  engine.set_checks(false);
  const MeterMark before_second;
  const Results second = engine.run(batch, o);
  CHECK(DeviceMemoryMeter::allocated_bytes() - before_second.bytes == 0);
  CHECK(DeviceMemoryMeter::allocations() - before_second.allocations == 0);
  require_identical(batch, checked, second, "second plain step");

  const MeterMark before_capture;
  const Results captured = engine.capture(batch, o);
  CHECK(DeviceMemoryMeter::allocations() - before_capture.allocations == 0);
  CHECK(DeviceMemoryMeter::copies() - before_capture.copies == 0);
  CHECK(DeviceMemoryMeter::memsets() - before_capture.memsets == 0);
  for (const StepRecord& s : captured.steps) {
    std::printf("  captured step %s: %lld launches\n", s.step.c_str(), static_cast<long long>(s.launches));
    INFO("step " << s.step);
    const Layer* layer = s.step == "begin" || s.step == "end" ? nullptr : batch.layer(std::stoi(s.step));
    // key prep, request key facts (exponent ranges, wide-key lists), key fragments; query prep,
    // two dense routes, block amax of the rows off the wgmma route, then the wide-key pass, level
    // one, the tail copy and the own top-k in one launch (few rows: publish_once); query prep, the
    // sparse routes in one launch (few rows), small top-k (gpu-mask: query prep, two dense routes
    // and the wide-key pass, mask top-k). A decode step on the sparse path: at most three a layer
    // (issue 12); its off-route rows run in extra blocks of the sparse wgmma launch.
    const bool decode = preset == "decode" && path == PathKind::sparse;
    const int64_t bound = !layer ? 3 : decode ? 3 : layer->role == Role::source ? 6 : path == PathKind::sparse ? 3 : 5;
    CHECK(s.launches <= bound);
    CHECK((s.step == "end" || s.launches > 0));
  }

  for (int replay = 1; replay <= 2; ++replay) {
    const MeterMark mark;
    const Results replayed = engine.replay(batch, o);
    CHECK(DeviceMemoryMeter::allocations() - mark.allocations == 0);
    require_identical(batch, checked, replayed, "graph replay " + std::to_string(replay));
  }
  if (other_values) check_other_values(engine, path, g);
}

}  // namespace

TEST_CASE("engine steps: no allocation on a second step of one shape; graph replays bit-identical") {
  check_steps(PathKind::sparse, "smoke", true);
  check_steps(PathKind::sparse, "decode", false);  // a second decode batch would double the generation time
  check_steps(PathKind::mask, "smoke", true);
}
#endif
