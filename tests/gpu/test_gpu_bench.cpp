// `dsa-harness bench` on the device, small: two generated contexts, 32 rows. The report holds the
// ceilings, every kernel of both paths with a share of the measured ceilings, the steps with
// their launches, the peak memory; it round-trips through report.json and gates clean against
// itself; the PyTorch peer runs where python3 has torch (as on the GPU box) and says why not
// elsewhere.
#include "harness/bench/bench.hpp"

#include <cstdlib>
#include <unistd.h>

#include <filesystem>

#include "harness/bench/bench_figures.hpp"
#include "harness/gate/gate.hpp"
#include "tests/catch.hpp"

using namespace dsa;

namespace {

bool python_has_torch() { return std::system("python3 -c 'import torch' > /dev/null 2>&1") == 0; }

}  // namespace

TEST_CASE("gpu bench: ceilings, both paths across two contexts, steps, memory, peer") {
  BenchOptions o;
  o.contexts = {4096, 16384};
  o.rows = 32;
  o.progress = nullptr;
  o.peer = "torch";
  o.out_dir = (std::filesystem::temp_directory_path() / ("dsa-gpu-bench-" + std::to_string(::getpid()))).string();
  const Report r = run_bench(o);
  CHECK(r.exit_code == 0);
  CHECK(r.inputs.size() == 2);
  const Ceilings c = ceilings_of(r);
  CHECK(c.hbm_bytes > 0.5e12);
  CHECK(c.l2_bytes > c.hbm_bytes);
  int paths = 0, peers = 0;
  for (const ImplRun& run : r.runs) {
    INFO(run.impl << " " << run.batch_id << " " << run.reason);
    if (run.impl == "gpu-sparse" || run.impl == "gpu-mask") {
      ++paths;
      CHECK(run.status == Disposition::passed);
      CHECK(run.peak_device_bytes > 0);
      bool dense = false, steps = false;
      for (const KernelFigure& k : run.kernels) {
        if (k.kernel == run.impl + "/dense_logits") {
          dense = true;
          CHECK(k.ceiling_share > 0);
          CHECK(k.ceiling_share < 1.05);  // a kernel above the measured ceiling means a wrong ceiling
        }
        if (k.kernel == run.impl + "/step" && k.layer == "20") {
          steps = true;
          CHECK(k.calls > 0);
          CHECK(k.samples == 3);
        }
      }
      CHECK(dense);
      CHECK(steps);
    }
    if (run.impl == kTorchPeerImpl) {
      ++peers;
      if (python_has_torch()) CHECK(run.status == Disposition::passed);
      else CHECK(run.status == Disposition::not_run);
    }
  }
  CHECK(paths == 4);
  CHECK(peers == 2);
  const Report back = read_report(o.out_dir + "/report.json");
  CHECK(run_gate(back, back, GateConfig{}).exit_code == 0);
  CHECK(std::filesystem::exists(o.out_dir + "/report.md"));
  CHECK(std::filesystem::exists(o.out_dir + "/report.html"));
  std::filesystem::remove_all(o.out_dir);
}
