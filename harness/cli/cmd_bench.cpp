// `dsa-harness bench [FILE...]`: ceilings, every kernel of both GPU paths across context lengths,
// and optionally the PyTorch peer, in one run on the device (harness/bench/bench.hpp).
#include <cstdio>

#include "harness/bench/bench.hpp"
#include "harness/cli/commands.hpp"

namespace dsa::cli {

void add_bench_command(CLI::App& app) {
  auto o = std::make_shared<BenchOptions>();
  auto* cmd = app.add_subcommand(
      "bench", "Measure the GPU's ceilings, time every kernel of gpu-sparse and gpu-mask across context lengths "
               "(and the PyTorch peer), write report.json/md/html");
  cmd->add_option("inputs", o->inputs, "batch files (default: one generated batch per --contexts entry)");
  cmd->add_option("--preset", o->preset, "generator preset of the generated batches (default chunk-256k)");
  cmd->add_option("--contexts", o->contexts, "context lengths of the generated batches, comma-separated "
                                             "(default 16384,65536,131072,262144)")
      ->delimiter(',');
  cmd->add_option("--rows", o->rows, "rows per request of the generated batches; with files: rows drawn with "
                                     "--seed, 0 for all (default 256)");
  cmd->add_option("--seed", o->seed, "seed of the generated batches and of the row draw (default 1)");
  cmd->add_option("--repeat", o->samples, "timed samples per kernel, >= 20 (default 20)");
  cmd->add_option("--peer", o->peer, "also time a peer on the same batches: torch (bench/torch_mask_path.py "
                                     "with python3 on PATH)");
  cmd->add_option("--python", o->python, "the Python that runs the peer (default python3 on PATH)");
  cmd->add_option("-o,--output", o->out_dir, "report folder (default ./dsa-bench)");
  cmd->footer("Exit codes: 0 measured, 4 invalid input or no usable GPU (the message says why).");
  cmd->callback([o] {
    const Report report = run_bench(*o);
    std::printf("bench: %zu batch(es), %zu run(s); reports in %s\n", report.inputs.size(), report.runs.size(),
                o->out_dir.c_str());
    exit_code = report.exit_code;
  });
}

}  // namespace dsa::cli
