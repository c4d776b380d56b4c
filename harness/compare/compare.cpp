#include "harness/compare/compare.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "core/rules.hpp"
#include "harness/impls/reference_views.hpp"
#include "reference/formats.hpp"
#include "reference/scores.hpp"
#include "reference/selection.hpp"

namespace dsa {
namespace {

using metrics::MetricResult;
using metrics::PickTable;
using metrics::RankFn;
using metrics::RowRef;

constexpr size_t kRowFigureIds = 8;        // missed / extra positions kept per row

// ---- ranking scores with the reference, for the rows and positions a metric asks about ----

enum class Ranking { dense, sparse, exact };

// Scores as doubles. An overflowing row (invalid input the implementations already refuse) gives
// NaN, which no comparison treats as a tie: metrics run on worker threads and must not throw.
std::vector<double> scores_at(const Batch& batch, const Layer& layer, Ranking ranking, int row,
                              const std::vector<int32_t>& all_ids) {
  // Ids outside [0, L) (an invalid pick of the implementation under test) have no score and
  // must never reach the page table.
  const int32_t L = batch.compress_len[size_t(row)];
  std::vector<int32_t> ids;
  for (int32_t p : all_ids)
    if (p >= 0 && p < L) ids.push_back(p);
  if (ids.size() != all_ids.size()) {
    const std::vector<double> valid = scores_at(batch, layer, ranking, row, ids);
    std::vector<double> out(all_ids.size(), std::nan(""));
    for (size_t i = 0, j = 0; i < all_ids.size(); ++i)
      if (all_ids[i] >= 0 && all_ids[i] < L) out[i] = valid[j++];
    return out;
  }
  const int64_t n = int64_t(ids.size());
  std::vector<double> out(ids.size(), std::nan(""));
  try {
    const ref::QueryRow q = query_of(layer, row);
    const ref::KeyView keys = keys_of(batch, row);
    if (ranking == Ranking::exact) {
      ref::exact_scores_at(q, keys, ids.data(), n, out.data());
    } else if (ranking == Ranking::dense) {
      std::vector<float> s(ids.size());
      ref::dense_scores_at(q, keys, ids.data(), n, s.data());
      std::copy(s.begin(), s.end(), out.begin());
    } else {
      std::vector<uint16_t> s(ids.size());
      ref::sparse_scores_at(q, keys, ids.data(), n, s.data());
      for (size_t i = 0; i < s.size(); ++i) out[i] = double(ref::bf16_to_float(s[i]));
    }
  } catch (const std::exception&) {
    std::fill(out.begin(), out.end(), std::nan(""));
  }
  return out;
}

RankFn position_rank(const Batch& batch, const Layer& layer, Ranking ranking) {
  return [&batch, &layer, ranking](int row, const std::vector<int32_t>& ids) {
    return scores_at(batch, layer, ranking, row, ids);
  };
}

// Level-one keys on the source layer: max over the block's positions below L; newest block +inf.
RankFn block_rank(const Batch& batch, const Layer& source, Ranking ranking) {
  return [&batch, &source, ranking](int row, const std::vector<int32_t>& blocks) {
    const int64_t L = batch.compress_len[size_t(row)];
    const int64_t newest = (L + kBlockSize - 1) / kBlockSize - 1;
    std::vector<int32_t> positions;
    for (int32_t b : blocks)
      for (int64_t p = int64_t(b) * kBlockSize; b >= 0 && b < newest && p < (int64_t(b) + 1) * kBlockSize && p < L; ++p)
        positions.push_back(int32_t(p));
    const std::vector<double> s = scores_at(batch, source, ranking, row, positions);
    std::vector<double> keys;
    size_t next = 0;
    for (int32_t b : blocks) {
      if (b < 0 || b > newest) { keys.push_back(std::nan("")); continue; }
      if (b == newest) { keys.push_back(std::numeric_limits<double>::infinity()); continue; }
      double key = -std::numeric_limits<double>::infinity();
      for (; next < positions.size() && positions[next] / kBlockSize == b; ++next) key = std::max(key, s[next]);
      keys.push_back(key);
    }
    return keys;
  };
}

// The exact fp64 dense top-k of a consumer over all L positions.
std::vector<int32_t> exact_topk_of(const Batch& batch, const Layer& layer, int row) {
  const int64_t L = batch.compress_len[size_t(row)];
  std::vector<double> s(size_t(std::max<int64_t>(L, 1)));
  try {
    ref::exact_scores_row(query_of(layer, row), keys_of(batch, row), L, s.data());
  } catch (const std::exception&) {
    return {};
  }
  return ref::source_topk(s.data(), L, batch.topk);
}

metrics::TopkFn exact_topk(const Batch& batch, const Layer& layer, CompareCache* cache) {
  return [&batch, &layer, cache](int row) {
    if (!cache) return exact_topk_of(batch, layer, row);
    return cache->exact_topk(layer.id, row, [&] { return exact_topk_of(batch, layer, row); });
  };
}

// Level two of `path` (the reference's numerics) on given published blocks of one row.
std::vector<int32_t> level_two_on(const Batch& batch, const Layer& layer, PathKind path, int row,
                                  const std::vector<int32_t>& blocks) {
  ref::LevelOne l1;
  l1.blocks = blocks;
  l1.valid_len = ref::valid_len_of(int64_t(blocks.size()), batch.compress_len[size_t(row)]);
  const std::vector<int32_t> cand = ref::candidate_positions(l1);
  const ref::QueryRow q = query_of(layer, row);
  const ref::KeyView keys = keys_of(batch, row);
  const int64_t n = int64_t(cand.size());
  if (path == PathKind::sparse) {
    std::vector<uint16_t> s(cand.size());
    ref::sparse_scores_at(q, keys, cand.data(), n, s.data());
    return ref::level_two_sparse(l1, s.data(), batch.topk);
  }
  if (path == PathKind::mask) {
    std::vector<float> s(cand.size());
    ref::dense_scores_at(q, keys, cand.data(), n, s.data());
    return ref::level_two_mask(l1, s.data(), batch.topk);
  }
  std::vector<double> s(cand.size());
  ref::exact_scores_at(q, keys, cand.data(), n, s.data());
  return ref::level_two_exact(l1, s.data(), batch.topk);
}

// The reference's consumer picks, re-selected on a's own blocks in the rows where a published
// other valid blocks: a different tie-break at level one (judged on the blocks layer) changes
// the candidates legitimately, so level two is judged on a's own candidates. Returns b's picks
// unchanged when no row needs it.
std::vector<int32_t> picks_on_own_blocks(const Batch& batch, const Layer& layer, PathKind path,
                                         const std::vector<RowRef>& rows, const Results& a,
                                         const std::vector<int32_t>& b_positions, const std::vector<int32_t>& b_blocks,
                                         int64_t* reselected) {
  const PickTable own = metrics::blocks_table(a.blocks), theirs = metrics::blocks_table(b_blocks);
  std::vector<size_t> todo;
  for (size_t i = 0; i < rows.size(); ++i) {
    if (!own.present() || !theirs.present() || own.picks(rows[i].row) == theirs.picks(rows[i].row)) continue;
    if (metrics::validity_blocks({rows[i]}, own).failures == 0) todo.push_back(i);
  }
  *reselected = int64_t(todo.size());
  if (todo.empty()) return b_positions;
  std::vector<int32_t> out = b_positions;
#pragma omp parallel for schedule(dynamic, 1)
  for (long t = 0; t < long(todo.size()); ++t) {
    const RowRef& r = rows[todo[size_t(t)]];
    try {
      const std::vector<int32_t> picks = level_two_on(batch, layer, path, r.row, own.picks(r.row));
      ref::write_positions(picks, batch.topk, out.data() + size_t(r.index) * size_t(batch.topk));
    } catch (const std::exception&) {
      // An overflowing row keeps b's picks; the implementations refuse such input anyway.
    }
  }
  return out;
}

std::vector<int32_t> sorted_picks(const PickTable& t, int64_t index) {
  std::vector<int32_t> v = t.picks(index);
  std::sort(v.begin(), v.end());
  return v;
}

// The public test's expectation of the sparse side: the mask side's picks, except where the
// sparse side broke a tie of its own ranking numerics (bf16 on consumers) at its k-th score by the
// reference's tie rule. Per row, the sparse side's extra picks and the mask picks it left out
// that both equal its k-th ranking score are swapped, when every such extra is a smaller
// position than every such miss (a tie goes to the smaller position). On data with many exact
// ties (the edge preset's repeated keys) two fp32 score classes that round to one bf16 value
// otherwise cost a clean sparse path half of a row's agreement. Returns `mask` unchanged when no
// row needs it; *swapped counts the positions swapped.
std::vector<int32_t> mask_picks_with_sparse_ties(const Batch& batch, const std::vector<RowRef>& rows,
                                                 const PickTable& sparse, const std::vector<int32_t>& mask,
                                                 const RankFn& rank, int64_t* swapped) {
  const PickTable m = metrics::positions_table(mask, batch.topk);
  std::vector<int32_t> out = mask;
  std::vector<int64_t> swaps(rows.size(), 0);
#pragma omp parallel for schedule(dynamic, 1)
  for (long i = 0; i < long(rows.size()); ++i) {
    const RowRef& r = rows[size_t(i)];
    const std::vector<int32_t> ps = sorted_picks(sparse, r.index), pm = sorted_picks(m, r.index);
    if (ps == pm || ps.empty() || ps.size() != pm.size()) continue;
    std::vector<int32_t> missed, extra;
    std::set_difference(pm.begin(), pm.end(), ps.begin(), ps.end(), std::back_inserter(missed));
    std::set_difference(ps.begin(), ps.end(), pm.begin(), pm.end(), std::back_inserter(extra));
    const std::vector<double> s = rank(r.row, ps), s_missed = rank(r.row, missed);
    const double kth = *std::min_element(s.begin(), s.end());
    std::vector<int32_t> tied_extra, tied_missed;
    for (size_t j = 0; j < ps.size(); ++j)
      if (s[j] == kth && !std::binary_search(pm.begin(), pm.end(), ps[j])) tied_extra.push_back(ps[j]);
    for (size_t j = 0; j < missed.size(); ++j)
      if (s_missed[j] == kth) tied_missed.push_back(missed[j]);
    if (tied_extra.empty() || tied_missed.empty() || tied_extra.back() > tied_missed.front()) continue;
    const size_t n = std::min(tied_extra.size(), tied_missed.size());
    std::vector<int32_t> expected;  // pm less its n largest tied misses, plus the n smallest tied extras
    const std::vector<int32_t> dropped(tied_missed.end() - long(n), tied_missed.end());
    for (int32_t p : pm)
      if (!std::binary_search(dropped.begin(), dropped.end(), p)) expected.push_back(p);
    expected.insert(expected.end(), tied_extra.begin(), tied_extra.begin() + long(n));
    std::sort(expected.begin(), expected.end());
    ref::write_positions(expected, batch.topk, out.data() + size_t(r.index) * size_t(batch.topk));
    swaps[size_t(i)] = int64_t(n);
  }
  *swapped = 0;
  for (int64_t n : swaps) *swapped += n;
  return out;
}

Ranking ranking_of(PathKind path, Role role) {
  if (path == PathKind::exact) return Ranking::exact;
  if (role == Role::consumer && path == PathKind::sparse) return Ranking::sparse;
  return Ranking::dense;
}

// ---- assembling one layer's comparison ----

// The first failing metric names the layer's failure; mismatches of every failing metric are kept.
void fail(LayerComparison& lc, const std::string& metric, const std::vector<Mismatch>& mismatches) {
  if (lc.disposition == Disposition::passed) {
    lc.disposition = Disposition::incorrect;
    lc.failed_metric = metric;
  }
  for (const Mismatch& mm : mismatches)
    if (lc.mismatches.size() < metrics::kMaxMismatches) lc.mismatches.push_back(mm);
}

void add(LayerComparison& lc, const MetricResult& m, const std::string& metric, bool judged) {
  lc.records.insert(lc.records.end(), m.records.begin(), m.records.end());
  if (!judged || m.failures == 0) return;
  fail(lc, metric, m.mismatches);
}

// A metric judged by the share of its good rows (record `share`) against a rule's minimum.
void add_share(LayerComparison& lc, const MetricResult& m, const std::string& metric, const std::string& share,
               double minimum) {
  lc.records.insert(lc.records.end(), m.records.begin(), m.records.end());
  for (const Record& r : m.records)
    if (r.name == share && r.value < minimum) fail(lc, metric, m.mismatches);
}

// Per-row figures: agreement, exactness, floor margin and the first missed / extra ids.
void add_row_figures(LayerComparison& lc, const std::vector<RowRef>& rows, const PickTable& a, const PickTable& b,
                     const MetricResult& agreement, const MetricResult* exact, const MetricResult* floor) {
  for (size_t i = 0; i < rows.size(); ++i) {
    RowFigure f;
    f.row = rows[i].row;
    f.length = rows[i].length;
    f.agreement = agreement.per_row[i];
    if (exact) f.exact = exact->per_row[i] == 1.0;
    if (floor && std::isfinite(floor->per_row[i])) f.floor_margin = floor->per_row[i];
    const std::vector<int32_t> pa = sorted_picks(a, rows[i].index), pb = sorted_picks(b, rows[i].index);
    std::vector<int32_t> missed, extra;
    std::set_difference(pb.begin(), pb.end(), pa.begin(), pa.end(), std::back_inserter(missed));
    std::set_difference(pa.begin(), pa.end(), pb.begin(), pb.end(), std::back_inserter(extra));
    f.missed.assign(missed.begin(), missed.begin() + long(std::min(missed.size(), kRowFigureIds)));
    f.extra.assign(extra.begin(), extra.begin() + long(std::min(extra.size(), kRowFigureIds)));
    lc.rows.push_back(std::move(f));
  }
}

struct Context {
  const Batch& batch;
  const Results& a;
  const Results& b;
  PathKind a_path, b_path;
  Rule rule;
  double tolerance;
  std::vector<int> rows;  // compared rows
  CompareCache* cache;
};

// A layer with nothing to compare: `not_run` when only the implementation under test recorded
// it, `incorrect` when the other side recorded an output the implementation did not.
LayerComparison uncompared(const std::string& layer, const std::string& role, Disposition disposition,
                           const std::string& why) {
  LayerComparison lc;
  lc.layer = layer;
  lc.role = role;
  lc.disposition = disposition;
  lc.failed_metric = why;
  return lc;
}

// Rows b computed and a was asked for but did not output: an implementation that omits rows must
// not pass on the rows it kept. Names the first such row; empty when a did every row asked of it.
// Recorded outputs (recorded:NAME, straight from a batch file or replayed) are exempt: a capture
// holds the rows the engine captured, a subset by nature, and was never asked for the others.
std::vector<LayerComparison> omitted_rows(const Batch& batch, const Results& a, const Results& b,
                                          const std::vector<int>& asked) {
  if (a.name.rfind("recorded:", 0) == 0) return {};
  std::vector<uint8_t> wanted(b.rows_done.size(), asked.empty() ? 1 : 0);
  for (int r : asked)
    if (r >= 0 && size_t(r) < wanted.size()) wanted[size_t(r)] = 1;
  std::vector<int> missed;
  for (size_t r = 0; r < b.rows_done.size(); ++r)
    if (b.rows_done[r] == 1 && wanted[r] == 1 && (r >= a.rows_done.size() || a.rows_done[r] != 1)) missed.push_back(int(r));
  if (missed.empty()) return {};
  const int first = missed.front();
  LayerComparison lc = uncompared("rows", "rows", Disposition::incorrect, "rows missing: " + std::to_string(missed.size()) +
                                  " row(s) computed by " + b.name + " not output by " + a.name);
  Mismatch m;
  m.what = "row";
  m.row = first;
  m.expected = "output (done by " + b.name + ")";
  m.actual = "none (rows_done 0)";
  m.detail = "request " + std::to_string(batch.row_request[size_t(first)]) + ", L " +
             std::to_string(batch.compress_len[size_t(first)]) + "; " + std::to_string(missed.size()) + " row(s) missing";
  lc.mismatches.push_back(m);
  return {lc};
}

LayerComparison compare_blocks(const Context& c) {
  LayerComparison lc;
  lc.layer = "blocks";
  lc.role = "blocks";
  const std::vector<RowRef> rows = metrics::full_rows(c.batch, c.rows);
  const PickTable a = metrics::blocks_table(c.a.blocks), b = metrics::blocks_table(c.b.blocks);
  add_share(lc, metrics::validity_blocks(rows, a), "validity", "validity", rules::kValidityMinimum);
  const MetricResult agreement = metrics::set_agreement(rows, a, b, c.rule == Rule::public_test ? rules::kPublicAgreement : rules::kOwnPathExact, "block");
  add(lc, agreement, "agreement", c.rule == Rule::public_test);
  if (c.rule == Rule::own_path) {
    const Layer* source = c.batch.source();
    const MetricResult exact =
        metrics::tie_exactness(rows, a, b, block_rank(c.batch, *source, ranking_of(c.b_path, Role::source)), "block");
    add_share(lc, exact, "exactness", "exact", rules::kOwnPathExact);
    add_row_figures(lc, rows, a, b, agreement, &exact, nullptr);
  } else {
    add_row_figures(lc, rows, a, b, agreement, nullptr, nullptr);
  }
  return lc;
}

void add_fidelity(LayerComparison& lc, const Context& c, const std::vector<RowRef>& rows, const LayerResult& a,
                  const LayerResult& b) {
  const bool judged = c.rule == Rule::own_path;
  const MetricResult dense = metrics::dense_fidelity(rows, a, b);
  if (dense.records.size() > 1) add(lc, dense, "scores.dense", judged);
  const MetricResult sparse = metrics::sparse_fidelity(rows, a, b);
  if (sparse.records.size() > 1) add(lc, sparse, "scores.sparse", judged);
}

LayerComparison compare_layer(const Context& c, const Layer& layer) {
  LayerComparison lc;
  lc.layer = std::to_string(layer.id);
  lc.role = role_name(layer.role);
  const LayerResult& la = c.a.layers.at(layer.id);
  const LayerResult& lb = c.b.layers.at(layer.id);
  const std::vector<RowRef> rows = metrics::full_rows(c.batch, c.rows);
  const PickTable a = metrics::positions_table(la.positions, c.batch.topk);
  const PickTable b = metrics::positions_table(lb.positions, c.batch.topk);
  const PickTable a_blocks = metrics::blocks_table(c.a.blocks);
  const bool consumer = layer.role == Role::consumer;
  const PickTable* own_blocks = consumer && a_blocks.present() ? &a_blocks : nullptr;

  add_share(lc, metrics::validity_positions(rows, a, c.batch.topk, own_blocks), "validity", "validity", rules::kValidityMinimum);

  if (c.rule == Rule::public_test) {
    // The public test measures the sparse path against the mask path's picks and floor,
    // whichever of the two is under test here.
    const bool mask_under_test = c.a_path == PathKind::mask;
    const PickTable& sparse_side = mask_under_test ? b : a;
    const PickTable& mask_side = mask_under_test ? a : b;
    const PickTable sparse_blocks = metrics::blocks_table(mask_under_test ? c.b.blocks : c.a.blocks);
    int64_t swapped = 0;
    const std::vector<int32_t> expected = mask_picks_with_sparse_ties(
        c.batch, rows, sparse_side, *mask_side.data, position_rank(c.batch, layer, ranking_of(PathKind::sparse, layer.role)),
        &swapped);
    const MetricResult agreement =
        metrics::set_agreement(rows, sparse_side, metrics::positions_table(expected, c.batch.topk), rules::kPublicAgreement);
    add(lc, agreement, "agreement", true);
    lc.records.push_back({"agreement.tie_swaps", double(swapped), "count", ""});
    const MetricResult floor =
        metrics::selection_floor(rows, sparse_side, mask_side, consumer && sparse_blocks.present() ? &sparse_blocks : nullptr,
                                 position_rank(c.batch, layer, Ranking::dense), c.batch.topk, c.tolerance);
    add(lc, floor, "floor", true);
    add_row_figures(lc, rows, sparse_side, mask_side, agreement, nullptr, &floor);
  } else {
    const MetricResult agreement = metrics::set_agreement(rows, a, b, rules::kOwnPathExact);
    add(lc, agreement, "agreement", false);
    if (c.rule == Rule::own_path) {
      int64_t reselected = 0;
      const std::vector<int32_t> expected =
          consumer ? picks_on_own_blocks(c.batch, layer, c.b_path, rows, c.a, lb.positions, c.b.blocks, &reselected)
                   : lb.positions;
      const PickTable e = metrics::positions_table(expected, c.batch.topk);
      const MetricResult exact =
          metrics::tie_exactness(rows, a, e, position_rank(c.batch, layer, ranking_of(c.b_path, layer.role)));
      add_share(lc, exact, "exactness", "exact", rules::kOwnPathExact);
      if (consumer)
        lc.records.push_back({"exact.rows_on_own_blocks", double(reselected), "count", ""});
      add_row_figures(lc, rows, a, e, agreement, &exact, nullptr);
    } else {
      if (consumer && a_blocks.present())
        add(lc, metrics::two_level_quality(rows, a, a_blocks, exact_topk(c.batch, layer, c.cache)), "quality", false);
      add_row_figures(lc, rows, a, b, agreement, nullptr, nullptr);
    }
  }
  add_fidelity(lc, c, rows, la, lb);
  return lc;
}

LayerComparison compare_tails(const Context& c, const Layer& layer) {
  LayerComparison lc;
  lc.layer = std::to_string(layer.id) + "/tail";
  lc.role = "tail";
  const LayerResult& la = c.a.layers.at(layer.id);
  const std::vector<RowRef> rows = metrics::tail_rows(c.batch, c.rows);
  const PickTable tails = metrics::positions_table(la.tail_positions, c.batch.topk);
  const PickTable full = metrics::positions_table(la.positions, c.batch.topk);
  const PickTable a_blocks = metrics::blocks_table(c.a.blocks);
  add_share(lc, metrics::validity_positions(rows, tails, c.batch.topk, a_blocks.present() ? &a_blocks : nullptr, "tail position"),
            "validity", "validity", rules::kValidityMinimum);
  const double threshold = c.rule == Rule::public_test ? rules::kPublicTailOverlap : rules::kOwnPathExact;
  add(lc, metrics::tail_agreement(rows, tails, full, threshold), "tails", c.rule != Rule::quality);
  return lc;
}

bool has_positions(const Results& r, int layer) {
  auto it = r.layers.find(layer);
  return it != r.layers.end() && !it->second.positions.empty();
}

bool has_tails(const Results& r, int layer) {
  auto it = r.layers.find(layer);
  return it != r.layers.end() && !it->second.tail_positions.empty();
}

}  // namespace

std::vector<int32_t> CompareCache::exact_topk(int layer, int row, const std::function<std::vector<int32_t>()>& compute) {
  const std::pair<int, int> key{layer, row};
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    auto it = exact_topk_.find(key);
    if (it != exact_topk_.end()) return it->second;
  }
  std::vector<int32_t> picks = compute();  // outside the lock: rows are computed in parallel
  const std::lock_guard<std::mutex> lock(mutex_);
  return exact_topk_.emplace(key, std::move(picks)).first->second;
}

Rule choose_rule(PathKind impl, PathKind against) {
  if (impl == against) return Rule::own_path;
  if (impl == PathKind::exact || against == PathKind::exact) return Rule::quality;
  return Rule::public_test;
}

Comparison compare_results(const Batch& batch, const Results& a, PathKind a_path, const Results& b, PathKind b_path,
                           const CompareOptions& options) {
  Comparison out;
  out.impl = a.name;
  out.against = b.name;
  out.rule = options.rule ? *options.rule : choose_rule(a_path, b_path);
  if (options.cache && options.cache->batch() != &batch)
    throw std::logic_error("compare_results: the cache given belongs to another batch");
  const Context c{batch, a, b, a_path, b_path, out.rule, options.tolerance, metrics::compared_rows(a, b), options.cache};

  // What b recorded is expected of a: an output missing on a's side is a failure, never "not
  // run", and so is a row it was asked for and left out. An output only a recorded has nothing
  // to be compared with.
  out.layers = omitted_rows(batch, a, b, options.rows);
  if (!a.blocks.empty() && !b.blocks.empty() && batch.source()) out.layers.push_back(compare_blocks(c));
  else if (!b.blocks.empty()) out.layers.push_back(uncompared("blocks", "blocks", Disposition::incorrect, "blocks missing: no published blocks in " + a.name));
  else if (!a.blocks.empty()) out.layers.push_back(uncompared("blocks", "blocks", Disposition::not_run, "no blocks in " + b.name));
  for (const Layer& layer : batch.layers) {
    const std::string id = std::to_string(layer.id);
    const bool in_a = has_positions(a, layer.id), in_b = has_positions(b, layer.id);
    if (in_a && in_b) out.layers.push_back(compare_layer(c, layer));
    else if (in_b) out.layers.push_back(uncompared(id, role_name(layer.role), Disposition::incorrect, "layer " + id + " missing: no picks in " + a.name));
    else if (in_a) out.layers.push_back(uncompared(id, role_name(layer.role), Disposition::not_run, "no picks in " + b.name));
    if (layer.role != Role::consumer || batch.total_tail_rows == 0 || !in_a) continue;
    if (has_tails(a, layer.id)) out.layers.push_back(compare_tails(c, layer));
    else out.layers.push_back(uncompared(id + "/tail", "tail", Disposition::incorrect, "layer " + id + " tail positions missing in " + a.name));
  }

  bool any_passed = false, any_failed = false;
  for (const LayerComparison& l : out.layers) {
    any_passed = any_passed || l.disposition == Disposition::passed;
    any_failed = any_failed || l.disposition == Disposition::incorrect;
  }
  out.disposition = any_failed ? Disposition::incorrect : any_passed ? Disposition::passed : Disposition::not_run;
  if (c.rows.empty() && !any_failed) out.disposition = Disposition::not_run;
  return out;
}

}  // namespace dsa
