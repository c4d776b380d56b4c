// gpu-sparse and gpu-mask on every generator preset (ctest -L gpu; exits 77 without a GPU):
// smoke, edge (four consumers, every edge case), edge-r2 (plain layers at compress ratio 2),
// sglang-test (rows at 40000 positions) and a reduced chunk-256k (24000 positions), on sampled
// rows. Each GPU path must pass the strict rules (docs/rules.md) against the reference of its
// own path, and gpu-sparse the public test's rule against gpu-mask: every layer of the batch
// compared and passed, none "not run".
#include <cstdio>
#include <string>

#include "gpu/gpu_implementations.hpp"
#include "harness/compare/compare.hpp"
#include "harness/generate/generate.hpp"
#include "harness/impls/reference.hpp"
#include "harness/batch/row_selection.hpp"
#include "tests/catch.hpp"

using namespace dsa;

namespace {

Batch preset_batch(const std::string& preset) {
  GenerateOptions o;
  o.preset = preset;
  o.seed = 7;
  if (preset == "chunk-256k") {  // reduced: still beyond 20000 positions and 2048 blocks
    o.context = 24000;
    o.rows_per_request = 64;
  }
  return generate_batch(o);
}

// Every layer part passed (the first failure's coordinates in the message otherwise), and every
// batch layer was compared.
void require_strict_pass(const Batch& batch, const Comparison& c) {
  INFO(c.impl << " vs " << c.against << " (" << rule_name(c.rule) << ")");
  for (const LayerComparison& l : c.layers) {
    INFO("layer " << l.layer << ": " << disposition_name(l.disposition) << " " << l.failed_metric
                  << (l.mismatches.empty() ? "" : " -- " + mismatch_text(l.layer, l.mismatches.front())));
    CHECK(l.disposition == Disposition::passed);
  }
  for (const Layer& layer : batch.layers) {
    bool seen = false;
    for (const LayerComparison& l : c.layers) seen = seen || l.layer == std::to_string(layer.id);
    INFO("layer " << layer.id);
    CHECK(seen);
  }
  CHECK(c.disposition == Disposition::passed);
}

}  // namespace

TEST_CASE("gpu paths pass the strict rules on every generator preset") {
  bool long_rows = false, ratio_two = false, four_consumers = false;
  for (const std::string& preset : preset_names()) {
    const Batch batch = preset_batch(preset);
    INFO("preset " << preset);
    std::printf("gpu presets: %s, %d rows, max L %d\n", preset.c_str(), batch.rows(), batch.max_len());
    RunOptions o;
    o.scores = true;
    o.rows = select_rows(batch, "6", 1);  // six drawn rows, the shortest and the longest
    const Results ref_sparse = make_reference(PathKind::sparse)->run(batch, o);
    const Results ref_mask = make_reference(PathKind::mask)->run(batch, o);
    const Results gpu_sparse = gpu::make_gpu_sparse()->run(batch, o);
    const Results gpu_mask = gpu::make_gpu_mask()->run(batch, o);
    require_strict_pass(batch, compare_results(batch, gpu_sparse, PathKind::sparse, ref_sparse, PathKind::sparse));
    require_strict_pass(batch, compare_results(batch, gpu_mask, PathKind::mask, ref_mask, PathKind::mask));
    require_strict_pass(batch, compare_results(batch, gpu_sparse, PathKind::sparse, gpu_mask, PathKind::mask));
    long_rows = long_rows || batch.max_len() > 20000;
    ratio_two = ratio_two || batch.compress_ratio == 2;
    four_consumers = four_consumers || batch.layers_with(Role::consumer).size() == 4;
  }
  // What the presets are here for.
  CHECK(long_rows);
  CHECK(ratio_two);
  CHECK(four_consumers);
}
