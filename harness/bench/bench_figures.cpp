#include "harness/bench/bench_figures.hpp"

#include <algorithm>
#include <map>

#include "gpu/ceilings/ceilings.hpp"

namespace dsa {

namespace {

double median_of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n == 0 ? 0 : n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

}  // namespace

double Ceilings::tensor() const {
  if (int8_ops > 0) return int8_ops;
  return fp8_flops > 0 ? fp8_flops : kCeilingFlopsPerSecond;
}

double Ceilings::memory() const { return hbm_bytes > 0 ? hbm_bytes : kCeilingBytesPerSecond; }

ImplRun ceilings_run(const std::vector<KernelTiming>& timings, const std::vector<std::string>& not_supported,
                     const std::string& device) {
  ImplRun run;
  run.batch_id = kCeilingsBatch;
  run.impl = kCeilingsImpl;
  run.device = device;
  for (const KernelTiming& t : timings) {
    KernelFigure k = kernel_figure(t.kernel, t.layer, t.calls, t.samples, t.median_ms, t.min_ms, t.max_ms,
                                   t.flops, t.bytes);
    k.floor_ms = k.median_ms;  // a ceiling is its own floor
    k.ceiling_share = 1;
    run.kernels.push_back(k);
  }
  for (const std::string& why : not_supported) run.reason += (run.reason.empty() ? "" : "; ") + why;
  run.status = timings.empty() ? Disposition::not_supported : Disposition::passed;
  return run;
}

Ceilings ceilings_of(const Report& report) {
  Ceilings c;
  for (const ImplRun& run : report.runs) {
    if (run.impl != kCeilingsImpl) continue;
    for (const KernelFigure& k : run.kernels) {
      if (k.kernel == gpu::kCeilingHbmCopy) c.hbm_bytes = k.gbps * 1e9;
      else if (k.kernel == gpu::kCeilingL2Read) c.l2_bytes = k.gbps * 1e9;
      else if (k.kernel == gpu::kCeilingInt8Wgmma) c.int8_ops = k.tflops * 1e12;
      else if (k.kernel == gpu::kCeilingFp8Wgmma) c.fp8_flops = k.tflops * 1e12;
    }
  }
  return c;
}

KernelFigure bench_figure(const KernelTiming& t, const Ceilings& c) {
  KernelFigure k = kernel_figure(t.kernel, t.layer, t.calls, t.samples, t.median_ms, t.min_ms, t.max_ms, t.flops,
                                 t.bytes);
  // The slower of the two measured ceilings bounds the kernel.
  k.floor_ms = std::max(t.flops / c.tensor(), t.bytes / c.memory()) * 1e3;
  k.ceiling_share = k.median_ms > 0 ? k.floor_ms / k.median_ms : 0;
  return k;
}

std::vector<KernelFigure> step_figures(const std::string& impl, const std::vector<std::vector<StepRecord>>& runs) {
  std::vector<std::string> order;  // protocol order of the first run
  std::map<std::string, std::vector<double>> wall;
  std::map<std::string, int64_t> launches;
  for (const std::vector<StepRecord>& steps : runs)
    for (const StepRecord& s : steps) {
      if (!wall.count(s.step)) order.push_back(s.step);
      wall[s.step].push_back(s.wall_ms);
      launches[s.step] = std::max(launches[s.step], s.launches);
    }
  std::vector<KernelFigure> out;
  for (const std::string& step : order) {
    const std::vector<double>& w = wall[step];
    KernelFigure k = kernel_figure(impl + "/step", step, int(launches[step]), int(w.size()), median_of(w),
                                   *std::min_element(w.begin(), w.end()), *std::max_element(w.begin(), w.end()), 0, 0);
    out.push_back(k);
  }
  return out;
}

}  // namespace dsa
