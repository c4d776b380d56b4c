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

#include "reports/report_model.hpp"
#include "harness/replay/shard.hpp"
#include "core/rules.hpp"

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

// The bundled fixtures folder (baked in at build time).
std::string default_fixtures_dir();

// Files and folders -> batch files, sorted; a folder contributes its *.h5 files (not its
// subfolders, so fixtures/golden/ is skipped). Throws InputError for a missing path.
std::vector<std::string> expand_inputs(const std::vector<std::string>& args);

// The implementations replay runs by default and those it can name, with why one cannot run.
struct ImplAvailability {
  std::string name, description, reason;  // reason empty when it runs here
};
std::vector<ImplAvailability> list_implementations();

// Case IDs: batch-id/impl/layer[/rows]; rows as ascending ranges "0-3,17".
struct CaseId {
  std::string batch_id, impl, layer, rows;
};
CaseId parse_case_id(const std::string& id);  // throws InputError("--case", id, rule)
std::string format_case_id(const CaseId& id);
std::string rows_text(const std::vector<int>& rows);           // {} -> "" (all rows)
std::vector<int> parse_rows_text(const std::string& text, int row_count);  // throws InputError

// `word` as one POSIX shell word: unchanged when it holds only safe characters, else in single
// quotes (a ' inside becomes '\''), so a printed command pastes and runs.
std::string shell_quote(const std::string& word);

// The command line that reruns one case (paths shell-quoted).
std::string rerun_command(const std::string& input, const std::string& case_id, double tolerance);

}  // namespace dsa
