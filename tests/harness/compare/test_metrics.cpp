// Each metric on hand-made tables: it flags a planted difference of its own kind, and does not
// flag exact ties.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>

#include "harness/compare/metrics.hpp"
#include "tests/catch.hpp"

using namespace dsa;
using namespace dsa::metrics;

namespace {

constexpr int kK = 8;     // top-k of these hand-made tables
constexpr int kLen = 40;  // L of every row: 5 blocks

double grid_score(int row, int32_t p) { return double((p * 37 + row * 11) % 53) / 8.0 - 1.0; }

// Halfway between the 7th and 8th best grid scores of row 0 (other than 30 and 31): positions
// 30 and 31 tie there, so exactly one of them is row 0's k-th pick.
double tie_value() {
  static const double value = [] {
    std::vector<double> s;
    for (int32_t p = 0; p < kLen; ++p)
      if (p != 30 && p != 31) s.push_back(grid_score(0, p));
    std::sort(s.rbegin(), s.rend());
    return (s[kK - 2] + s[kK - 1]) / 2;
  }();
  return value;
}

// Score of (row, position): distinct values (37 is invertible mod 53) except the planted tie.
double table_score(int row, int32_t p) {
  if (p == 30 || p == 31) return tie_value();
  return grid_score(row, p);
}

// The top-k of a row by table_score (larger first, then smaller position), ascending.
std::vector<int32_t> top_of(int row, int length) {
  std::vector<int32_t> p(static_cast<size_t>(length));
  std::iota(p.begin(), p.end(), 0);
  std::stable_sort(p.begin(), p.end(), [&](int32_t x, int32_t y) { return table_score(row, x) > table_score(row, y); });
  p.resize(size_t(std::min(kK, length)));
  std::sort(p.begin(), p.end());
  return p;
}

RankFn rank = [](int row, const std::vector<int32_t>& ids) {
  std::vector<double> s;
  for (int32_t p : ids) s.push_back(table_score(row, p));
  return s;
};

std::vector<int32_t> table_of(const std::vector<std::vector<int32_t>>& rows, int width, int32_t pad) {
  std::vector<int32_t> t;
  for (const auto& r : rows) {
    t.insert(t.end(), r.begin(), r.end());
    t.insert(t.end(), size_t(width) - r.size(), pad);
  }
  return t;
}

std::vector<RowRef> refs(int n, int length = kLen) {
  std::vector<RowRef> out;
  for (int r = 0; r < n; ++r) out.push_back({r, r, length});
  return out;
}

double record(const MetricResult& m, const std::string& name) {
  for (const Record& r : m.records)
    if (r.name == name) return r.value;
  FAIL("no record " << name);
  return 0;
}

std::vector<int32_t> reference_table(int rows) {
  std::vector<std::vector<int32_t>> t;
  for (int r = 0; r < rows; ++r) t.push_back(top_of(r, kLen));
  return table_of(t, kK, kPositionPad);
}

}  // namespace

TEST_CASE("the hand-made ranking has the planted tie at the k-th score") {
  // 30 and 31 must straddle the k-th place, or the tie tests below prove nothing.
  const std::vector<int32_t> top = top_of(0, kLen);
  const bool has30 = std::count(top.begin(), top.end(), 30) == 1, has31 = std::count(top.begin(), top.end(), 31) == 1;
  REQUIRE(has30 != has31);
  double kth = 1e9;
  for (int32_t p : top) kth = std::min(kth, table_score(0, p));
  REQUIRE(kth == tie_value());
}

TEST_CASE("validity accepts reference picks and flags each broken rule with its slot") {
  std::vector<int32_t> t = reference_table(3);
  const PickTable picks = positions_table(t, kK);
  CHECK(validity_positions(refs(3), picks, kK, nullptr).failures == 0);

  SECTION("pick outside [0, L)") {
    t[size_t(1 * kK + kK - 1)] = kLen;  // last slot of row 1
    const MetricResult m = validity_positions(refs(3), picks, kK, nullptr);
    REQUIRE(m.failures == 1);
    CHECK(m.mismatches[0].row == 1);
    CHECK(m.mismatches[0].column == kK - 1);
    CHECK(m.mismatches[0].actual == "40");
    CHECK(record(m, "validity") < 1.0);
  }
  SECTION("duplicate pick") {
    t[2 * kK + 3] = t[2 * kK + 2];
    const MetricResult m = validity_positions(refs(3), picks, kK, nullptr);
    REQUIRE(m.failures == 1);
    CHECK(m.mismatches[0].row == 2);
    CHECK(m.mismatches[0].column == 3);
  }
  SECTION("count below min(k, L)") {
    t[kK - 1] = kPositionPad;
    const MetricResult m = validity_positions(refs(3), picks, kK, nullptr);
    REQUIRE(m.failures == 1);
    CHECK(m.mismatches[0].row == 0);
    CHECK(m.mismatches[0].column == kK - 1);
  }
  SECTION("padding before a pick") {
    t[0] = kPositionPad;
    CHECK(validity_positions(refs(3), picks, kK, nullptr).mismatches.at(0).column == 1);
  }
  SECTION("not ascending") {
    std::swap(t[0], t[1]);
    CHECK(validity_positions(refs(3), picks, kK, nullptr).mismatches.at(0).column == 1);
  }
  SECTION("short rows take all positions") {
    std::vector<int32_t> s = table_of({{0, 1, 2}}, kK, kPositionPad);
    CHECK(validity_positions(refs(1, 3), positions_table(s, kK), kK, nullptr).failures == 0);
    s[2] = kPositionPad;
    CHECK(validity_positions(refs(1, 3), positions_table(s, kK), kK, nullptr).failures == 1);
  }
}

TEST_CASE("validity of level-two picks checks the implementation's own blocks") {
  // Row 0 publishes blocks 0, 1 and 4 (the newest); picks in block 2 are outside.
  std::vector<int32_t> blocks = table_of({{0, 1, 4}}, kTopkBlocks, kBlockPad);
  std::vector<int32_t> picks = table_of({{0, 3, 8, 9, 15, 32, 33, 39}}, kK, kPositionPad);
  const PickTable own = blocks_table(blocks);
  CHECK(validity_positions(refs(1), positions_table(picks, kK), kK, &own).failures == 0);
  picks[5] = 17;  // block 2: not published
  std::sort(picks.begin(), picks.begin() + kK);
  const MetricResult m = validity_positions(refs(1), positions_table(picks, kK), kK, &own);
  REQUIRE(m.failures == 1);
  CHECK(m.mismatches[0].actual == "17");
  CHECK(m.mismatches[0].detail.find("block 2") != std::string::npos);
}

TEST_CASE("validity of blocks: count, order, newest block") {
  // L = 40 -> 5 blocks: all kept. L = 20000 -> 2500 blocks: 2048 kept.
  std::vector<int32_t> all = table_of({{0, 1, 2, 3, 4}}, kTopkBlocks, kBlockPad);
  CHECK(validity_blocks(refs(1), blocks_table(all)).failures == 0);

  SECTION("drop a block") {
    all[2] = all[3];
    all[3] = all[4];
    all[4] = kBlockPad;
    const MetricResult m = validity_blocks(refs(1), blocks_table(all));
    REQUIRE(m.failures == 1);
    CHECK(m.mismatches[0].expected == "5 blocks");
  }
  SECTION("newest block missing on a long row") {
    std::vector<int32_t> ids(kTopkBlocks);
    std::iota(ids.begin(), ids.end(), 0);  // 0..2047, newest (2499) missing
    std::vector<int32_t> t = table_of({ids}, kTopkBlocks, kBlockPad);
    const MetricResult m = validity_blocks(refs(1, 20000), blocks_table(t));
    REQUIRE(m.failures == 1);
    CHECK(m.mismatches[0].expected.find("2499") != std::string::npos);
    ids.back() = 2499;
    t = table_of({ids}, kTopkBlocks, kBlockPad);
    CHECK(validity_blocks(refs(1, 20000), blocks_table(t)).failures == 0);
  }
  SECTION("empty row has no blocks") {
    std::vector<int32_t> none = table_of({{}}, kTopkBlocks, kBlockPad);
    CHECK(validity_blocks(refs(1, 0), blocks_table(none)).failures == 0);
    none[0] = 0;
    CHECK(validity_blocks(refs(1, 0), blocks_table(none)).failures == 1);
  }
}

TEST_CASE("set agreement and exactness flag one changed pick with its coordinates") {
  const std::vector<int32_t> ref = reference_table(4);
  std::vector<int32_t> got = ref;
  const PickTable a = positions_table(got, kK), b = positions_table(ref, kK);
  CHECK(record(set_agreement(refs(4), a, b), "agreement.mean") == 1.0);
  CHECK(tie_exactness(refs(4), a, b, rank).failures == 0);

  // Row 2: replace its smallest-scoring pick by an unpicked, non-tied position.
  const std::vector<int32_t> top = top_of(2, kLen);
  int32_t unpicked = 0;
  while (std::count(top.begin(), top.end(), unpicked) || table_score(2, unpicked) == tie_value()) ++unpicked;
  std::vector<int32_t> changed = top;
  changed[3] = unpicked;
  std::sort(changed.begin(), changed.end());
  std::copy(changed.begin(), changed.end(), got.begin() + 2 * kK);

  const MetricResult agree = set_agreement(refs(4), a, b);
  CHECK(record(agree, "agreement.min") == Approx(7.0 / 8));
  CHECK(record(agree, "agreement.rows_at_1") == Approx(3.0 / 4));
  CHECK(agree.failures == 1);

  const MetricResult exact = tie_exactness(refs(4), a, b, rank);
  REQUIRE(exact.failures == 1);
  REQUIRE(exact.mismatches.size() == 1);
  const Mismatch& m = exact.mismatches[0];
  CHECK(m.row == 2);
  // The first slot where the sorted lists differ.
  size_t slot = 0;
  while (changed[slot] == top[slot]) ++slot;
  CHECK(m.column == int(slot));
  CHECK(m.expected == std::to_string(top[slot]));
  CHECK(m.actual == std::to_string(changed[slot]));
  CHECK(m.detail.find("k-th") != std::string::npos);
  CHECK(record(exact, "exact") == Approx(3.0 / 4));
}

TEST_CASE("exactness does not flag a swap among positions tied at the k-th score") {
  const std::vector<int32_t> ref = reference_table(1);
  std::vector<int32_t> got = ref;
  // Exactly one of 30 / 31 is picked (checked above): swap it for the other one.
  for (int i = 0; i < kK; ++i)
    if (got[size_t(i)] == 30 || got[size_t(i)] == 31) got[size_t(i)] = 61 - got[size_t(i)];
  std::sort(got.begin(), got.end());
  REQUIRE(got != ref);
  const PickTable a = positions_table(got, kK), b = positions_table(ref, kK);
  CHECK(tie_exactness(refs(1), a, b, rank).failures == 0);
  CHECK(record(set_agreement(refs(1), a, b), "agreement.mean") == Approx(7.0 / 8));
}

TEST_CASE("exactness on blocks flags a different block unless its key ties") {
  // Keys of blocks 0..5 (5 is the newest: +inf); 2048-wide table with 3 kept.
  const double keys[] = {3.0, 1.0, 2.0, 2.0, 0.5, INFINITY};
  RankFn key = [&](int, const std::vector<int32_t>& ids) {
    std::vector<double> s;
    for (int32_t b : ids) s.push_back(keys[b]);
    return s;
  };
  std::vector<int32_t> ref = table_of({{0, 2, 5}}, kTopkBlocks, kBlockPad);
  std::vector<int32_t> tie = table_of({{0, 3, 5}}, kTopkBlocks, kBlockPad);
  std::vector<int32_t> wrong = table_of({{0, 1, 5}}, kTopkBlocks, kBlockPad);
  const PickTable b = blocks_table(ref);
  CHECK(tie_exactness(refs(1, 48), blocks_table(tie), b, key, "block").failures == 0);
  const MetricResult m = tie_exactness(refs(1, 48), blocks_table(wrong), b, key, "block");
  REQUIRE(m.failures == 1);
  CHECK(m.mismatches[0].what == "block");
  CHECK(m.mismatches[0].column == 1);
  CHECK(m.mismatches[0].expected == "2");
  CHECK(m.mismatches[0].actual == "1");
}

TEST_CASE("selection floor: a pick below the floor and a missed high candidate") {
  const std::vector<int32_t> ref = reference_table(2);
  std::vector<int32_t> got = ref;
  const PickTable a = positions_table(got, kK), b = positions_table(ref, kK);
  MetricResult clean = selection_floor(refs(2), a, b, nullptr, rank, kK);
  CHECK(clean.failures == 0);
  CHECK(record(clean, "floor.min_margin") >= 0.0);

  // Row 1: replace its best pick by the lowest-scoring position of the row.
  const std::vector<int32_t> top = top_of(1, kLen);
  int32_t best = top[0], worst = 0;
  for (int32_t p : top) if (table_score(1, p) > table_score(1, best)) best = p;
  for (int32_t p = 0; p < kLen; ++p) if (table_score(1, p) < table_score(1, worst)) worst = p;
  std::vector<int32_t> changed = top;
  *std::find(changed.begin(), changed.end(), best) = worst;
  std::sort(changed.begin(), changed.end());
  std::copy(changed.begin(), changed.end(), got.begin() + kK);

  const MetricResult m = selection_floor(refs(2), a, b, nullptr, rank, kK);
  CHECK(record(m, "floor.pick_violations") == 1);
  CHECK(record(m, "floor.miss_violations") == 1);  // `best` is now an unpicked candidate
  CHECK(m.failures == 1);
  REQUIRE(!m.mismatches.empty());
  CHECK(m.mismatches[0].row == 1);
  CHECK(m.mismatches[0].actual == std::to_string(worst));
  CHECK(m.per_row[1] < 0);

  SECTION("a miss outside the published blocks is not a candidate") {
    std::vector<int32_t> blocks = table_of({{0, 1, 2, 3, 4}, {int32_t(worst / 8), 4}}, kTopkBlocks, kBlockPad);
    const PickTable own = blocks_table(blocks);
    const MetricResult restricted = selection_floor(refs(2), a, b, &own, rank, kK);
    CHECK(record(restricted, "floor.pick_violations") == 1);
    CHECK(record(restricted, "floor.miss_violations") == (best / 8 == worst / 8 || best / 8 == 4 ? 1 : 0));
  }
  SECTION("the default tolerance is exactly 2^-5 of |floor|, at both sides") {
    // Row 0: b picks 0..7 with scores 2 - p/7 (floor 1.0 at position 7); position 8 scores
    // `edge`, everything else 0.5. The public test's 2^-5 is written out here, not taken from
    // the rules header, so a changed constant fails.
    constexpr double kTol = 0.03125;
    const std::vector<int32_t> r0 = table_of({{0, 1, 2, 3, 4, 5, 6, 7}}, kK, kPositionPad);
    const std::vector<int32_t> g0 = table_of({{0, 1, 2, 3, 4, 5, 6, 8}}, kK, kPositionPad);
    auto ranking = [](double edge) -> RankFn {
      return [edge](int, const std::vector<int32_t>& ids) {
        std::vector<double> s;
        for (int32_t p : ids) s.push_back(p < 8 ? 2.0 - p / 7.0 : p == 8 ? edge : 0.5);
        return s;
      };
    };
    const PickTable own = positions_table(r0, kK), swapped = positions_table(g0, kK);
    const double low = 1.0 - kTol, high = 1.0 + kTol;
    // A pick exactly 2^-5 below the floor passes; one ulp further fails.
    CHECK(selection_floor(refs(1, 16), swapped, own, nullptr, ranking(low), kK).failures == 0);
    CHECK(selection_floor(refs(1, 16), swapped, own, nullptr, ranking(std::nextafter(low, 0.0)), kK).failures == 1);
    // A missed candidate exactly 2^-5 above the floor passes; one ulp further fails.
    CHECK(selection_floor(refs(1, 16), own, own, nullptr, ranking(high), kK).failures == 0);
    const MetricResult miss = selection_floor(refs(1, 16), own, own, nullptr, ranking(std::nextafter(high, 2.0)), kK);
    CHECK(miss.failures == 1);
    CHECK(record(miss, "floor.miss_violations") == 1);
    CHECK(record(miss, "floor.tolerance") == kTol);
    // An explicit tolerance replaces the default.
    CHECK(selection_floor(refs(1, 16), swapped, own, nullptr, ranking(low), kK, 0.001).failures == 1);
  }
  SECTION("rows with fewer than k reference picks are exempt") {
    std::vector<int32_t> short_ref = table_of({{0, 1, 2}}, kK, kPositionPad);
    std::vector<int32_t> short_got = table_of({{0, 1}}, kK, kPositionPad);
    const MetricResult e = selection_floor(refs(1, 3), positions_table(short_got, kK),
                                           positions_table(short_ref, kK), nullptr, rank, kK);
    CHECK(e.failures == 0);
    CHECK(record(e, "floor.exempt_rows") == 1);
  }
}

TEST_CASE("score fidelity: one flipped bit is one ulp") {
  LayerResult a, b;
  a.dense_scores.resize(3);
  for (int r = 0; r < 3; ++r)
    for (int j = 0; j < kLen; ++j) a.dense_scores[size_t(r)].push_back(float(table_score(r, j)) * 1.37f);
  a.sparse_scores = {{0x3f80, 0x4000, 0xbf00}, {}, {0x4120}};
  b = a;
  MetricResult same = dense_fidelity(refs(3), a, b);
  CHECK(record(same, "scores.dense.bit_identical") == 1.0);
  CHECK(record(same, "scores.dense.max_ulp") == 0);
  CHECK(record(same, "scores.dense.calc_diff") == Approx(0.0).margin(1e-15));

  uint32_t bits;
  std::memcpy(&bits, &a.dense_scores[1][7], 4);
  bits ^= 1u;
  std::memcpy(&a.dense_scores[1][7], &bits, 4);
  const MetricResult m = dense_fidelity(refs(3), a, b);
  CHECK(record(m, "scores.dense.bit_identical") == Approx(1.0 - 1.0 / (3 * kLen)));
  CHECK(record(m, "scores.dense.max_ulp") == 1);
  CHECK(record(m, "scores.dense.calc_diff") > 0.0);
  REQUIRE(m.mismatches.size() == 1);
  CHECK(m.mismatches[0].row == 1);
  CHECK(m.mismatches[0].column == 7);

  a.sparse_scores[2][0] ^= 0x0001;
  const MetricResult s = sparse_fidelity(refs(3), a, b);
  CHECK(record(s, "scores.sparse.cells") == 4);  // row 1 recorded nothing
  CHECK(record(s, "scores.sparse.max_ulp") == 1);
  CHECK(s.failures == 1);
}

TEST_CASE("ulp distance crosses zero and treats signed zeros as equal") {
  CHECK(ulp_distance_f32(0.0f, -0.0f) == 0);
  CHECK(ulp_distance_f32(1.0f, std::nextafter(1.0f, 2.0f)) == 1);
  CHECK(ulp_distance_f32(std::nextafter(0.0f, 1.0f), std::nextafter(0.0f, -1.0f)) == 2);
  CHECK(ulp_distance_bf16(0x0000, 0x8000) == 0);
  CHECK(ulp_distance_bf16(0x3f80, 0x3f82) == 2);
}

TEST_CASE("two-level quality attributes misses to level one or level two") {
  // Exact top-k of row 0: 8 positions; the implementation published blocks 0, 1, 4 and picked
  // some of them. 17 (block 2) is a level-one miss, 9 a level-two miss.
  const std::vector<int32_t> truth = {1, 2, 9, 10, 17, 33, 34, 39};
  TopkFn topk = [&](int) { return truth; };
  std::vector<int32_t> blocks = table_of({{0, 1, 4}}, kTopkBlocks, kBlockPad);
  std::vector<int32_t> picks = table_of({{1, 2, 3, 10, 11, 33, 34, 39}}, kK, kPositionPad);
  const MetricResult q = two_level_quality(refs(1), positions_table(picks, kK), blocks_table(blocks), topk);
  CHECK(record(q, "quality.recall.mean") == Approx(6.0 / 8));
  CHECK(record(q, "quality.misses.level_one") == 1);
  CHECK(record(q, "quality.misses.level_two") == 1);
  CHECK(q.failures == 0);  // informational
}

TEST_CASE("tails must equal the full-table picks (own path) or overlap 98 % (public test)") {
  Batch batch;
  batch.num_rows = {3, 2};
  batch.compressed_len = {kLen, kLen};
  batch.tail_rows = {2, 1};
  batch.compress_len = {kLen, kLen, kLen, kLen, kLen};
  batch.finalize();
  const std::vector<RowRef> tails = tail_rows(batch, {0, 1, 2, 3, 4});
  REQUIRE(tails.size() == 3);
  CHECK(tails[0].row == 1);
  CHECK(tails[0].index == 0);
  CHECK(tails[2].row == 4);
  CHECK(tails[2].index == 2);

  const std::vector<int32_t> full = reference_table(5);
  std::vector<int32_t> tail;
  for (const RowRef& t : tails) tail.insert(tail.end(), full.begin() + t.row * kK, full.begin() + (t.row + 1) * kK);
  const PickTable ft = positions_table(full, kK), tt = positions_table(tail, kK);
  CHECK(tail_agreement(tails, tt, ft).failures == 0);
  tail[size_t(2 * kK)] = tail[size_t(2 * kK)] == 0 ? 1 : 0;  // row 4 differs in one pick
  std::sort(tail.begin() + 2 * kK, tail.end());
  const MetricResult m = tail_agreement(tails, tt, ft);
  REQUIRE(m.failures == 1);
  CHECK(m.mismatches[0].row == 4);
  CHECK(record(m, "tails.overlap.min") == Approx(7.0 / 8));
  CHECK(tail_agreement(tails, tt, ft, 0.85).failures == 0);
}

TEST_CASE("a table shorter than its rows is invalid, not a crash") {
  std::vector<int32_t> one_row = table_of({{0, 1, 2, 3, 4, 5, 6, 7}}, kK, kPositionPad);
  const MetricResult m = validity_positions(refs(3), positions_table(one_row, kK), kK, nullptr);
  CHECK(m.failures == 2);
  CHECK(m.mismatches.at(0).row == 1);
  std::vector<int32_t> no_blocks;
  CHECK(validity_blocks(refs(2), blocks_table(no_blocks)).failures == 2);
}

TEST_CASE("compared rows: rows_done on both sides") {
  Results a, b;
  a.rows_done = {1, 1, 0, 1};
  b.rows_done = {1, 0, 1, 1};
  CHECK(compared_rows(a, b) == std::vector<int>{0, 3});
}
