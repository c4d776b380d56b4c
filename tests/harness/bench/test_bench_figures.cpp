// The bench's figures: ceilings read back from their run, floors and shares against the measured
// ceilings, step figures; and the gate on two bench reports (a planted slowdown is a regression).
#include "harness/bench/bench_figures.hpp"

#include <algorithm>
#include <cmath>

#include "harness/gate/gate.hpp"
#include "tests/catch.hpp"
#include "tests/harness/bench/bench_sample.hpp"

using namespace dsa;
using dsa::test::timing;

TEST_CASE("bench figures: the ceilings come back from their run as rates") {
  const Report r = test::bench_sample();
  const Ceilings c = ceilings_of(r);
  CHECK(c.hbm_bytes == Approx(2.0 * (1 << 30) / 0.505e-3));
  CHECK(c.l2_bytes == Approx(64.0 * 26214400 / 0.41e-3));
  CHECK(c.int8_ops == Approx(396.0 * 8192 * 2 * 64 * 256 * 32 / 4.9e-3));
  CHECK(c.fp8_flops == 0);
  CHECK(c.tensor() == c.int8_ops);  // the int8 loop judges the exact route
  const ImplRun& run = *std::find_if(r.runs.begin(), r.runs.end(), [](const ImplRun& x) { return x.impl == "ceilings"; });
  CHECK(run.batch_id == "device");
  CHECK(run.reason == "ceilings/fp8_wgmma: not measured in this sample");
  for (const KernelFigure& k : run.kernels) CHECK(k.ceiling_share == 1);
}

TEST_CASE("bench figures: a kernel's floor is the slower of the measured tensor and memory ceilings") {
  Ceilings c;
  c.hbm_bytes = 4e12;
  c.int8_ops = 1e15;
  const KernelFigure math = bench_figure(timing("k", "20", 10, 0.01, 4e12, 4e9), c);  // 4 ms math, 1 ms bytes
  CHECK(math.floor_ms == Approx(4.0));
  CHECK(math.ceiling_share == Approx(0.4));
  const KernelFigure memory = bench_figure(timing("k", "20", 2, 0.01, 1e11, 4e9), c);  // 0.1 ms math, 1 ms bytes
  CHECK(memory.floor_ms == Approx(1.0));
  CHECK(memory.ceiling_share == Approx(0.5));
  CHECK(memory.gbps == Approx(2000));
  Ceilings none;  // nothing measured: the constants of report_model.hpp
  CHECK(bench_figure(timing("k", "20", 2, 0.01, 0, 4.25e9), none).floor_ms == Approx(1.0));
}

TEST_CASE("bench figures: steps give median, min, max of the wall time and the launches") {
  const std::vector<KernelFigure> f =
      step_figures("gpu-sparse", {{{"begin", 3, 2}, {"20", 10, 7}}, {{"begin", 1, 2}, {"20", 12, 7}},
                                  {{"begin", 2, 2}, {"20", 11, 8}}});
  REQUIRE(f.size() == 2);
  CHECK(f[0].kernel == "gpu-sparse/step");
  CHECK(f[0].layer == "begin");
  CHECK(f[1].layer == "20");
  CHECK(f[1].median_ms == 11);
  CHECK(f[1].min_ms == 10);
  CHECK(f[1].max_ms == 12);
  CHECK(f[1].samples == 3);
  CHECK(f[1].calls == 8);  // the largest count seen
}

TEST_CASE("gate on two bench reports: a planted 15 % slowdown of one kernel is a regression") {
  const Report base = test::bench_sample();
  const Report same = test::bench_sample();
  const GateResult quiet = run_gate(base, same, GateConfig{});
  CHECK(quiet.exit_code == 0);
  CHECK(quiet.kernels_compared == 15);  // 3 ceilings, 4 + 4 kernels, 2 + 2 steps

  // Through report.json, as `dsa-harness gate` reads them.
  const Report slow = report_from_json(report_to_json(test::bench_sample("gpu-mask/mask_topk", 1.15)), "slow.json");
  const GateResult g = run_gate(base, slow, GateConfig{});
  INFO(gate_text(g));
  CHECK(g.exit_code == 2);
  int regressions = 0;
  for (const GateFinding& f : g.findings)
    if (f.kind == GateKind::regression) {
      ++regressions;
      CHECK(f.subject == "gpu-mask gpu-mask/mask_topk @24 [c0ffee0123456789]");
    }
  CHECK(regressions == 1);
}
