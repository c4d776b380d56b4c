#pragma once
// `dsa-harness bench`: one run on the device that measures its ceilings first (HBM copy, L2 read,
// int8 and fp8 wgmma loops), then times every kernel of gpu-sparse and gpu-mask on batches at
// several context lengths (generated, or the files given), each kernel's share of the ceilings
// measured in that run, the peak device memory of each path, the kernel launches and wall time of
// each layer step, and optionally the plain PyTorch mask path on the same batches. It writes
// report.json in the replay schema (so `gate` compares two bench runs), report.md (the tables,
// tools/bench-table.py makes the performance record's) and report.html.
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "reports/report_model.hpp"

namespace dsa {

struct BenchOptions {
  std::vector<std::string> inputs;  // batch files; empty: generate one batch per context
  std::string preset = "chunk-256k";
  std::vector<int> contexts = {16384, 65536, 131072, 262144};
  int rows = 256;                   // generated: rows per request; files: rows drawn with --seed (0: all)
  uint64_t seed = 1;
  int samples = 20;                 // timed samples per kernel (--repeat), at least 20
  int step_runs = 3;                // untimed runs per path for the step wall times and launches
  std::string peer;                 // "" or "torch"
  std::string python = "python3";
  std::string peer_script;          // default: bench/torch_mask_path.py
  std::string out_dir = "dsa-bench";
  std::FILE* progress = stderr;     // progress bar with ETA; nullptr: quiet
};

// Checks the options (InputError naming the option), refuses to run without a usable GPU
// (EnvironmentError: exit 4, saying why), then measures and writes the reports into out_dir.
Report run_bench(const BenchOptions& options);

// The option checks alone (CI tests them without a GPU).
void check_bench_options(const BenchOptions& options);

}  // namespace dsa
