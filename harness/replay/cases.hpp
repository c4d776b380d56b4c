#pragma once
// Pieces of the replay that turn comparisons into cases: grouping by layer, verdicts, the
// worst-rows drill-down and the determinism check.
#include <string>
#include <vector>

#include "core/batch.hpp"
#include "core/results.hpp"
#include "reports/report_model.hpp"
#include "core/rules.hpp"

namespace dsa {

struct CaseContext {
  std::string batch_id, input, impl;
  std::vector<int> rows;   // empty: all rows
  std::string rows_flags;  // how the rerun command selects them again (rows_flags())
  double tolerance = rules::kFloorTolerance;
};

// One case per layer ("24/tail" joins case "24"; "blocks" is its own case), comparisons in the
// given order, with verdict, failed metric, first mismatch and rerun command.
std::vector<CaseResult> cases_from_comparisons(const CaseContext& context, const std::vector<Comparison>& comparisons);

// Fills case.worst with up to `count` rows that differ most from the reference (lowest
// agreement, then lowest floor margin), scored with the reference's fp32 dense scores.
void add_worst_rows(CaseResult& c, const Batch& batch, size_t count = 5);

// Bitwise equality of everything an implementation produced (timings aside).
bool same_results(const Results& a, const Results& b);

// Marks every case of a run whose repeated runs differed as incorrect ("determinism").
void mark_nondeterministic(std::vector<CaseResult>& cases);

}  // namespace dsa
