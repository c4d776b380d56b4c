#pragma once
// The comparison driver: one implementation's results against another's on one batch, judged by
// one of the three rules of docs/metrics.md ("Rules and verdicts"), layer by layer, as Records.
//   own-path    implementation vs the reference of its own path: validity, tie-aware exactness
//               and (where both recorded scores) bitwise scores must all be 100 %.
//   public-test sparse path vs mask path: per row >= 95 % agreement and no floor violation
//               (tails >= 98 % overlap with the full table).
//   quality     against reference-exact: informational (passed unless invalid); records the
//               recall of the exact fp64 dense top-k and where the misses happen.
// Only rows done on both sides are compared; a row asked of the implementation (options.rows)
// that the other side did and it did not is incorrect, naming the first one. An output the reference side recorded and the
// implementation did not (blocks, a layer, a tail table) is incorrect ("layer 28 missing");
// "not run" is left for an implementation that could not run at all.
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/batch.hpp"
#include "core/results.hpp"
#include "harness/compare/metrics.hpp"
#include "core/records.hpp"
#include "harness/impls/registry.hpp"

namespace dsa {

// What the comparisons of one batch share: the exact fp64 top-k of a consumer row over all its
// positions (the quality rule's truth) is the same for every implementation compared, and it is
// the costliest thing compare computes (a whole row's exact scores). Replay keeps one per batch;
// safe to use from the metrics' worker threads. It holds topk ints per compared consumer row
// (chunk-256k: 16384 rows x 4 layers x 2 KB = 134 MB).
class CompareCache {
 public:
  explicit CompareCache(const Batch& batch) : batch_(&batch) {}
  const Batch* batch() const { return batch_; }
  // The cached top-k of (layer, row), or compute() stored first.
  std::vector<int32_t> exact_topk(int layer, int row, const std::function<std::vector<int32_t>()>& compute);

 private:
  const Batch* batch_;
  std::mutex mutex_;
  std::map<std::pair<int, int>, std::vector<int32_t>> exact_topk_;
};

struct CompareOptions {
  double tolerance = rules::kFloorTolerance;         // selection floor, relative
  std::optional<Rule> rule;                             // default: choose_rule(paths)
  // The rows the implementation under test was asked for (empty: all). A row among them that
  // the other side computed and the implementation did not output is incorrect ("rows missing").
  std::vector<int> rows;
  // Shared by the comparisons of this batch (nullptr: nothing kept). Must belong to `batch`.
  CompareCache* cache = nullptr;
};

// Same path -> own-path; sparse vs mask (either way) -> public-test; one side exact and the
// other not -> quality.
Rule choose_rule(PathKind impl, PathKind against);

// `a` is the implementation under test, `b` what it is compared with (the reference).
Comparison compare_results(const Batch& batch, const Results& a, PathKind a_path, const Results& b,
                           PathKind b_path, const CompareOptions& options = {});


}  // namespace dsa
