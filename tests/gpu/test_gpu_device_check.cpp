// The device check (tools/device-check.sh runs these hidden cases on the H200): a generator preset
// built in memory, gpu-sparse and gpu-mask against the reference of their own path (validity,
// tie-aware exactness, bitwise scores: all 100 %), gpu-sparse against gpu-mask by the public
// test's rule, and the per-kernel timing table. Environment:
//   DSA_CHECK_PRESET  smoke | edge | edge-r2 | sglang-test | chunk-256k | decode  (default smoke)
//   DSA_CHECK_ROWS    N: N sampled rows (plus shortest and longest), default all rows
//   DSA_CHECK_TIMING  1: also time every kernel over all rows (no reference, no scores)
//   DSA_CHECK_TABLE   file to write the timing table to (Markdown)
//   DSA_CHECK_SAMPLES timed samples per kernel (default 20; 1 under a profiler)
//   DSA_CHECK_PATHS   sparse: time gpu-sparse only (a profiler run need not wait for the mask path)
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "gpu/gpu_implementations.hpp"
#include "harness/compare/compare.hpp"
#include "harness/generate/generate.hpp"
#include "harness/impls/reference.hpp"
#include "harness/batch/row_selection.hpp"
#include "tests/catch.hpp"

using namespace dsa;

namespace {

std::string env(const char* name, const char* fallback) {
  const char* v = std::getenv(name);
  return v && *v ? v : fallback;
}

void print_comparison(const Comparison& c) {
  std::printf("  %s vs %s (%s): %s\n", c.impl.c_str(), c.against.c_str(), rule_name(c.rule),
              disposition_name(c.disposition));
  for (const LayerComparison& l : c.layers) {
    std::printf("    layer %-8s %-9s %s%s%s\n", l.layer.c_str(), l.role.c_str(), disposition_name(l.disposition),
                l.failed_metric.empty() ? "" : " failed: ", l.failed_metric.c_str());
    for (const Record& r : l.records)
      if (r.name == "validity" || r.name == "exact" || r.name.find("bit_identical") != std::string::npos ||
          r.name.find("max_ulp") != std::string::npos || r.name == "agreement.min" ||
          r.name == "floor.pick_violations" || r.name == "floor.miss_violations" || r.name == "tails.identical")
        std::printf("      %-32s %.6g %s\n", r.name.c_str(), r.value, r.unit.c_str());
    for (const Mismatch& m : l.mismatches) std::printf("      %s\n", mismatch_text(l.layer, m).c_str());
  }
}

std::string timing_table(const std::vector<Results>& runs, const std::string& preset) {
  std::ostringstream s;
  s << "| kernel | layer | calls | median ms | min ms | max ms | TFLOP/s | GB/s |\n";
  s << "|---|---|---|---|---|---|---|---|\n";
  char line[512];
  for (const Results& r : runs) {
    double total = 0;
    for (const KernelTiming& t : r.timings) {
      const double tflops = t.flops > 0 ? t.flops / (t.median_ms * 1e-3) / 1e12 : 0;
      const double gbs = t.bytes > 0 ? t.bytes / (t.median_ms * 1e-3) / 1e9 : 0;
      std::snprintf(line, sizeof line, "| %s | %s | %d | %.3f | %.3f | %.3f | %.1f | %.0f |\n", t.kernel.c_str(),
                    t.layer.c_str(), t.calls, t.median_ms, t.min_ms, t.max_ms, tflops, gbs);
      s << line;
      const bool share = t.kernel.find('.', t.kernel.rfind('/')) != std::string::npos;  // "dense_logits.wgmma"
      if (t.kernel.find("prep") == std::string::npos && !share) total += t.median_ms * t.calls;
    }
    std::snprintf(line, sizeof line, "| %s total (kernels above, without prep and shares) | %s | | %.3f | | | | |\n",
                  r.name.c_str(), preset.c_str(), total);
    s << line;
    std::snprintf(line, sizeof line, "| %s peak device memory | | | %.2f GiB | | | | |\n", r.name.c_str(),
                  double(r.peak_device_bytes) / 1073741824.0);
    s << line;
  }
  return s.str();
}

}  // namespace

TEST_CASE("device check: gpu paths against the reference on a preset", "[.device-check]") {
  const std::string preset = env("DSA_CHECK_PRESET", "smoke");
  const int nrows = std::atoi(env("DSA_CHECK_ROWS", "0").c_str());
  GenerateOptions g;
  g.preset = preset;
  g.seed = 0;
  const Batch batch = generate_batch(g);
  std::printf("device check: %s, %d rows, %d layers, max L %d; %s\n", preset.c_str(), batch.rows(),
              int(batch.layers.size()), batch.max_len(), gpu::describe_device().c_str());
  RunOptions o;
  o.scores = true;
  if (nrows > 0) o.rows = draw_rows(batch, nrows, 0);

  const Results ref_sparse = make_reference(PathKind::sparse)->run(batch, o);
  const Results ref_mask = make_reference(PathKind::mask)->run(batch, o);
  const Results gpu_sparse = gpu::make_gpu_sparse()->run(batch, o);
  const Results gpu_mask = gpu::make_gpu_mask()->run(batch, o);

  const Comparison a = compare_results(batch, gpu_sparse, PathKind::sparse, ref_sparse, PathKind::sparse);
  const Comparison b = compare_results(batch, gpu_mask, PathKind::mask, ref_mask, PathKind::mask);
  const Comparison c = compare_results(batch, gpu_sparse, PathKind::sparse, gpu_mask, PathKind::mask);
  print_comparison(a);
  print_comparison(b);
  print_comparison(c);
  // Strict: every layer compared and passed; a layer "not run" or missing is a failure.
  for (const Comparison* cmp : {&a, &b, &c}) {
    CHECK(cmp->disposition == Disposition::passed);
    for (const LayerComparison& l : cmp->layers) {
      INFO(cmp->impl << " vs " << cmp->against << " layer " << l.layer << ": " << l.failed_metric);
      CHECK(l.disposition == Disposition::passed);
    }
  }
}

TEST_CASE("device check: per-kernel timings over all rows", "[.device-timing]") {
  const std::string preset = env("DSA_CHECK_PRESET", "smoke");
  GenerateOptions g;
  g.preset = preset;
  g.seed = 0;
  const Batch batch = generate_batch(g);
  RunOptions o;
  o.timing = true;
  o.timing_samples = std::max(1, std::atoi(env("DSA_CHECK_SAMPLES", "20").c_str()));
  std::vector<Results> runs;
  runs.push_back(gpu::make_gpu_sparse()->run(batch, o));
  if (env("DSA_CHECK_PATHS", "both") != "sparse") runs.push_back(gpu::make_gpu_mask()->run(batch, o));
  const std::string table = timing_table(runs, preset);
  std::printf("%s per-kernel timings (%s)\n%s", preset.c_str(), gpu::describe_device().c_str(), table.c_str());
  for (const Results& r : runs) std::printf("notes %s: %s\n", r.name.c_str(), r.notes.c_str());
  const std::string path = env("DSA_CHECK_TABLE", "");
  if (!path.empty()) {
    std::ofstream f(path);
    f << "# " << preset << " on " << gpu::describe_device() << "\n\n" << table;
  }
  for (const Results& r : runs) CHECK(!r.timings.empty());
}
