#pragma once
// `dsa-harness replay`: runs batch files through implementations, compares each with the
// reference of its own path, the sparse path with the mask path (the public test's rule) and
// every path with reference-exact (quality), times the kernels, logs each finished
// implementation run to DIR/cases.jsonl and writes the reports into DIR.
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "harness/replay/case_id.hpp"  // case IDs and rerun commands
#include "harness/replay/inputs.hpp"   // expand_inputs, default_fixtures_dir
#include "harness/replay/plan.hpp"     // list_implementations
#include "harness/replay/shard.hpp"
#include "core/rules.hpp"
#include "reports/report_model.hpp"

namespace dsa {

struct ReplayOptions {
  std::vector<std::string> inputs;  // files or folders (a folder: its *.h5 files); empty: fixtures
  std::vector<std::string> impls;   // empty: the references and every GPU implementation that runs here
  std::string rows = "all";         // --rows all|N|i,j,k
  uint64_t seed = 0;
  int repeat = 1;                   // >= 2: check that repeated runs are bitwise identical
  double tolerance = rules::kFloorTolerance;
  std::string case_id;              // --case: rerun exactly this case
  std::string out_dir = "dsa-report";
  std::optional<Shard> shard;       // default: from the environment (Slurm array, Indexed Job)
  std::vector<int> devices;         // --devices: several -> one process per GPU, merged; one: no-op
  bool resume = false;
  std::FILE* progress = stderr;     // progress and per-case lines; nullptr: quiet
  std::string program = "/proc/self/exe";  // the dsa-harness binary --devices starts per device
};

// Runs the replay and writes report.json, report.md, junit.xml and report.html into out_dir.
// The returned report's exit_code is the process's. Throws InputError / EnvironmentError.
Report run_replay(const ReplayOptions& options);

}  // namespace dsa
