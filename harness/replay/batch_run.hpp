#pragma once
// Everything replay does on one batch file: run each implementation (once; references serve
// several comparisons), compare it as the plan says, turn the comparisons into cases, log them.
#include <string>
#include <vector>

#include "core/batch.hpp"
#include "harness/replay/case_log.hpp"
#include "harness/replay/progress.hpp"
#include "harness/replay/replay.hpp"

namespace dsa {

struct BatchInput {
  std::string path, id;      // the file and its content ID
  const Batch* batch = nullptr;
  std::vector<int> rows;     // the rows to compute (empty: all)
  double work = 1;           // this batch's share of the progress, per implementation
};

// Runs `targets` (named[i]: whether --impl named it) on one batch and appends their runs and
// cases to `report`; with `only_layer` keeps only that case ("run": a failed run's case).
void run_batch(const ReplayOptions& options, const BatchInput& input, const std::vector<std::string>& targets,
               const std::vector<bool>& named, const std::string& only_layer, CaseLog& log, Progress& progress,
               Report& report);

// Whether replay records and compares scores on these rows of the batch (empty: all rows): only
// while they hold at most 2^24 dense cells. `record` follows it, so recorded outputs carry the
// scores a replay of them will ask for.
bool replay_compares_scores(const Batch& batch, const std::vector<int>& rows);

// What a report records about one input batch.
InputInfo input_info(const std::string& path, const Batch& batch, const std::string& id);

}  // namespace dsa
