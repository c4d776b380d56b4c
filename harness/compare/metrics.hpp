#pragma once
// Comparison metrics of docs/metrics.md: small pure functions over the
// picks (and scores) of two result sets of one batch. Each returns named Records and the first
// Mismatches with their coordinates; harness/compare/compare.hpp picks the metrics a rule needs and
// turns them into verdicts. Ranking scores come in through callbacks so the metrics never run
// the reference themselves and can be tested on hand-made tables.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/batch.hpp"
#include "core/results.hpp"
#include "core/records.hpp"
#include "core/rules.hpp"

namespace dsa::metrics {

constexpr size_t kMaxMismatches = 8;                  // kept per metric, in row order

// One table of picks: positions [rows, topk] with -1 padding, or blocks [rows, 2048] with
// INT32_MAX padding.
struct PickTable {
  const std::vector<int32_t>* data = nullptr;
  int width = 0;
  int32_t pad = kPositionPad;

  bool present() const { return data != nullptr && !data->empty(); }
  bool has_row(int64_t index) const {
    return data != nullptr && index >= 0 && size_t(index + 1) * size_t(width) <= data->size();
  }
  const int32_t* raw(int64_t index) const { return data->data() + index * width; }
  // The non-padding entries of table row `index`, in stored order.
  std::vector<int32_t> picks(int64_t index) const;
};
PickTable positions_table(const std::vector<int32_t>& data, int topk);
PickTable blocks_table(const std::vector<int32_t>& data);

// A compared row: its global row, its index in the table (differs for tail tables) and its L.
struct RowRef {
  int row = 0;
  int64_t index = 0;
  int length = 0;
};
// Rows with rows_done = 1 on both sides, ascending (a side without rows_done has none).
std::vector<int> compared_rows(const Results& a, const Results& b);
std::vector<RowRef> full_rows(const Batch& batch, const std::vector<int>& rows);
// Only the tail rows among `rows`; index = their row in tail_positions.
std::vector<RowRef> tail_rows(const Batch& batch, const std::vector<int>& rows);

// What one metric found.
struct MetricResult {
  std::vector<Record> records;
  std::vector<Mismatch> mismatches;  // first kMaxMismatches, in row order
  std::vector<double> per_row;       // one value per RowRef where the metric has one
  int64_t failures = 0;              // rows (or cells) that break the metric's own criterion
};

// Ranking scores of one row at the given ids (positions, or block ids for block keys), as
// doubles: fp32, bf16 and fp64 convert exactly. Must be safe to call from several threads.
using RankFn = std::function<std::vector<double>(int row, const std::vector<int32_t>& ids)>;
// The exact fp64 dense top-k of a consumer for one row (over all L positions).
using TopkFn = std::function<std::vector<int32_t>(int row)>;

// Validity of position picks: every pick in [0, L), unique, count = min(topk, L), ascending with
// the padding last, and (when `own_blocks` is given) inside those published blocks.
// `what` names the table in mismatches ("position", "tail position").
MetricResult validity_positions(const std::vector<RowRef>& rows, const PickTable& picks, int topk,
                                const PickTable* own_blocks, const std::string& what = "position");
// Validity of level one: ids in [0, nblocks), ascending, unique, newest block kept,
// count = min(2048, nblocks), INT32_MAX padding after.
MetricResult validity_blocks(const std::vector<RowRef>& rows, const PickTable& blocks);

// |a ∩ b| / |b| per row (b is the reference); both empty -> 1. Records agreement.mean, .min,
// .rows_at_1; failures = rows below `threshold`.
MetricResult set_agreement(const std::vector<RowRef>& rows, const PickTable& a, const PickTable& b,
                           double threshold = 1.0, const std::string& what = "position");

// Tie-aware exactness: a row agrees when the sets are equal, or have the same size and differ
// only among ids whose ranking score equals the k-th (the smallest over b's picks). Scores are
// asked for only on rows whose sets differ. `what`: "position" or "block".
MetricResult tie_exactness(const std::vector<RowRef>& rows, const PickTable& a, const PickTable& b,
                           const RankFn& rank, const std::string& what = "position");

// The public test's selection floor. floor = min dense score over b's picks; a pick of a
// violates when score < floor - tol*|floor|, an unpicked candidate of a when score > floor +
// tol*|floor|. Candidates: positions < L inside `candidate_blocks` (a's published blocks), or
// all positions < L when null. Rows where b picked fewer than topk are exempt.
// per_row = floor margin: min over a's picks of (score - floor) / |floor|.
MetricResult selection_floor(const std::vector<RowRef>& rows, const PickTable& a, const PickTable& b,
                             const PickTable* candidate_blocks, const RankFn& dense, int topk,
                             double tolerance = rules::kFloorTolerance);

// Score fidelity over the valid cells, when both sides recorded scores on the layer: a compared
// row missing or shorter on a's side fails (missing_rows); +0 against -0 is counted, not judged;
// share of bit-identical cells, max ulp distance, calc_diff = 1 - 2*sum(xy)/sum(x^2+y^2).
MetricResult dense_fidelity(const std::vector<RowRef>& rows, const LayerResult& a, const LayerResult& b);
MetricResult sparse_fidelity(const std::vector<RowRef>& rows, const LayerResult& a, const LayerResult& b);

// Two-level quality: recall of the exact dense top-k by a's picks; each miss is level one
// (its block is not in a's blocks) or level two.
MetricResult two_level_quality(const std::vector<RowRef>& rows, const PickTable& a,
                               const PickTable& a_blocks, const TopkFn& exact_topk);

// Tails: each tail row's picks against the full-table picks of the same row (|tail ∩ full| /
// |full|). failures = rows below `threshold` (rules::kOwnPathExact, rules::kPublicTailOverlap).
MetricResult tail_agreement(const std::vector<RowRef>& tail_refs, const PickTable& tails,
                            const PickTable& full, double threshold = 1.0);

// Distance in units in the last place between two floats of the same format (bit patterns as
// ordered integers); +0 and -0 are 0 apart.
int64_t ulp_distance_f32(float x, float y);
int64_t ulp_distance_bf16(uint16_t x, uint16_t y);

}  // namespace dsa::metrics
