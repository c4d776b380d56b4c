#include "harness/compare/metrics.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <map>
#include <optional>

namespace dsa::metrics {
namespace {

std::string num(double x) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.9g", x);
  return buf;
}
std::string num(int64_t x) { return std::to_string(x); }

std::vector<int32_t> sorted_unique(std::vector<int32_t> v) {
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
  return v;
}

bool contains(const std::vector<int32_t>& sorted, int32_t x) {
  return std::binary_search(sorted.begin(), sorted.end(), x);
}

size_t intersection_size(const std::vector<int32_t>& a, const std::vector<int32_t>& b) {
  size_t n = 0;
  for (size_t i = 0, j = 0; i < a.size() && j < b.size();) {
    if (a[i] < b[j]) ++i;
    else if (b[j] < a[i]) ++j;
    else { ++n; ++i; ++j; }
  }
  return n;
}

std::vector<int32_t> difference(const std::vector<int32_t>& a, const std::vector<int32_t>& b) {
  std::vector<int32_t> out;
  std::set_difference(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(out));
  return out;
}

// The first slot where two sorted lists differ, as a mismatch: expected from b, got from a.
Mismatch first_difference(const std::string& what, int row, const std::vector<int32_t>& a,
                          const std::vector<int32_t>& b) {
  size_t i = 0;
  while (i < a.size() && i < b.size() && a[i] == b[i]) ++i;
  Mismatch m;
  m.what = what;
  m.row = row;
  m.column = int(i);
  m.expected = i < b.size() ? num(int64_t(b[i])) : "none";
  m.actual = i < a.size() ? num(int64_t(a[i])) : "none";
  return m;
}

// Per-row outcome of a metric computed in parallel, merged in row order afterwards.
struct RowOutcome {
  double value = 0;
  bool failed = false;
  std::optional<Mismatch> mismatch;
};

void merge(const std::vector<RowOutcome>& outcomes, MetricResult& out) {
  for (const RowOutcome& o : outcomes) {
    out.per_row.push_back(o.value);
    if (o.failed) ++out.failures;
    if (o.mismatch && out.mismatches.size() < kMaxMismatches) out.mismatches.push_back(*o.mismatch);
  }
}

// Runs body(i) for every row, in parallel when OpenMP is on (bodies that call the reference).
template <typename Body>
std::vector<RowOutcome> for_rows(size_t n, Body body) {
  std::vector<RowOutcome> outcomes(n);
#pragma omp parallel for schedule(dynamic, 1)
  for (long i = 0; i < long(n); ++i) outcomes[size_t(i)] = body(size_t(i));
  return outcomes;
}

double mean_of(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return v.empty() ? 1.0 : s / double(v.size());
}
double min_of(const std::vector<double>& v) {
  return v.empty() ? 1.0 : *std::min_element(v.begin(), v.end());
}
double share_at_least(const std::vector<double>& v, double t) {
  if (v.empty()) return 1.0;
  return double(std::count_if(v.begin(), v.end(), [t](double x) { return x >= t; })) / double(v.size());
}

Mismatch invalid(const std::string& what, int row, int column, std::string expected, std::string actual,
                 std::string detail = "") {
  Mismatch m;
  m.what = what;
  m.row = row;
  m.column = column;
  m.expected = std::move(expected);
  m.actual = std::move(actual);
  m.detail = std::move(detail);
  return m;
}

// Validity of one row of positions; returns the first problem.
std::optional<Mismatch> check_position_row(const RowRef& r, const PickTable& picks, int topk,
                                           const PickTable* own_blocks, const std::string& what) {
  if (!picks.has_row(r.index)) return invalid(what, r.row, -1, "a row of picks", "none", "table too short");
  const int32_t* v = picks.raw(r.index);
  std::vector<int32_t> blocks;
  if (own_blocks && own_blocks->present()) blocks = sorted_unique(own_blocks->picks(r.row));
  const std::string range = "in [0, " + num(int64_t(r.length)) + ")";
  bool padding = false;
  int count = 0;
  for (int i = 0; i < picks.width; ++i) {
    if (v[i] == kPositionPad) { padding = true; continue; }
    if (padding) return invalid(what, r.row, i, "padding -1 after the last pick", num(int64_t(v[i])));
    if (v[i] < 0 || v[i] >= r.length) return invalid(what, r.row, i, range, num(int64_t(v[i])));
    if (i > 0 && v[i] == v[i - 1]) return invalid(what, r.row, i, "unique picks", num(int64_t(v[i])), "duplicate");
    if (i > 0 && v[i] < v[i - 1])
      return invalid(what, r.row, i, "> " + num(int64_t(v[i - 1])) + " (ascending)", num(int64_t(v[i])));
    if (own_blocks && own_blocks->present() && !contains(blocks, v[i] / kBlockSize))
      return invalid(what, r.row, i, "inside its published blocks", num(int64_t(v[i])),
                     "block " + num(int64_t(v[i] / kBlockSize)) + " not published");
    ++count;
  }
  const int want = std::min(topk, r.length);
  if (count != want)
    return invalid(what, r.row, count, num(int64_t(want)) + " picks", num(int64_t(count)) + " picks",
                   "count = min(k, L)");
  return std::nullopt;
}

std::optional<Mismatch> check_block_row(const RowRef& r, const PickTable& blocks) {
  if (!blocks.has_row(r.index)) return invalid("block", r.row, -1, "a row of blocks", "none", "table too short");
  const int32_t* v = blocks.raw(r.index);
  const int nblocks = (r.length + kBlockSize - 1) / kBlockSize;
  const std::string what = "block";
  bool padding = false, newest = false;
  int count = 0;
  for (int i = 0; i < blocks.width; ++i) {
    if (v[i] == kBlockPad) { padding = true; continue; }
    if (padding) return invalid(what, r.row, i, "padding after the last block", num(int64_t(v[i])));
    if (v[i] < 0 || v[i] >= nblocks)
      return invalid(what, r.row, i, "in [0, " + num(int64_t(nblocks)) + ")", num(int64_t(v[i])));
    if (i > 0 && v[i] == v[i - 1]) return invalid(what, r.row, i, "unique blocks", num(int64_t(v[i])), "duplicate");
    if (i > 0 && v[i] < v[i - 1])
      return invalid(what, r.row, i, "> " + num(int64_t(v[i - 1])) + " (ascending)", num(int64_t(v[i])));
    newest = newest || v[i] == nblocks - 1;
    ++count;
  }
  const int want = std::min(kTopkBlocks, nblocks);
  if (count != want)
    return invalid(what, r.row, count, num(int64_t(want)) + " blocks", num(int64_t(count)) + " blocks",
                   "count = min(2048, nblocks)");
  if (nblocks > 0 && !newest)
    return invalid(what, r.row, -1, "newest block " + num(int64_t(nblocks - 1)) + " kept", "missing");
  return std::nullopt;
}

MetricResult validity_of(const std::vector<RowRef>& rows,
                         const std::function<std::optional<Mismatch>(const RowRef&)>& check) {
  MetricResult out;
  for (const RowRef& r : rows) {
    std::optional<Mismatch> m = check(r);
    out.per_row.push_back(m ? 0.0 : 1.0);
    if (!m) continue;
    ++out.failures;
    if (out.mismatches.size() < kMaxMismatches) out.mismatches.push_back(*m);
  }
  const double n = double(rows.size());
  out.records.push_back({"validity", rows.empty() ? 1.0 : (n - double(out.failures)) / n, "fraction", "must be 1"});
  out.records.push_back({"validity.invalid_rows", double(out.failures), "count", "must be 0"});
  return out;
}

// The ordered integer of a float's bit pattern (sign-magnitude -> two's complement).
int64_t ordered(uint32_t bits, uint32_t sign_bit) {
  const int64_t magnitude = int64_t(bits & (sign_bit - 1));
  return (bits & sign_bit) ? -magnitude : magnitude;
}

template <typename T>
bool recorded(const std::vector<std::vector<T>>& scores) {
  return std::any_of(scores.begin(), scores.end(), [](const std::vector<T>& row) { return !row.empty(); });
}

// Score fidelity over generic cells: value and bit pattern of each side.
template <typename T, typename ToDouble, typename Ulp>
MetricResult fidelity(const std::vector<RowRef>& rows, const std::vector<std::vector<T>>& a,
                      const std::vector<std::vector<T>>& b, const std::string& prefix, const std::string& what,
                      ToDouble to_double, Ulp ulp) {
  MetricResult out;
  int64_t cells = 0, identical = 0, max_ulp = 0, zero_signs = 0, short_rows = 0;
  double sdd = 0, sxx = 0;  // sum (x-y)^2 = sum(x^2+y^2) - 2 sum(xy), without the cancellation
  // A side that recorded no scores on this layer is not judged; one that did must have every
  // row b has, at b's length (a missing or truncated row would hide its cells).
  if (!recorded(a) || !recorded(b)) return out;
  for (const RowRef& r : rows) {
    const size_t i = size_t(r.row);
    const size_t want = i < b.size() ? b[i].size() : 0, got = i < a.size() ? a[i].size() : 0;
    if (got != want) {
      ++out.failures;
      ++short_rows;
      if (out.mismatches.size() < kMaxMismatches)
        out.mismatches.push_back(invalid(what + "s", r.row, -1, num(int64_t(want)) + " cells", num(int64_t(got)) + " cells",
                                         "score row missing or truncated"));
      continue;
    }
    for (size_t j = 0; j < std::min(want, got); ++j) {  // min: never read past either row
      ++cells;
      const T x = a[i][j], y = b[i][j];
      const int64_t d = ulp(x, y);
      zero_signs += d == 0 && std::memcmp(&x, &y, sizeof(T)) != 0;  // +0 against -0
      if (d == 0) {
        ++identical;
      } else {
        ++out.failures;
        if (out.mismatches.size() < kMaxMismatches)
          out.mismatches.push_back(invalid(what, r.row, int(j), num(to_double(y)), num(to_double(x)),
                                           num(d) + " ulp"));
      }
      max_ulp = std::max(max_ulp, d);
      const double dx = to_double(x), dy = to_double(y);
      if (std::isfinite(dx) && std::isfinite(dy)) {
        sdd += (dx - dy) * (dx - dy);
        sxx += dx * dx + dy * dy;
      }
    }
  }
  out.records.push_back({prefix + ".cells", double(cells), "count", ""});
  out.records.push_back({prefix + ".missing_rows", double(short_rows), "count", "must be 0"});
  // The relu clamps negative head scores to zero, so the sign of a zero carries no ranking
  // information: reported, never judged (docs/rules.md).
  out.records.push_back({prefix + ".zero_sign_differences", double(zero_signs), "count", "informational"});
  if (cells == 0) return out;
  out.records.push_back({prefix + ".bit_identical", double(identical) / double(cells), "fraction", "must be 1"});
  out.records.push_back({prefix + ".max_ulp", double(max_ulp), "ulp", "lower is better"});
  out.records.push_back({prefix + ".calc_diff", sxx == 0 ? 0.0 : sdd / sxx, "", "lower is better"});
  return out;
}

}  // namespace

std::vector<int32_t> PickTable::picks(int64_t index) const {
  std::vector<int32_t> out;
  if (!has_row(index)) return out;
  const int32_t* v = raw(index);
  for (int i = 0; i < width; ++i)
    if (v[i] != pad) out.push_back(v[i]);
  return out;
}

PickTable positions_table(const std::vector<int32_t>& data, int topk) { return {&data, topk, kPositionPad}; }
PickTable blocks_table(const std::vector<int32_t>& data) { return {&data, kTopkBlocks, kBlockPad}; }

std::vector<int> compared_rows(const Results& a, const Results& b) {
  std::vector<int> rows;
  const size_t n = std::min(a.rows_done.size(), b.rows_done.size());
  for (size_t r = 0; r < n; ++r)
    if (a.rows_done[r] == 1 && b.rows_done[r] == 1) rows.push_back(int(r));
  return rows;
}

std::vector<RowRef> full_rows(const Batch& batch, const std::vector<int>& rows) {
  std::vector<RowRef> out;
  for (int r : rows) out.push_back({r, r, batch.compress_len[size_t(r)]});
  return out;
}

std::vector<RowRef> tail_rows(const Batch& batch, const std::vector<int>& rows) {
  std::vector<RowRef> out;
  for (int r : rows) {
    const int64_t t = batch.tail_index(r);
    if (t >= 0) out.push_back({r, t, batch.compress_len[size_t(r)]});
  }
  return out;
}

MetricResult validity_positions(const std::vector<RowRef>& rows, const PickTable& picks, int topk,
                                const PickTable* own_blocks, const std::string& what) {
  return validity_of(rows, [&](const RowRef& r) { return check_position_row(r, picks, topk, own_blocks, what); });
}

MetricResult validity_blocks(const std::vector<RowRef>& rows, const PickTable& blocks) {
  return validity_of(rows, [&](const RowRef& r) { return check_block_row(r, blocks); });
}

MetricResult set_agreement(const std::vector<RowRef>& rows, const PickTable& a, const PickTable& b,
                           double threshold, const std::string& what) {
  MetricResult out;
  for (const RowRef& r : rows) {
    const std::vector<int32_t> pa = sorted_unique(a.picks(r.index)), pb = sorted_unique(b.picks(r.index));
    const double agreement = pb.empty() ? (pa.empty() ? 1.0 : 0.0) : double(intersection_size(pa, pb)) / double(pb.size());
    out.per_row.push_back(agreement);
    if (agreement >= threshold) continue;
    ++out.failures;
    if (out.mismatches.size() < kMaxMismatches) {
      Mismatch m = first_difference(what, r.row, pa, pb);
      m.detail = "agreement " + num(agreement);
      out.mismatches.push_back(m);
    }
  }
  out.records.push_back({"agreement.mean", mean_of(out.per_row), "fraction", "higher is better"});
  out.records.push_back({"agreement.min", min_of(out.per_row), "fraction", "higher is better"});
  out.records.push_back({"agreement.rows_at_1", share_at_least(out.per_row, 1.0), "fraction", "higher is better"});
  return out;
}

MetricResult tie_exactness(const std::vector<RowRef>& rows, const PickTable& a, const PickTable& b,
                           const RankFn& rank, const std::string& what) {
  std::vector<RowOutcome> outcomes = for_rows(rows.size(), [&](size_t i) {
    const RowRef& r = rows[i];
    RowOutcome o;
    o.value = 1;
    const std::vector<int32_t> pa = sorted_unique(a.picks(r.index)), pb = sorted_unique(b.picks(r.index));
    if (pa == pb) return o;
    o.value = 0;
    o.failed = true;
    o.mismatch = first_difference(what, r.row, pa, pb);
    if (pa.size() != pb.size() || pb.empty()) {
      o.mismatch->detail = num(int64_t(pa.size())) + " picks vs " + num(int64_t(pb.size()));
      return o;
    }
    // Scores of b's picks (for the k-th) and of a's extra picks only.
    const std::vector<int32_t> missed = difference(pb, pa), extra = difference(pa, pb);
    std::vector<int32_t> ids = pb;
    ids.insert(ids.end(), extra.begin(), extra.end());
    const std::vector<double> s = rank(r.row, ids);
    std::map<int32_t, double> score;
    for (size_t j = 0; j < ids.size() && j < s.size(); ++j) score[ids[j]] = s[j];
    double kth = std::numeric_limits<double>::infinity();
    for (int32_t p : pb) kth = std::min(kth, score[p]);
    bool tied = true;
    for (int32_t p : missed) tied = tied && score[p] == kth;
    for (int32_t p : extra) tied = tied && score[p] == kth;
    if (tied) return RowOutcome{1, false, std::nullopt};
    const size_t slot = size_t(o.mismatch->column);
    if (slot < pa.size()) o.mismatch->detail = "score " + num(score[pa[slot]]) + " vs k-th " + num(kth);
    return o;
  });
  MetricResult out;
  merge(outcomes, out);
  out.records.push_back({"exact", share_at_least(out.per_row, 1.0), "fraction", "must be 1"});
  out.records.push_back({"exact.differing_rows", double(out.failures), "count", "must be 0"});
  return out;
}

MetricResult selection_floor(const std::vector<RowRef>& rows, const PickTable& a, const PickTable& b,
                             const PickTable* candidate_blocks, const RankFn& dense, int topk, double tolerance) {
  struct FloorRow {
    RowOutcome outcome;
    int64_t pick_violations = 0, miss_violations = 0;
    bool exempt = false;
  };
  std::vector<FloorRow> found(rows.size());
#pragma omp parallel for schedule(dynamic, 1)
  for (long i = 0; i < long(rows.size()); ++i) {
    const RowRef& r = rows[size_t(i)];
    FloorRow& f = found[size_t(i)];
    const std::vector<int32_t> pb = sorted_unique(b.picks(r.index));
    if (int(pb.size()) < topk) { f.exempt = true; f.outcome.value = std::nan(""); continue; }
    std::vector<int32_t> pa = sorted_unique(a.picks(r.index));
    pa.erase(std::remove_if(pa.begin(), pa.end(), [&](int32_t p) { return p < 0 || p >= r.length; }), pa.end());
    std::vector<int32_t> candidates;
    if (candidate_blocks && candidate_blocks->present()) {
      for (int32_t blk : sorted_unique(candidate_blocks->picks(r.row)))
        for (int64_t p = int64_t(blk) * kBlockSize; blk >= 0 && p < int64_t(blk + 1) * kBlockSize && p < r.length; ++p)
          candidates.push_back(int32_t(p));
    } else {
      for (int p = 0; p < r.length; ++p) candidates.push_back(p);
    }
    std::vector<int32_t> ids = candidates;
    ids.insert(ids.end(), pb.begin(), pb.end());
    ids.insert(ids.end(), pa.begin(), pa.end());
    ids = sorted_unique(ids);
    const std::vector<double> s = dense(r.row, ids);
    auto score = [&](int32_t p) { return s[size_t(std::lower_bound(ids.begin(), ids.end(), p) - ids.begin())]; };
    double floor = std::numeric_limits<double>::infinity();
    for (int32_t p : pb) floor = std::min(floor, score(p));
    const double slack = tolerance * std::fabs(floor), scale = floor == 0 ? 1.0 : std::fabs(floor);
    double margin = std::numeric_limits<double>::infinity();
    for (size_t j = 0; j < pa.size(); ++j) {
      const double sp = score(pa[j]);
      margin = std::min(margin, (sp - floor) / scale);
      if (sp < floor - slack) {
        if (f.pick_violations++ == 0)
          f.outcome.mismatch = invalid("position", r.row, int(j), "scoring >= " + num(floor - slack),
                                       num(int64_t(pa[j])),
                                       "score " + num(sp) + " vs floor " + num(floor) + ": pick below the floor");
      }
    }
    for (int32_t p : candidates) {
      if (contains(pa, p)) continue;
      const double sp = score(p);
      if (sp > floor + slack && f.miss_violations++ == 0 && !f.outcome.mismatch)
        f.outcome.mismatch = invalid("position", r.row, -1, num(int64_t(p)) + " picked", "not picked",
                                     "score " + num(sp) + " vs floor " + num(floor) + ": candidate above the floor missed");
    }
    f.outcome.value = pa.empty() ? 0.0 : margin;
    f.outcome.failed = f.pick_violations + f.miss_violations > 0;
  }
  MetricResult out;
  int64_t picks = 0, misses = 0, exempt = 0;
  double min_margin = std::numeric_limits<double>::infinity();
  std::vector<RowOutcome> outcomes;
  for (const FloorRow& f : found) {
    outcomes.push_back(f.outcome);
    picks += f.pick_violations;
    misses += f.miss_violations;
    exempt += f.exempt;
    if (!f.exempt) min_margin = std::min(min_margin, f.outcome.value);
  }
  merge(outcomes, out);
  out.records.push_back({"floor.pick_violations", double(picks), "count", "must be 0"});
  out.records.push_back({"floor.miss_violations", double(misses), "count", "must be 0"});
  out.records.push_back({"floor.violating_rows", double(out.failures), "count", "must be 0"});
  out.records.push_back({"floor.exempt_rows", double(exempt), "count", ""});
  if (std::isfinite(min_margin)) out.records.push_back({"floor.min_margin", min_margin, "fraction", "higher is better"});
  out.records.push_back({"floor.tolerance", tolerance, "fraction", ""});
  return out;
}

int64_t ulp_distance_f32(float x, float y) {
  uint32_t ux, uy;
  std::memcpy(&ux, &x, 4);
  std::memcpy(&uy, &y, 4);
  const int64_t d = ordered(ux, 0x80000000u) - ordered(uy, 0x80000000u);
  return d < 0 ? -d : d;
}

int64_t ulp_distance_bf16(uint16_t x, uint16_t y) {
  const int64_t d = ordered(x, 0x8000u) - ordered(y, 0x8000u);
  return d < 0 ? -d : d;
}

MetricResult dense_fidelity(const std::vector<RowRef>& rows, const LayerResult& a, const LayerResult& b) {
  return fidelity(rows, a.dense_scores, b.dense_scores, "scores.dense", "dense score",
                  [](float x) { return double(x); }, ulp_distance_f32);
}

MetricResult sparse_fidelity(const std::vector<RowRef>& rows, const LayerResult& a, const LayerResult& b) {
  return fidelity(rows, a.sparse_scores, b.sparse_scores, "scores.sparse", "sparse score",
                  [](uint16_t x) {
                    const uint32_t bits = uint32_t(x) << 16;
                    float f;
                    std::memcpy(&f, &bits, 4);
                    return double(f);
                  },
                  ulp_distance_bf16);
}

MetricResult two_level_quality(const std::vector<RowRef>& rows, const PickTable& a, const PickTable& a_blocks,
                               const TopkFn& exact_topk) {
  struct QualityRow {
    RowOutcome outcome;
    int64_t level_one = 0, level_two = 0;
  };
  std::vector<QualityRow> found(rows.size());
#pragma omp parallel for schedule(dynamic, 1)
  for (long i = 0; i < long(rows.size()); ++i) {
    const RowRef& r = rows[size_t(i)];
    QualityRow& q = found[size_t(i)];
    const std::vector<int32_t> truth = sorted_unique(exact_topk(r.row));
    const std::vector<int32_t> pa = sorted_unique(a.picks(r.index)), blocks = sorted_unique(a_blocks.picks(r.row));
    for (int32_t p : truth) {
      if (contains(pa, p)) continue;
      const bool level_one = !contains(blocks, p / kBlockSize);
      (level_one ? q.level_one : q.level_two)++;
      if (!q.outcome.mismatch)
        q.outcome.mismatch = invalid("exact top-k position", r.row, -1, num(int64_t(p)) + " picked", "missed",
                                     level_one ? "block not published (level one)" : "not selected (level two)");
    }
    q.outcome.value = truth.empty() ? 1.0 : 1.0 - double(q.level_one + q.level_two) / double(truth.size());
  }
  MetricResult out;
  int64_t one = 0, two = 0;
  std::vector<RowOutcome> outcomes;
  for (const QualityRow& q : found) {
    outcomes.push_back(q.outcome);
    one += q.level_one;
    two += q.level_two;
  }
  merge(outcomes, out);
  out.records.push_back({"quality.recall.mean", mean_of(out.per_row), "fraction", "higher is better"});
  out.records.push_back({"quality.recall.min", min_of(out.per_row), "fraction", "higher is better"});
  out.records.push_back({"quality.misses.level_one", double(one), "count", "lower is better"});
  out.records.push_back({"quality.misses.level_two", double(two), "count", "lower is better"});
  return out;
}

MetricResult tail_agreement(const std::vector<RowRef>& tail_refs, const PickTable& tails, const PickTable& full,
                            double threshold) {
  MetricResult out;
  int64_t identical = 0;
  for (const RowRef& r : tail_refs) {
    const std::vector<int32_t> pt = sorted_unique(tails.picks(r.index)), pf = sorted_unique(full.picks(r.row));
    const double overlap = pf.empty() ? (pt.empty() ? 1.0 : 0.0) : double(intersection_size(pt, pf)) / double(pf.size());
    out.per_row.push_back(overlap);
    identical += pt == pf;
    if (overlap >= threshold && (threshold < 1.0 || pt == pf)) continue;
    ++out.failures;
    if (out.mismatches.size() < kMaxMismatches) {
      Mismatch m = first_difference("tail position", r.row, pt, pf);
      m.detail = "overlap with the full-table picks " + num(overlap);
      out.mismatches.push_back(m);
    }
  }
  out.records.push_back({"tails.rows", double(tail_refs.size()), "count", ""});
  out.records.push_back({"tails.identical", tail_refs.empty() ? 1.0 : double(identical) / double(tail_refs.size()),
                         "fraction", threshold >= 1.0 ? "must be 1" : "higher is better"});
  out.records.push_back({"tails.overlap.min", min_of(out.per_row), "fraction", "higher is better"});
  out.records.push_back({"tails.overlap.mean", mean_of(out.per_row), "fraction", "higher is better"});
  return out;
}

}  // namespace dsa::metrics
