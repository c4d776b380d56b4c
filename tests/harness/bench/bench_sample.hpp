#pragma once
// A bench-shaped report built from the figures of a real H200 run (bench/results/h200.md, run 16:
// chunk-256k, 16384 rows), through the same functions `dsa-harness bench` uses, so the gate and
// the printers are tested on what a device run writes.
#include <string>
#include <vector>

#include "harness/bench/bench_figures.hpp"

namespace dsa::test {

inline KernelTiming timing(const std::string& kernel, const std::string& layer, double median_ms, double spread,
                           double flops, double bytes) {
  KernelTiming t;
  t.kernel = kernel;
  t.layer = layer;
  t.calls = 1;
  t.samples = 20;
  t.median_ms = median_ms;
  t.min_ms = median_ms * (1 - spread);
  t.max_ms = median_ms * (1 + spread);
  t.flops = flops;
  t.bytes = bytes;
  return t;
}

// `slow`: the kernel whose median (and spread) is multiplied by `factor`.
inline Report bench_sample(const std::string& slow = "", double factor = 1) {
  auto scaled = [&](KernelTiming t) {
    if (t.kernel == slow) t.median_ms *= factor, t.min_ms *= factor, t.max_ms *= factor;
    return t;
  };
  Report r;
  r.environment.gpu = "NVIDIA H200";
  r.settings.rows = "16384";
  r.settings.repeat = 20;
  const std::vector<KernelTiming> ceilings = {
      timing("ceilings/hbm_copy", "all", 0.505, 0.01, 0, 2.0 * (1 << 30)),
      timing("ceilings/l2_read", "all", 0.41, 0.02, 0, 64.0 * 26214400),
      timing("ceilings/int8_wgmma", "all", 4.9, 0.01, 396.0 * 8192 * 2 * 64 * 256 * 32, 0)};
  r.runs.push_back(ceilings_run(ceilings, {"ceilings/fp8_wgmma: not measured in this sample"}, "NVIDIA H200"));
  const Ceilings c = ceilings_of(r);
  InputInfo in;
  in.batch_id = "c0ffee0123456789";
  in.path = "generated: --preset chunk-256k --context 262144";
  in.rows = 16384;
  in.max_len = 262144;
  in.layers = {20, 24, 28, 32, 36};
  r.inputs.push_back(in);
  const double sum_len = 16384.0 * 254000;
  const struct { const char* impl; std::vector<KernelTiming> kernels; } paths[] = {
      {"gpu-sparse",
       {timing("gpu-sparse/dense_logits", "20", 174.6, 0.02, 2.0 * 32 * 128 * sum_len, sum_len * 4),
        timing("gpu-sparse/block_amax", "20", 6.1, 0.03, 0, sum_len * 4),
        timing("gpu-sparse/sparse_logits", "24", 41.3, 0.02, 2.0 * 32 * 128 * 16384 * 16384, 16384.0 * 16384 * 70),
        timing("gpu-sparse/small_topk", "24", 1.9, 0.04, 0, 16384.0 * 16384 * 2)}},
      {"gpu-mask",
       {timing("gpu-mask/dense_logits", "20", 174.9, 0.02, 2.0 * 32 * 128 * sum_len, sum_len * 4),
        timing("gpu-mask/dense_logits.wgmma", "20", 150.0, 0.02, 0, 0),  // a route's share: not summed
        timing("gpu-mask/dense_logits", "24", 175.2, 0.02, 2.0 * 32 * 128 * sum_len, sum_len * 4),
        timing("gpu-mask/mask_topk", "24", 12.4, 0.03, 0, 16384.0 * 16384 * 4)}}};
  for (const auto& p : paths) {
    ImplRun run;
    run.batch_id = in.batch_id;
    run.impl = p.impl;
    run.device = "NVIDIA H200";
    run.rows = 16384;
    run.peak_device_bytes = int64_t(19) << 30;
    for (const KernelTiming& t : p.kernels) run.kernels.push_back(bench_figure(scaled(t), c));
    const std::vector<std::vector<StepRecord>> steps = {{{"20", 190.5, 9}, {"24", 50.2, 6}},
                                                        {{"20", 191.0, 9}, {"24", 50.6, 6}},
                                                        {{"20", 189.9, 9}, {"24", 50.1, 6}}};
    for (const KernelFigure& k : step_figures(p.impl, steps)) run.kernels.push_back(k);
    const std::vector<std::vector<StepRecord>> graph = {{{"20", 0, 3}, {"24", 0, 3}}};
    for (const KernelFigure& k : step_figures(std::string(p.impl) + "/graph", graph)) run.kernels.push_back(k);
    r.runs.push_back(run);
  }
  finalize_report(r);
  r.verdict = Disposition::passed;
  r.exit_code = 0;
  return r;
}

}  // namespace dsa::test
