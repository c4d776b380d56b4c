#pragma once
// A constructed report for printer, gate and merge tests: two batches at different contexts,
// a GPU implementation with kernel timings, cases with per-row figures and worst rows. Values
// come from a small LCG so nothing is all-zero or hand-tuned to a printer's output.
#include <cstdint>
#include <string>

#include "reports/report_model.hpp"

namespace dsa::test {

inline double lcg(uint64_t& state) {
  state = state * 6364136223846793005ull + 1442695040888963407ull;
  return double(state >> 11) / double(1ull << 53);
}

inline LayerComparison sample_part(const std::string& layer, uint64_t& seed, bool failing) {
  LayerComparison part;
  part.layer = layer;
  part.role = "consumer";
  double sum = 0, min = 1;
  for (int r = 0; r < 40; ++r) {
    RowFigure f;
    f.row = r;
    f.length = 1000 + 37 * r;
    f.agreement = 0.95 + 0.05 * lcg(seed);
    f.floor_margin = -0.01 + 0.2 * lcg(seed);
    f.exact = f.agreement == 1.0;
    sum += f.agreement;
    if (f.agreement < min) min = f.agreement;
    part.rows.push_back(f);
  }
  part.records = {{"validity", 1.0, "fraction", "must be 1"},
                  {"agreement.mean", sum / 40, "fraction", "higher is better"},
                  {"agreement.min", min, "fraction", "higher is better"},
                  {"floor.violating_rows", failing ? 2.0 : 0.0, "count", "must be 0"}};
  if (failing) {
    part.disposition = Disposition::incorrect;
    part.failed_metric = "floor.violating_rows";
    part.mismatches.push_back({"position", 17, 3, "4097", "4105", "score 1.25 vs floor 1.5 (margin -0.17)"});
  }
  return part;
}

inline ImplRun sample_run(const std::string& batch, const std::string& impl, double scale) {
  ImplRun run;
  run.batch_id = batch;
  run.impl = impl;
  run.device = impl.rfind("gpu", 0) == 0 ? "NVIDIA H200" : "cpu";
  run.rows = 40;
  if (run.device != "cpu") {
    run.kernels.push_back(kernel_figure("gpu-sparse/sparse_logits", "24", 1, 20, 1.60 * scale, 1.55 * scale,
                                        1.70 * scale, 2.2e12 * scale, 1e9));
    run.kernels.push_back(kernel_figure("gpu-sparse/small_topk", "24", 1, 20, 0.21 * scale, 0.20 * scale,
                                        0.23 * scale, 0, 0.54e9 * scale));
  }
  return run;
}

// gpu-mask on a machine that cannot run it: reported "not supported", with its reason.
inline ImplRun unsupported_run(const std::string& reason) {
  ImplRun run;
  run.batch_id = "aaaaaaaaaaaaaaaa";
  run.impl = "gpu-mask";
  run.status = Disposition::not_supported;
  run.reason = reason;
  return run;
}

inline CaseResult sample_case(const std::string& batch, const std::string& impl, const std::string& layer,
                              uint64_t& seed, bool failing) {
  CaseResult c;
  c.batch_id = batch;
  c.impl = impl;
  c.layer = layer;
  c.role = "consumer";
  c.id = batch + "/" + impl + "/" + layer;
  c.input = "fixtures/" + batch + ".h5";
  c.rerun = "dsa-harness replay " + c.input + " --case " + c.id;
  CaseComparison own{Rule::own_path, "reference-sparse", {sample_part(layer, seed, false)}};
  CaseComparison pub{Rule::public_test, "gpu-mask", {sample_part(layer, seed, failing)}};
  c.comparisons = {own, pub};
  c.verdict = case_verdict(c.comparisons, &c.failed_metric, &c.message);
  WorstRow w;
  w.row = 17;
  w.length = 1629;
  w.agreement = 0.96;
  w.floor_margin = -0.17;
  w.kth_score = 1.5;
  w.around_kth = {{88, 1.75, 0.17}, {4097, 1.5, 0}, {4105, 1.25, -0.17}};
  w.missed = {{4097, 1.5, 0}};
  w.extra = {{4105, 1.25, -0.17}};
  c.worst.push_back(w);
  return c;
}

// Two batches ("aaaa..." at context 4000, "bbbb..." at 40000), gpu-sparse timed on both.
// `scale` multiplies kernel times; `failing` plants a floor violation in one case.
inline Report sample_report(double scale = 1.0, bool failing = false, uint64_t seed = 7) {
  Report r;
  r.environment.gpu = "NVIDIA H200";
  r.environment.host = "test-host";
  r.environment.commit = "0123456789ab";
  r.environment.started_at = "2026-01-01T00:00:00Z";
  const std::string batches[2] = {"aaaaaaaaaaaaaaaa", "bbbbbbbbbbbbbbbb"};
  for (int b = 0; b < 2; ++b) {
    InputInfo in;
    in.batch_id = batches[b];
    in.path = "fixtures/" + batches[b] + ".h5";
    in.origin = "synthetic";
    in.requests = 2;
    in.rows = 40;
    in.topk = 512;
    in.max_len = b == 0 ? 4000 : 40000;
    in.layers = {20, 24};
    r.inputs.push_back(in);
    r.runs.push_back(sample_run(batches[b], "reference-sparse", scale));
    r.runs.push_back(sample_run(batches[b], "gpu-sparse", b == 0 ? scale : 10 * scale));
    r.cases.push_back(sample_case(batches[b], "gpu-sparse", "24", seed, failing && b == 1));
  }
  finalize_report(r);
  return r;
}

// `r` with every kernel's samples moved by `factor` (median, min and max alike).
inline Report with_kernels_scaled(Report r, double factor) {
  for (ImplRun& run : r.runs)
    for (KernelFigure& k : run.kernels) {
      k.median_ms *= factor;
      k.min_ms *= factor;
      k.max_ms *= factor;
    }
  return r;
}

}  // namespace dsa::test
