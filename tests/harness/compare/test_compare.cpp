// The comparison driver on a generated batch with the real reference: rule choice, verdicts,
// planted failures located by coordinates, rows done on both sides, layers on one side only.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <numeric>
#include <stdexcept>
#include <string>
#include <sys/wait.h>
#include <unistd.h>

#include "harness/batch/batch_io.hpp"
#include "harness/compare/compare.hpp"
#include "harness/generate/generate.hpp"
#include "harness/impls/reference.hpp"
#include "harness/impls/reference_views.hpp"
#include "gpu/gpu_implementations.hpp"
#include "reference/formats.hpp"
#include "reference/scores.hpp"
#include "reference/selection.hpp"
#include "tests/catch.hpp"

using namespace dsa;

namespace {

const Batch& smoke() {
  static const Batch batch = [] {
    GenerateOptions o;
    o.preset = "smoke";
    o.seed = 3;
    return generate_batch(o);
  }();
  return batch;
}

// Reference results of one path on the smoke batch, cached (the reference is the slow part).
const Results& reference(PathKind path, bool scores = false) {
  static std::map<std::pair<int, bool>, Results> cache;
  auto key = std::make_pair(int(path), scores);
  auto it = cache.find(key);
  if (it != cache.end()) return it->second;
  RunOptions o;
  o.scores = scores;
  return cache[key] = make_reference(path)->run(smoke(), o);
}

const LayerComparison& layer_of(const Comparison& c, const std::string& id) {
  for (const LayerComparison& l : c.layers)
    if (l.layer == id) return l;
  FAIL("no layer " << id);
  return c.layers.front();
}

double value(const LayerComparison& l, const std::string& name) {
  const Record* r = find_record(l, name);
  REQUIRE(r != nullptr);
  return r->value;
}

// A consumer and the longest row (always in a --rows N draw), long enough that the picks are a
// real choice.
std::pair<int, int> consumer_row(const Batch& b) {
  const Layer* c = b.layers_with(Role::consumer).at(0);
  const int r = int(std::max_element(b.compress_len.begin(), b.compress_len.end()) - b.compress_len.begin());
  REQUIRE(b.compress_len[size_t(r)] > 4 * b.topk);
  return {c->id, r};
}

// A row long enough for a real choice whose level one keeps every block (L <= 2048 * 8).
int identity_row(const Batch& b) {
  for (int r = 0; r < b.rows(); ++r)
    if (b.compress_len[size_t(r)] > 4 * b.topk && b.compress_len[size_t(r)] <= kCandidateWidth) return r;
  FAIL("no row with 4k < L <= 16384");
  return 0;
}

// Replaces the `n` largest picks of (layer, row) by the `n` smallest unpicked positions inside
// the row's published blocks: the row then agrees on exactly k - n picks, and stays valid.
void plant_picks(const Batch& b, Results& r, int layer, int row, int n) {
  const int k = b.topk;
  int32_t* picks = r.layers.at(layer).positions.data() + size_t(row) * size_t(k);
  std::vector<int32_t> mine(picks, picks + k), fresh;
  for (int i = 0; i < kTopkBlocks && int(fresh.size()) < n; ++i) {
    const int32_t blk = r.blocks[size_t(row) * kTopkBlocks + size_t(i)];
    if (blk == kBlockPad) break;
    for (int32_t p = blk * kBlockSize; p < (blk + 1) * kBlockSize && p < b.compress_len[size_t(row)]; ++p)
      if (!std::binary_search(mine.begin(), mine.end(), p) && int(fresh.size()) < n) fresh.push_back(p);
  }
  REQUIRE(int(fresh.size()) == n);
  std::copy(fresh.begin(), fresh.end(), mine.end() - n);
  std::sort(mine.begin(), mine.end());
  std::copy(mine.begin(), mine.end(), picks);
}

// Replaces one pick of (layer, row) by the unpicked position inside the row's blocks whose
// ranking score is lowest (fp32 dense), so the change is neither a tie nor near the floor.
int32_t plant_low_pick(const Batch& b, Results& r, int layer, int row) {
  const int k = b.topk;
  int32_t* picks = r.layers.at(layer).positions.data() + size_t(row) * size_t(k);
  std::vector<int32_t> mine(picks, picks + k);
  std::vector<int32_t> candidates;
  for (int i = 0; i < kTopkBlocks; ++i) {
    const int32_t blk = r.blocks[size_t(row) * kTopkBlocks + size_t(i)];
    if (blk == kBlockPad) break;
    for (int32_t p = blk * kBlockSize; p < (blk + 1) * kBlockSize && p < b.compress_len[size_t(row)]; ++p)
      if (!std::binary_search(mine.begin(), mine.end(), p)) candidates.push_back(p);
  }
  const Layer& layer_data = *b.layer(layer);
  ref::KeyView keys{b.pool.data(), b.page_size, b.page_table.data() + size_t(b.row_request[size_t(row)]) * size_t(b.table_width)};
  std::vector<float> s(candidates.size());
  ref::dense_scores_at({layer_data.q_row(row), layer_data.scale_row(row), layer_data.weight_row(row)}, keys,
                       candidates.data(), int64_t(candidates.size()), s.data());
  const int32_t low = candidates[size_t(std::min_element(s.begin(), s.end()) - s.begin())];
  mine[0] = low;  // drop the smallest position, take the low one
  std::sort(mine.begin(), mine.end());
  std::copy(mine.begin(), mine.end(), picks);
  return low;
}

}  // namespace

TEST_CASE("the rule follows the paths") {
  CHECK(choose_rule(PathKind::sparse, PathKind::sparse) == Rule::own_path);
  CHECK(choose_rule(PathKind::mask, PathKind::mask) == Rule::own_path);
  CHECK(choose_rule(PathKind::sparse, PathKind::mask) == Rule::public_test);
  CHECK(choose_rule(PathKind::mask, PathKind::sparse) == Rule::public_test);
  CHECK(choose_rule(PathKind::sparse, PathKind::exact) == Rule::quality);
}

TEST_CASE("a reference passes against itself on every layer") {
  const Results& a = reference(PathKind::sparse);
  const Comparison c = compare_results(smoke(), a, PathKind::sparse, a, PathKind::sparse);
  CHECK(c.rule == Rule::own_path);
  CHECK(c.disposition == Disposition::passed);
  REQUIRE(c.layers.size() >= 3);  // blocks, source, consumers
  for (const LayerComparison& l : c.layers) {
    INFO(l.layer);
    CHECK(l.disposition == Disposition::passed);
    CHECK(l.rows.size() == size_t(l.role == "tail" ? 0 : smoke().rows()));
  }
  CHECK(value(layer_of(c, "blocks"), "exact") == 1.0);
  // Every layer of the batch is compared, the last one too.
  for (const Layer& layer : smoke().layers) CHECK(layer_of(c, std::to_string(layer.id)).rows.size() == size_t(smoke().rows()));
}

TEST_CASE("own path: one planted consumer pick fails exactness with its coordinates") {
  const Batch& b = smoke();
  Results a = reference(PathKind::sparse);
  a.name = "planted";
  const auto [layer, row] = consumer_row(b);
  const int32_t low = plant_low_pick(b, a, layer, row);
  const Comparison c = compare_results(b, a, PathKind::sparse, reference(PathKind::sparse), PathKind::sparse);
  CHECK(c.disposition == Disposition::incorrect);
  const LayerComparison& l = layer_of(c, std::to_string(layer));
  CHECK(l.disposition == Disposition::incorrect);
  CHECK(l.failed_metric == "exactness");
  REQUIRE(!l.mismatches.empty());
  CHECK(l.mismatches[0].row == row);
  const std::string line = mismatch_text(l.layer, l.mismatches[0]);
  CHECK(line.find("layer " + std::to_string(layer) + " row " + std::to_string(row) + " slot ") == 0);
  CHECK(line.find("k-th") != std::string::npos);
  CHECK(value(l, "agreement.min") == Approx(1.0 - 1.0 / b.topk));
  // The other layers still pass.
  CHECK(layer_of(c, "blocks").disposition == Disposition::passed);
  (void)low;
}

TEST_CASE("public test: reference sparse path against the mask path, and a planted floor violation") {
  const Batch& b = smoke();
  const Comparison c = compare_results(b, reference(PathKind::sparse), PathKind::sparse, reference(PathKind::mask), PathKind::mask);
  CHECK(c.rule == Rule::public_test);
  CHECK(c.disposition == Disposition::passed);
  const auto [layer, row] = consumer_row(b);
  const LayerComparison& l = layer_of(c, std::to_string(layer));
  CHECK(value(l, "agreement.mean") > 0.95);
  CHECK(value(l, "floor.violating_rows") == 0);

  Results a = reference(PathKind::sparse);
  const int32_t low = plant_low_pick(b, a, layer, row);
  const Comparison bad = compare_results(b, a, PathKind::sparse, reference(PathKind::mask), PathKind::mask);
  const LayerComparison& lb = layer_of(bad, std::to_string(layer));
  CHECK(bad.disposition == Disposition::incorrect);
  CHECK(lb.failed_metric == "floor");
  CHECK(value(lb, "floor.pick_violations") >= 1);
  REQUIRE(!lb.mismatches.empty());
  CHECK(lb.mismatches[0].row == row);
  CHECK(lb.mismatches[0].actual == std::to_string(low));
}

TEST_CASE("own path: swaps among exact ties on real data are not flagged (edge preset, repeated keys)") {
  GenerateOptions o;
  o.preset = "edge";
  o.seed = 2;
  const Batch b = generate_batch(o);
  RunOptions run;
  for (int r = 0; r < b.rows(); ++r)
    if (b.compress_len[size_t(r)] == 16400) run.rows.push_back(r);  // the repeated-keys request
  REQUIRE(!run.rows.empty());
  const int row = run.rows.back();
  const Results ref = make_reference(PathKind::mask)->run(b, run);
  const int layer = b.layers_with(Role::consumer).at(0)->id;

  // Positions: swap a pick at the k-th score for an unpicked candidate with the same score.
  Results swapped = ref;
  int32_t* picks = swapped.layers.at(layer).positions.data() + size_t(row) * size_t(b.topk);
  std::vector<int32_t> mine(picks, picks + b.topk), cands;
  for (int i = 0; i < kTopkBlocks && ref.blocks[size_t(row) * kTopkBlocks + size_t(i)] != kBlockPad; ++i)
    for (int j = 0; j < kBlockSize; ++j) {
      const int32_t p = ref.blocks[size_t(row) * kTopkBlocks + size_t(i)] * kBlockSize + j;
      if (p < b.compress_len[size_t(row)]) cands.push_back(p);
    }
  const Layer& l = *b.layer(layer);
  ref::KeyView keys{b.pool.data(), b.page_size, b.page_table.data() + size_t(b.row_request[size_t(row)]) * size_t(b.table_width)};
  std::vector<float> s(cands.size());
  ref::dense_scores_at({l.q_row(row), l.scale_row(row), l.weight_row(row)}, keys, cands.data(), int64_t(cands.size()), s.data());
  float kth = INFINITY;
  for (size_t i = 0; i < cands.size(); ++i)
    if (std::binary_search(mine.begin(), mine.end(), cands[i])) kth = std::min(kth, s[i]);
  int32_t tied_in = -1, tied_out = -1;
  for (size_t i = 0; i < cands.size(); ++i) {
    if (s[i] != kth) continue;
    const bool picked = std::binary_search(mine.begin(), mine.end(), cands[i]);
    if (picked && tied_in < 0) tied_in = cands[i];
    if (!picked && tied_out < 0) tied_out = cands[i];
  }
  REQUIRE(tied_in >= 0);
  REQUIRE(tied_out >= 0);
  *std::find(mine.begin(), mine.end(), tied_in) = tied_out;
  std::sort(mine.begin(), mine.end());
  std::copy(mine.begin(), mine.end(), picks);
  const Comparison c = compare_results(b, swapped, PathKind::mask, ref, PathKind::mask);
  const LayerComparison& lc = layer_of(c, std::to_string(layer));
  CHECK(lc.disposition == Disposition::passed);
  CHECK(value(lc, "agreement.min") < 1.0);  // the sets do differ
  CHECK(value(lc, "exact") == 1.0);

  // Blocks: every full block has the same key here, so any kept block (not the newest) can be
  // traded for a dropped one.
  Results traded = ref;
  int32_t* blocks = traded.blocks.data() + size_t(row) * kTopkBlocks;
  std::vector<int32_t> kept(blocks, blocks + kTopkBlocks);
  const int32_t nblocks = (16400 + kBlockSize - 1) / kBlockSize;
  REQUIRE(nblocks > kTopkBlocks);
  int32_t dropped = 0;
  while (std::binary_search(kept.begin(), kept.end(), dropped)) ++dropped;
  kept.erase(kept.begin());  // the oldest kept block: full, never the newest
  kept.push_back(dropped);
  std::sort(kept.begin(), kept.end());
  std::copy(kept.begin(), kept.end(), blocks);
  const Comparison cb = compare_results(b, traded, PathKind::mask, ref, PathKind::mask);
  CHECK(layer_of(cb, "blocks").disposition == Disposition::passed);
  CHECK(value(layer_of(cb, "blocks"), "agreement.min") < 1.0);

  // An implementation that broke the level-one tie this way selects its consumer picks from its
  // own candidates: judged against the reference's level two on those same blocks, it passes.
  std::vector<int32_t> own_cands;
  for (int32_t blk : kept)
    for (int32_t p = blk * kBlockSize; p < (blk + 1) * kBlockSize && p < 16400; ++p) own_cands.push_back(p);
  std::vector<float> own_scores(own_cands.size());
  ref::dense_scores_at({l.q_row(row), l.scale_row(row), l.weight_row(row)}, keys, own_cands.data(),
                       int64_t(own_cands.size()), own_scores.data());
  const std::vector<int32_t> own_picks = ref::topk_ids(own_scores.data(), own_cands.data(), int64_t(own_cands.size()), b.topk);
  // The other consumers select on the traded blocks too (their old picks would be invalid).
  for (const Layer* consumer : b.layers_with(Role::consumer)) {
    if (consumer->id == layer) continue;
    std::vector<float> cs(own_cands.size());
    ref::dense_scores_at({consumer->q_row(row), consumer->scale_row(row), consumer->weight_row(row)}, keys, own_cands.data(),
                         int64_t(own_cands.size()), cs.data());
    const std::vector<int32_t> picks_c = ref::topk_ids(cs.data(), own_cands.data(), int64_t(own_cands.size()), b.topk);
    std::copy(picks_c.begin(), picks_c.end(), traded.layers.at(consumer->id).positions.begin() + row * b.topk);
  }
  const std::vector<int32_t> ref_picks(ref.layers.at(layer).positions.begin() + row * b.topk,
                                       ref.layers.at(layer).positions.begin() + (row + 1) * b.topk);
  REQUIRE(own_picks != ref_picks);  // the trade changed the candidates
  std::copy(own_picks.begin(), own_picks.end(), traded.layers.at(layer).positions.begin() + row * b.topk);
  const Comparison co = compare_results(b, traded, PathKind::mask, ref, PathKind::mask);
  const LayerComparison& own = layer_of(co, std::to_string(layer));
  CHECK(own.disposition == Disposition::passed);
  CHECK(value(own, "exact.rows_on_own_blocks") == 1);
  CHECK(co.disposition == Disposition::passed);
  // ...while its old picks (from the block it no longer publishes) are invalid.
  std::copy(ref_picks.begin(), ref_picks.end(), traded.layers.at(layer).positions.begin() + row * b.topk);
  CHECK(layer_of(compare_results(b, traded, PathKind::mask, ref, PathKind::mask), std::to_string(layer)).failed_metric ==
        "validity");
}

TEST_CASE("public test: bf16 ties of the sparse path broken by the tie rule agree, broken the other way they do not") {
  // Edge seed 1010, layer 36, row 7 (L = 1000, four repeated keys: four classes of 250 equal
  // scores): fp32 21.483 and 21.306 both round to bf16 21.375, so at the k-th place the correct
  // sparse path takes the smaller positions of both classes and the mask path all of the higher
  // one. Agreement was 0.77 and the clean reference failed.
  GenerateOptions o;
  o.preset = "edge";
  o.seed = 1010;
  const Batch b = generate_batch(o);
  const Results sparse = make_reference(PathKind::sparse)->run(b, {});
  const Results mask = make_reference(PathKind::mask)->run(b, {});
  const Comparison c = compare_results(b, sparse, PathKind::sparse, mask, PathKind::mask);
  CHECK(c.rule == Rule::public_test);
  CHECK(c.disposition == Disposition::passed);
  const LayerComparison& l36 = layer_of(c, "36");
  CHECK(value(l36, "agreement.min") >= rules::kPublicAgreement);
  CHECK(value(l36, "agreement.tie_swaps") >= 119);  // row 7's alone; other tie rows add theirs
  const auto fig = std::find_if(l36.rows.begin(), l36.rows.end(), [](const RowFigure& f) { return f.row == 7; });
  REQUIRE(fig != l36.rows.end());
  CHECK(fig->agreement == 1.0);

  // The same row with the tie broken towards larger positions: the k-th class's smallest
  // positions replaced by its largest unpicked ones. Still a valid top-k by bf16 score.
  const int row = 7, layer = 36, k = b.topk;
  const int32_t L = b.compress_len[row];
  REQUIRE(L == 1000);
  std::vector<int32_t> all(static_cast<size_t>(L));
  std::iota(all.begin(), all.end(), 0);
  std::vector<uint16_t> s(all.size());
  const Layer& ly = *std::find_if(b.layers.begin(), b.layers.end(), [&](const Layer& x) { return x.id == layer; });
  ref::sparse_scores_at(query_of(ly, row), keys_of(b, row), all.data(), L, s.data());
  Results reversed = sparse;
  int32_t* picks = reversed.layers.at(layer).positions.data() + size_t(row) * size_t(k);
  float kth = INFINITY;
  for (int i = 0; i < k; ++i) kth = std::min(kth, ref::bf16_to_float(s[size_t(picks[i])]));
  std::vector<int32_t> kept, tied;
  for (int i = 0; i < k; ++i)
    if (ref::bf16_to_float(s[size_t(picks[i])]) > kth) kept.push_back(picks[i]);
  for (int32_t p = L - 1; p >= 0 && kept.size() + tied.size() < size_t(k); --p)
    if (ref::bf16_to_float(s[size_t(p)]) == kth) tied.push_back(p);
  kept.insert(kept.end(), tied.begin(), tied.end());
  std::sort(kept.begin(), kept.end());
  std::copy(kept.begin(), kept.end(), picks);
  const Comparison r = compare_results(b, reversed, PathKind::sparse, mask, PathKind::mask);
  CHECK(r.disposition == Disposition::incorrect);
  CHECK(layer_of(r, "36").failed_metric == "agreement");
  CHECK(layer_of(r, "36").mismatches.at(0).row == row);
}

TEST_CASE("public test with the mask path under test still measures against the mask floor") {
  const Batch& b = smoke();
  const Comparison c = compare_results(b, reference(PathKind::mask), PathKind::mask, reference(PathKind::sparse), PathKind::sparse);
  CHECK(c.rule == Rule::public_test);
  CHECK(c.disposition == Disposition::passed);
  // A low pick on the mask side lowers the floor: the sparse side now misses candidates above it.
  Results a = reference(PathKind::mask);
  const auto [layer, row] = consumer_row(b);
  plant_low_pick(b, a, layer, row);
  const Comparison bad = compare_results(b, a, PathKind::mask, reference(PathKind::sparse), PathKind::sparse);
  const LayerComparison& l = layer_of(bad, std::to_string(layer));
  CHECK(l.failed_metric == "floor");
  CHECK(value(l, "floor.miss_violations") >= 1);
  CHECK(value(l, "floor.pick_violations") == 0);
}

TEST_CASE("quality: recall of the exact dense top-k, informational") {
  const Batch& b = smoke();
  const Comparison c = compare_results(b, reference(PathKind::sparse), PathKind::sparse, reference(PathKind::exact), PathKind::exact);
  CHECK(c.rule == Rule::quality);
  CHECK(c.disposition == Disposition::passed);
  const auto [layer, row] = consumer_row(b);
  const LayerComparison& l = layer_of(c, std::to_string(layer));
  const double recall = value(l, "quality.recall.mean");
  CHECK(recall > 0.5);
  CHECK(recall <= 1.0);

  // On a row whose level one keeps every block, the exact path's picks are the exact top-k:
  // one planted pick there adds one level-two miss, a dropped block one level-one miss per
  // exact pick inside it (the other rows' misses stay as they were).
  CompareOptions quality;
  quality.rule = Rule::quality;
  const Results& exact = reference(PathKind::exact);
  const int short_row = identity_row(b);
  auto misses = [&](const Results& a) {
    const Comparison cq = compare_results(b, a, PathKind::exact, exact, PathKind::exact, quality);
    const LayerComparison& lq = layer_of(cq, std::to_string(layer));
    return std::make_pair(value(lq, "quality.misses.level_one"), value(lq, "quality.misses.level_two"));
  };
  const auto base = misses(exact);

  Results planted = exact;
  plant_low_pick(b, planted, layer, short_row);
  CHECK(misses(planted) == std::make_pair(base.first, base.second + 1));

  Results dropped = exact;
  int32_t* blocks = dropped.blocks.data() + size_t(short_row) * kTopkBlocks;
  const int32_t* picks = exact.layers.at(layer).positions.data() + size_t(short_row) * size_t(b.topk);
  const int32_t gone = picks[0] / kBlockSize;
  const long inside = std::count_if(picks, picks + b.topk, [&](int32_t p) { return p >= 0 && p / kBlockSize == gone; });
  REQUIRE(inside > 0);
  std::remove(blocks, blocks + kTopkBlocks, gone);
  blocks[kTopkBlocks - 1] = kBlockPad;
  int32_t* kept = dropped.layers.at(layer).positions.data() + size_t(short_row) * size_t(b.topk);
  std::fill(std::remove_if(kept, kept + b.topk, [&](int32_t p) { return p / kBlockSize == gone; }), kept + b.topk, kPositionPad);
  CHECK(misses(dropped) == std::make_pair(base.first + double(inside), base.second));
  (void)row;
}

TEST_CASE("quality with a shared cache: the same figures, each row's exact top-k computed once") {
  // Replay compares every implementation of a batch with reference-exact; the truth of each row
  // is the same for all of them, so one CompareCache a batch keeps it.
  const Batch& b = smoke();
  const Results& exact = reference(PathKind::exact);
  CompareCache cache(b);
  CompareOptions shared;
  shared.cache = &cache;
  for (PathKind path : {PathKind::sparse, PathKind::mask}) {
    INFO(path_name(path));
    const Comparison plain = compare_results(b, reference(path), path, exact, PathKind::exact);
    const Comparison cached = compare_results(b, reference(path), path, exact, PathKind::exact, shared);
    REQUIRE(plain.layers.size() == cached.layers.size());
    for (size_t i = 0; i < plain.layers.size(); ++i) {
      INFO("layer " << plain.layers[i].layer);
      REQUIRE(plain.layers[i].records.size() == cached.layers[i].records.size());
      for (size_t j = 0; j < plain.layers[i].records.size(); ++j) {
        INFO(plain.layers[i].records[j].name);
        CHECK(plain.layers[i].records[j].value == cached.layers[i].records[j].value);
      }
    }
  }
  int computed = 0;
  const std::vector<int32_t> first = cache.exact_topk(-1, 0, [&] { return std::vector<int32_t>{++computed}; });
  const std::vector<int32_t> again = cache.exact_topk(-1, 0, [&] { return std::vector<int32_t>{++computed}; });
  CHECK(computed == 1);
  CHECK(first == again);
  const auto [layer, row] = consumer_row(b);
  int recomputed = 0;
  cache.exact_topk(layer, row, [&] { ++recomputed; return std::vector<int32_t>{}; });
  CHECK(recomputed == 0);  // the comparisons above stored it

  const Batch other = smoke();  // equal content, another object: the cache is tied to its batch
  CHECK_THROWS_AS(compare_results(other, reference(PathKind::sparse), PathKind::sparse, exact, PathKind::exact, shared),
                  std::logic_error);
}

TEST_CASE("a dropped block and a flipped score bit fail the own-path verdict") {
  const Batch& b = smoke();
  const Results& ref = reference(PathKind::mask, true);
  const auto [layer, row] = consumer_row(b);

  Results dropped = ref;
  int32_t* blocks = dropped.blocks.data() + size_t(row) * kTopkBlocks;
  std::rotate(blocks + 1, blocks + 2, blocks + kTopkBlocks);  // drop the second block
  blocks[kTopkBlocks - 1] = kBlockPad;
  const Comparison c1 = compare_results(b, dropped, PathKind::mask, ref, PathKind::mask);
  CHECK(layer_of(c1, "blocks").failed_metric == "validity");
  CHECK(layer_of(c1, "blocks").mismatches.at(0).row == row);

  Results flipped = ref;
  std::vector<float>& scores = flipped.layers.at(layer).dense_scores.at(size_t(row));
  REQUIRE(scores.size() > 10);
  scores[10] = std::nextafter(scores[10], 1e30f);
  const Comparison c2 = compare_results(b, flipped, PathKind::mask, ref, PathKind::mask);
  const LayerComparison& l = layer_of(c2, std::to_string(layer));
  CHECK(l.failed_metric == "scores.dense");
  CHECK(value(l, "scores.dense.max_ulp") == 1);
  CHECK(l.mismatches.at(0).column == 10);
}

TEST_CASE("picks and blocks far outside the row fail validity and never reach the page table") {
  const Batch& b = smoke();
  const auto [layer, row] = consumer_row(b);
  Results a = reference(PathKind::sparse);
  a.layers.at(layer).positions[size_t(row) * size_t(b.topk) + size_t(b.topk) - 1] = 1 << 30;
  a.blocks[size_t(row) * kTopkBlocks + 1] = -5;
  for (PathKind against : {PathKind::sparse, PathKind::mask, PathKind::exact}) {
    const Comparison c = compare_results(b, a, PathKind::sparse, reference(against), against);
    CHECK(c.disposition == Disposition::incorrect);
    CHECK(layer_of(c, "blocks").failed_metric == "validity");
    CHECK(layer_of(c, std::to_string(layer)).failed_metric == "validity");
  }
}

TEST_CASE("only rows done on both sides are compared, when the run asked for those rows") {
  const Batch& b = smoke();
  Results a = reference(PathKind::sparse);
  const auto [layer, row] = consumer_row(b);
  plant_low_pick(b, a, layer, row);
  a.rows_done[size_t(row)] = 0;  // the planted row was not computed: never compared
  CompareOptions asked;          // ... because the run asked for every row but that one
  for (int r = 0; r < b.rows(); ++r)
    if (r != row) asked.rows.push_back(r);
  const Comparison c = compare_results(b, a, PathKind::sparse, reference(PathKind::sparse), PathKind::sparse, asked);
  CHECK(c.disposition == Disposition::passed);
  CHECK(layer_of(c, std::to_string(layer)).rows.size() == size_t(b.rows() - 1));
}

TEST_CASE("a row asked for that the reference did and the implementation left out is incorrect") {
  const Batch& b = smoke();
  Results a = reference(PathKind::sparse);
  a.name = "forgetful";
  const int first = 2, second = 4;
  a.rows_done[size_t(second)] = 0;
  a.rows_done[size_t(first)] = 0;
  // Every kept row is right: only the omission can fail it.
  const Comparison c = compare_results(b, a, PathKind::sparse, reference(PathKind::sparse), PathKind::sparse);
  CHECK(c.disposition == Disposition::incorrect);
  const LayerComparison& l = layer_of(c, "rows");
  CHECK(l.disposition == Disposition::incorrect);
  CHECK(l.failed_metric == "rows missing: 2 row(s) computed by reference-sparse not output by forgetful");
  REQUIRE(l.mismatches.size() == 1);
  CHECK(l.mismatches[0].row == first);
  CHECK(mismatch_text(l.layer, l.mismatches[0]) ==
        "layer rows row 2: expected row output (done by reference-sparse), got none (rows_done 0) (request " +
            std::to_string(b.row_request[first]) + ", L " + std::to_string(b.compress_len[first]) + "; 2 row(s) missing)");
  // The same under the public test, and when the run asked for exactly the omitted row.
  CHECK(compare_results(b, a, PathKind::sparse, reference(PathKind::mask), PathKind::mask).disposition == Disposition::incorrect);
  CompareOptions only;
  only.rows = {second};
  const Comparison one = compare_results(b, a, PathKind::sparse, reference(PathKind::sparse), PathKind::sparse, only);
  CHECK(one.disposition == Disposition::incorrect);
  CHECK(layer_of(one, "rows").mismatches.at(0).row == second);
  // Recorded outputs hold the rows the engine captured: fewer rows is no omission.
  Results capture = a;
  capture.name = "recorded:engine";
  CHECK(compare_results(b, capture, PathKind::sparse, reference(PathKind::sparse), PathKind::sparse).disposition ==
        Disposition::passed);
  // An implementation that output nothing at all is incorrect, never "not run".
  std::fill(a.rows_done.begin(), a.rows_done.end(), uint8_t(0));
  CHECK(compare_results(b, a, PathKind::sparse, reference(PathKind::sparse), PathKind::sparse).disposition ==
        Disposition::incorrect);
}

TEST_CASE("an output the reference recorded and the implementation did not is incorrect, not 'not run'") {
  const Batch& b = smoke();
  const Results& ref = reference(PathKind::sparse);
  const int last = b.layers.back().id;
  for (PathKind against : {PathKind::sparse, PathKind::mask, PathKind::exact}) {
    INFO("against " << path_name(against));
    Results missing = ref;
    missing.name = "forgetful";
    missing.layers.erase(last);
    const Comparison m = compare_results(b, missing, PathKind::sparse, reference(against), against);
    CHECK(m.disposition == Disposition::incorrect);
    const LayerComparison& l = layer_of(m, std::to_string(last));
    CHECK(l.disposition == Disposition::incorrect);
    CHECK(l.failed_metric == "layer " + std::to_string(last) + " missing: no picks in forgetful");
  }
  Results no_blocks = ref;
  no_blocks.blocks.clear();
  const Comparison nb = compare_results(b, no_blocks, PathKind::sparse, ref, PathKind::sparse);
  CHECK(layer_of(nb, "blocks").disposition == Disposition::incorrect);
  CHECK(nb.disposition == Disposition::incorrect);

  // The other way round (the implementation recorded a layer the reference side lacks) there is
  // nothing to compare with: not run, and the other layers decide.
  Results partial = ref;
  partial.layers.erase(last);
  const Comparison extra = compare_results(b, ref, PathKind::sparse, partial, PathKind::sparse);
  CHECK(layer_of(extra, std::to_string(last)).disposition == Disposition::not_run);
  CHECK(extra.disposition == Disposition::passed);
}

TEST_CASE("a consumer without its tail table is incorrect") {
  const Batch& b = smoke();
  REQUIRE(b.total_tail_rows > 0);
  const int consumer = b.layers_with(Role::consumer).at(0)->id;
  Results no_tails = reference(PathKind::sparse);
  no_tails.layers.at(consumer).tail_positions.clear();
  const Comparison c = compare_results(b, no_tails, PathKind::sparse, reference(PathKind::sparse), PathKind::sparse);
  CHECK(layer_of(c, std::to_string(consumer) + "/tail").disposition == Disposition::incorrect);
  CHECK(c.disposition == Disposition::incorrect);
}

TEST_CASE("public agreement inside compare: 487 of 512 picks pass, 486 fail") {
  // The mask reference against itself under the public test's rule, with a tolerance so wide
  // that the floor never judges: only the per-row agreement threshold decides.
  const Batch& b = smoke();
  REQUIRE(b.topk == 512);
  const Results& mask = reference(PathKind::mask);
  const auto [layer, row] = consumer_row(b);
  CompareOptions wide;
  wide.rule = Rule::public_test;
  wide.tolerance = 1e9;
  auto with_changed = [&](int changed) {
    Results a = mask;
    plant_picks(b, a, layer, row, changed);
    return layer_of(compare_results(b, a, PathKind::sparse, mask, PathKind::mask, wide), std::to_string(layer));
  };
  const LayerComparison pass = with_changed(25);  // 487/512 = 0.9512
  CHECK(value(pass, "agreement.min") == Approx(487.0 / 512));
  CHECK(pass.disposition == Disposition::passed);
  const LayerComparison fail = with_changed(26);  // 486/512 = 0.9492
  CHECK(value(fail, "agreement.min") == Approx(486.0 / 512));
  CHECK(fail.disposition == Disposition::incorrect);
  CHECK(fail.failed_metric == "agreement");
}

TEST_CASE("bitwise scores: a missing or truncated row fails, +0 against -0 is only counted") {
  const Batch& b = smoke();
  const auto [layer, row] = consumer_row(b);
  // Dense scores from the mask path, sparse (bf16) scores from the sparse path.
  auto judged = [&](const Results& a, PathKind path) {
    return layer_of(compare_results(b, a, path, reference(path, true), path), std::to_string(layer));
  };
  for (PathKind path : {PathKind::mask, PathKind::sparse}) {
    const bool dense = path == PathKind::mask;
    INFO((dense ? "dense" : "sparse") << " scores");
    Results truncated = reference(path, true), missing = reference(path, true);
    if (dense) {
      REQUIRE(!truncated.layers.at(layer).dense_scores.at(size_t(row)).empty());
      truncated.layers.at(layer).dense_scores.at(size_t(row)).pop_back();
      missing.layers.at(layer).dense_scores.at(size_t(row)).clear();
    } else {
      REQUIRE(!truncated.layers.at(layer).sparse_scores.at(size_t(row)).empty());
      truncated.layers.at(layer).sparse_scores.at(size_t(row)).pop_back();
      missing.layers.at(layer).sparse_scores.at(size_t(row)).clear();
    }
    const std::string metric = dense ? "scores.dense" : "scores.sparse";
    for (const Results* a : {&truncated, &missing}) {
      const LayerComparison l = judged(*a, path);
      CHECK(l.disposition == Disposition::incorrect);
      CHECK(l.failed_metric == metric);
      CHECK(value(l, metric + ".missing_rows") == 1);
      REQUIRE(!l.mismatches.empty());
      CHECK(l.mismatches[0].row == row);
    }
  }
  // A zero of the other sign: same value, other bits. Reported, not judged (docs/rules.md).
  Results positive = reference(PathKind::mask, true), negative = positive;
  positive.layers.at(layer).dense_scores.at(size_t(row)).at(3) = 0.0f;
  negative.layers.at(layer).dense_scores.at(size_t(row)).at(3) = -0.0f;
  const Comparison zc = compare_results(b, negative, PathKind::mask, positive, PathKind::mask);
  const LayerComparison& z = layer_of(zc, std::to_string(layer));
  CHECK(z.disposition == Disposition::passed);
  CHECK(value(z, "scores.dense.zero_sign_differences") == 1);
}

namespace {
int exit_status(const std::string& command) {
  const int rc = std::system((command + " > /dev/null 2>&1").c_str());
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}
}  // namespace

TEST_CASE("CLI: run writes a result file compare accepts; exit 0 passed, 1 planted failure, 4 unknown group") {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("dsa-compare-test-" + std::to_string(getpid()));
  fs::create_directories(dir);
  const std::string batch = (dir / "smoke.h5").string(), results = (dir / "smoke.results.h5").string();
  write_batch(batch, smoke());
  const std::string bin = DSA_BINARY;
  REQUIRE(exit_status(bin + " run " + batch + " --impl reference-sparse,reference-mask --rows 3 --seed 1 -o " + results) == 0);
  const std::string cmp = bin + " compare " + batch + " " + results;
  CHECK(exit_status(cmp + " --impl reference-sparse --against reference-mask") == 0);
  CHECK(exit_status(cmp + " --impl reference-mask --against reference-mask") == 0);
  CHECK(exit_status(cmp + " --impl gpu-sparse --against reference-sparse") == 4);
  // An implementation this machine cannot run is an environment error, before anything runs.
  // Decided at run time: CI builds the CUDA code (it has nvcc) and has no GPU.
  if (!gpu::unavailable_reason().empty())
    CHECK(exit_status(bin + " run " + batch + " --impl reference-sparse,gpu-sparse --rows 3 -o " + results) == 4);
  CHECK(exit_status(bin + " run " + batch + " --impl reference-sparse --rows 1,99999 -o " + results) == 4);

  // Plant one wrong pick in a row that was run, write the file back, compare again.
  const Batch& b = smoke();
  std::vector<Results> read = read_results(results, b);
  REQUIRE(read.size() == 2);
  Results& sparse = read[1].name == "reference-sparse" ? read[1] : read[0];
  const auto [layer, row] = consumer_row(b);
  REQUIRE(sparse.rows_done[size_t(row)] == 1);  // the longest row is always drawn
  plant_low_pick(b, sparse, layer, row);
  const std::string planted = (dir / "planted.results.h5").string();
  write_results(planted, b, read);
  const std::string cmp2 = bin + " compare " + batch + " " + planted;
  CHECK(exit_status(cmp2 + " --impl reference-sparse --against reference-mask") == 1);
  CHECK(exit_status(cmp2 + " --impl reference-mask --against reference-mask") == 0);

  // A subset run against a full one: passes when compare is told the rows it was run with,
  // fails when it is not (the rows it left out are missing).
  const std::string mixed = (dir / "mixed.results.h5").string();
  REQUIRE(exit_status(bin + " run " + batch + " --impl reference-sparse --rows 1,2 -o " + mixed) == 0);
  std::vector<Results> both = read_results(mixed, b);
  Results full = reference(PathKind::mask);
  both.push_back(full);
  write_results(mixed, b, both);
  const std::string cmp3 = bin + " compare " + batch + " " + mixed + " --impl reference-sparse --against reference-mask";
  CHECK(exit_status(cmp3 + " --rows 1,2") == 0);
  CHECK(exit_status(cmp3) == 1);
  CHECK(exit_status(cmp3 + " --rows ''") == 4);
  fs::remove_all(dir);
}
