// The reference implementations end to end: a tiny batch worked out by hand, the edge presets,
// properties on generated batches (validity, tie rule, sampled rows, tails) and invalid input.
#include <algorithm>
#include <cstring>
#include <set>
#include <string>

#include "core/errors.hpp"
#include "harness/generate/generate.hpp"
#include "harness/impls/reference.hpp"
#include "reference/formats.hpp"
#include "reference/selection.hpp"
#include "tests/catch.hpp"

using namespace dsa;

namespace {

// ---- the hand-worked batch ----
// Page size 8, all scales 1 (E = 127), top-k 2 so that selections are visible on a few keys.
// Request 0: lc 10, rows 0 (L 10) and 1 (L 3, the tail row); pages in reverse order.
// Request 1: lc 16392 (2049 blocks, one must go), row 2 (L 16392).
// Keys are zero except dims 0 and 1 (values below); q of the source: head 0 dim 0 = 1,
// head 1 dim 1 = 2, weights w0 = 1, w1 = -0.5; the consumer: head 0 dim 0 = -1, head 2 dim 1 = 1,
// weights 1 and 1. All other heads have zero q and zero weight.
//   source   dense(p) = max(k0, 0) - 0.5 * max(2 * k1, 0)
//   consumer dense(p) = max(-k0, 0) + max(k1, 0)
// Request 0:  p   k0    k1    source  consumer
//             0   1     0     1       0
//             1   3     0     3       0
//             2   0     2     -2      2
//             3   -2    0     0       2
//             4   0     0     0       0
//             5   6     6     0       6
//             6   0.5   0     0.5     0
//             7   0     -1    0       0
//             8   2     0     2       0
//             9   4     0.5   3.5     0.5
// Row 0 (L 10): source top-2 {1 (3), 9 (3.5)}; 2 blocks, both kept, valid_len 10;
//               consumer top-2 {5 (6), 2 (2, ties 3: smaller position)}.
// Row 1 (L 3):  source {0 (1), 1 (3)}; block 0, valid_len 3; consumer {2 (2), 0 (0, ties 1)}.
// Request 1: k0 = 6 at p 100 (source 6); k1 = 1 at p 56..63 (block 7: source -1, consumer 1);
//            k1 = 0.5 at p 200 (source -0.5, consumer 0.5); k1 = 2 at p 16391 (consumer 2).
// Row 2: block keys are 0 except block 12 (6), block 7 (-1) and the newest 2048 (+inf): block 7
//        is dropped; valid_len 8 * 2047 + 8 = 16384. Source top-2 {100 (6), 0 (0, smallest)}.
//        Consumer: positions 56..63 would score 1 but are not published: picks {200, 16391}.
constexpr int kHandPage = 8;

void set_code(Batch& b, int request, int pos, int dim, uint8_t code) {
  const int64_t page = b.page_table[size_t(request) * size_t(b.table_width) + size_t(pos / kHandPage)];
  uint8_t* slot = b.pool.data() + page * kHandPage * kSlotBytes + (pos % kHandPage) * kPackedDim;
  slot[dim / 2] = uint8_t(slot[dim / 2] | (code << (dim % 2 ? 4 : 0)));
}

void set_q(Layer& layer, int row, int head, int dim, uint8_t code, float weight) {
  layer.q[(size_t(row) * kHeads + size_t(head)) * kPackedDim + size_t(dim / 2)] |= uint8_t(code << (dim % 2 ? 4 : 0));
  layer.weights[size_t(row) * kHeads + size_t(head)] = weight;
}

Batch hand_batch() {
  Batch b;
  b.topk = 2;
  b.page_size = kHandPage;
  b.source_layer = 20;
  b.num_rows = {2, 1};
  b.compressed_len = {10, 16392};
  b.tail_rows = {1, 0};
  b.compress_len = {10, 3, 16392};
  b.table_width = 16392 / kHandPage;
  b.page_table.assign(size_t(2 * b.table_width), -1);
  b.page_table[0] = 1;
  b.page_table[1] = 0;
  for (int i = 0; i < b.table_width; ++i) b.page_table[size_t(b.table_width + i)] = 2 + i;
  b.pages = 2 + b.table_width;
  b.pool.assign(size_t(b.pages) * kHandPage * kSlotBytes, 0);
  for (int64_t page = 0; page < b.pages; ++page)  // every scale byte 127 (scale 1)
    std::memset(b.pool.data() + page * kHandPage * kSlotBytes + kHandPage * kPackedDim, 127, kHandPage * kScaleGroups);
  // Request 0 keys (codes: 1 -> 0.5, 2 -> 1, 4 -> 2, 5 -> 3, 6 -> 4, 7 -> 6, 8|c negative).
  const uint8_t k0[10] = {2, 5, 0, 8 | 4, 0, 7, 1, 0, 4, 6};
  const uint8_t k1[10] = {0, 0, 4, 0, 0, 7, 0, 8 | 2, 0, 1};
  for (int p = 0; p < 10; ++p) { set_code(b, 0, p, 0, k0[p]); set_code(b, 0, p, 1, k1[p]); }
  set_code(b, 1, 100, 0, 7);
  for (int p = 56; p < 64; ++p) set_code(b, 1, p, 1, 2);
  set_code(b, 1, 200, 1, 1);
  set_code(b, 1, 16391, 1, 4);
  for (int id : {20, 24}) {
    Layer layer;
    layer.id = id;
    layer.role = id == 20 ? Role::source : Role::consumer;
    layer.q.assign(size_t(3) * kHeads * kPackedDim, 0);
    layer.q_scale.assign(size_t(3) * kHeads * kScaleGroups, 127);
    layer.weights.assign(size_t(3) * kHeads, 0.0f);
    for (int r = 0; r < 3; ++r) {
      if (id == 20) { set_q(layer, r, 0, 0, 2, 1.0f); set_q(layer, r, 1, 1, 4, -0.5f); }
      else { set_q(layer, r, 0, 0, 8 | 2, 1.0f); set_q(layer, r, 2, 1, 2, 1.0f); }
    }
    b.layers.push_back(std::move(layer));
  }
  b.finalize();
  return b;
}

std::vector<int32_t> row_of(const std::vector<int32_t>& v, int r, int width) {
  return std::vector<int32_t>(v.begin() + long(r) * width, v.begin() + long(r + 1) * width);
}

Results run_reference(PathKind path, const Batch& batch, std::vector<int> rows = {}, bool scores = false) {
  RunOptions options;
  options.rows = std::move(rows);
  options.scores = scores;
  return make_reference(path)->run(batch, options);
}

Batch generated(const std::string& preset, uint64_t seed) {
  GenerateOptions o;
  o.preset = preset;
  o.seed = seed;
  return generate_batch(o);
}

// Validity of one result set (docs/metrics.md, validity) on every computed row.
void check_valid(const Batch& b, const Results& res) {
  const int k = b.topk;
  for (int r = 0; r < b.rows(); ++r) {
    if (!res.rows_done[size_t(r)]) continue;
    const int64_t L = b.compress_len[size_t(r)];
    const int64_t nblocks = ref::block_count(L);
    std::set<int32_t> published;
    if (!res.blocks.empty()) {
      const std::vector<int32_t> blocks = row_of(res.blocks, r, kTopkBlocks);
      const int64_t kept = std::min<int64_t>(kTopkBlocks, nblocks);
      for (int64_t i = 0; i < kTopkBlocks; ++i) {
        if (i < kept) {
          REQUIRE(blocks[size_t(i)] >= 0);
          REQUIRE(blocks[size_t(i)] < nblocks);
          if (i > 0) REQUIRE(blocks[size_t(i)] > blocks[size_t(i - 1)]);
          published.insert(blocks[size_t(i)]);
        } else {
          REQUIRE(blocks[size_t(i)] == kBlockPad);
        }
      }
      if (L > 0) REQUIRE(published.count(int32_t(nblocks - 1)) == 1);  // newest block kept
    }
    for (const auto& [id, lr] : res.layers) {
      const std::vector<int32_t> picks = row_of(lr.positions, r, k);
      const int64_t count = std::min<int64_t>(k, L);
      for (int i = 0; i < k; ++i) {
        if (i < count) {
          REQUIRE(picks[size_t(i)] >= 0);
          REQUIRE(picks[size_t(i)] < L);
          if (i > 0) REQUIRE(picks[size_t(i)] > picks[size_t(i - 1)]);
          if (b.layer(id)->role == Role::consumer) REQUIRE(published.count(picks[size_t(i)] / kBlockSize) == 1);
        } else {
          REQUIRE(picks[size_t(i)] == kPositionPad);
        }
      }
    }
  }
}

// The reference tie rule, checked directly: every pick beats every unpicked candidate
// (larger score, or equal score and smaller position).
template <class Score>
void check_tie_rule(const std::vector<int32_t>& picks, const std::vector<int32_t>& candidates, Score score) {
  std::set<int32_t> picked;
  for (int32_t p : picks)
    if (p >= 0) picked.insert(p);
  float worst = std::numeric_limits<float>::infinity();
  int32_t worst_pos = -1;
  for (int32_t p : picked)
    if (score(p) < worst || (score(p) == worst && p > worst_pos)) { worst = score(p); worst_pos = p; }
  for (int32_t c : candidates) {
    if (picked.count(c)) continue;
    const float s = score(c);
    REQUIRE((s < worst || (s == worst && c > worst_pos)));
  }
}

}  // namespace

TEST_CASE("hand-worked batch: blocks, source and consumer picks, tails, scores") {
  const Batch b = hand_batch();
  for (PathKind path : {PathKind::sparse, PathKind::mask, PathKind::exact}) {
    INFO(path_name(path));
    const Results res = run_reference(path, b, {}, true);
    CHECK(res.name == reference_for(path));
    CHECK(res.rows_done == std::vector<uint8_t>{1, 1, 1});
    const std::vector<int32_t> b0 = row_of(res.blocks, 0, kTopkBlocks);
    CHECK(b0[0] == 0);
    CHECK(b0[1] == 1);
    CHECK(b0[2] == kBlockPad);
    CHECK(row_of(res.blocks, 1, kTopkBlocks)[1] == kBlockPad);
    const std::vector<int32_t> b2 = row_of(res.blocks, 2, kTopkBlocks);
    CHECK(b2[6] == 6);
    CHECK(b2[7] == 8);  // block 7 dropped
    CHECK(b2[2047] == 2048);
    const LayerResult& src = res.layers.at(20);
    CHECK(src.positions == std::vector<int32_t>{1, 9, 0, 1, 0, 100});
    const LayerResult& con = res.layers.at(24);
    CHECK(con.positions == std::vector<int32_t>{2, 5, 0, 2, 200, 16391});
    CHECK(con.tail_positions == std::vector<int32_t>{0, 2});
    if (path == PathKind::exact) {
      CHECK(src.dense_scores.empty());
      CHECK(con.sparse_scores.empty());
      continue;
    }
    REQUIRE(src.dense_scores.size() == 3);
    CHECK(src.dense_scores[0] == std::vector<float>{1, 3, -2, 0, 0, 0, 0.5f, 0, 2, 3.5f});
    CHECK(src.dense_scores[1] == std::vector<float>{1, 3, -2});
    CHECK(src.dense_scores[2].size() == 16392);
    CHECK(src.dense_scores[2][60] == -1.0f);
    if (path == PathKind::mask) {
      CHECK(con.dense_scores[0] == std::vector<float>{0, 0, 2, 2, 0, 6, 0, 0, 0, 0.5f});
      CHECK(con.dense_scores[2][60] == 1.0f);  // scored, though outside the published blocks
      CHECK(con.sparse_scores.empty());
    } else {
      std::vector<uint16_t> want;
      for (float x : {0.0f, 0.0f, 2.0f, 2.0f, 0.0f, 6.0f, 0.0f, 0.0f, 0.0f, 0.5f}) want.push_back(ref::bf16_rne(x));
      CHECK(con.sparse_scores[0] == want);
      CHECK(con.sparse_scores[2].size() == 16384);  // valid_len candidate columns
      CHECK(con.sparse_scores[2][56] == ref::bf16_rne(0.0f));  // column 56 is position 64
    }
  }
}

TEST_CASE("hand-worked batch: rows not asked for are not computed") {
  const Batch b = hand_batch();
  const Results res = run_reference(PathKind::sparse, b, {1});
  CHECK(res.rows_done == std::vector<uint8_t>{0, 1, 0});
  CHECK(row_of(res.layers.at(20).positions, 0, 2) == std::vector<int32_t>{-1, -1});
  CHECK(row_of(res.layers.at(20).positions, 1, 2) == std::vector<int32_t>{0, 1});
  CHECK(row_of(res.blocks, 2, kTopkBlocks)[0] == kBlockPad);
  CHECK(res.layers.at(24).tail_positions == std::vector<int32_t>{0, 2});
  const Results none = run_reference(PathKind::sparse, b, {0});
  CHECK(none.layers.at(24).tail_positions == std::vector<int32_t>{-1, -1});
}

TEST_CASE("an overflowing score is invalid input naming the layer dataset and row") {
  Batch b = hand_batch();
  // Row 2's source head 0 at scale 2^127 against key scale 2^127: 6 * 2^254 overflows.
  b.layers[0].q_scale[(size_t(2) * kHeads + 0) * kScaleGroups + 0] = 254;
  const int64_t page = b.page_table[size_t(b.table_width) + 100 / kHandPage];
  b.pool[size_t(page * kHandPage * kSlotBytes + kHandPage * kPackedDim + (100 % kHandPage) * kScaleGroups)] = 254;
  try {
    run_reference(PathKind::mask, b);
    FAIL("no error");
  } catch (const InputError& e) {
    CHECK(e.dataset() == "/layers/20/q");
    CHECK(std::string(e.rule()).find("row 2") != std::string::npos);
    CHECK(std::string(e.rule()).find("position 100") != std::string::npos);
  }
  // Rows that do not see the bad key are fine.
  CHECK_NOTHROW(run_reference(PathKind::mask, b, {0, 1}));
}

TEST_CASE("edge preset: every edge case of docs/semantics.md") {
  const Batch b = generated("edge", 1);
  const Results sparse = run_reference(PathKind::sparse, b, {}, true);
  const Results mask = run_reference(PathKind::mask, b, {}, true);
  const Results exact = run_reference(PathKind::exact, b);
  for (const Results* res : {&sparse, &mask, &exact}) check_valid(b, *res);
  // Both production paths hold the same blocks and source picks.
  CHECK(sparse.blocks == mask.blocks);
  CHECK(sparse.layers.at(20).positions == mask.layers.at(20).positions);
  int zero = 0, short_rows = 0, boundary = 0, repeated = 0;
  for (int r = 0; r < b.rows(); ++r) {
    const int64_t L = b.compress_len[size_t(r)];
    const std::vector<int32_t> blocks = row_of(sparse.blocks, r, kTopkBlocks);
    for (const auto& [id, lr] : sparse.layers) {
      const std::vector<int32_t> picks = row_of(lr.positions, r, b.topk);
      if (L == 0) {
        CHECK(picks == std::vector<int32_t>(size_t(b.topk), -1));
        CHECK(blocks == std::vector<int32_t>(kTopkBlocks, kBlockPad));
      } else if (L <= b.topk) {
        for (int64_t p = 0; p < L; ++p) CHECK(picks[size_t(p)] == p);  // all positions
      }
    }
    zero += L == 0;
    short_rows += L > 0 && L <= b.topk;
    if (L == 16385) {
      ++boundary;
      CHECK(blocks[2047] == 2048);  // exactly 2048 blocks, the newest kept
      CHECK(std::count(blocks.begin(), blocks.end(), kBlockPad) == 0);
    }
    if (L == 16384) CHECK(blocks[2047] == 2047);
    // Request 1 (four repeating key vectors): every full block ties, so the smaller ids win.
    if (b.row_request[size_t(r)] == 1 && L >= 16393) {
      ++repeated;
      const int64_t nblocks = ref::block_count(L);
      for (int i = 0; i < 2047; ++i) CHECK(blocks[size_t(i)] == i);
      CHECK(blocks[2047] == nblocks - 1);
    }
    // The tie rule on recorded scores: source over [0, L); sparse consumers over candidates.
    if (L > 0) {
      const std::vector<float>& dense = sparse.layers.at(20).dense_scores[size_t(r)];
      std::vector<int32_t> all(static_cast<size_t>(L));
      for (int64_t p = 0; p < L; ++p) all[size_t(p)] = int32_t(p);
      check_tie_rule(row_of(sparse.layers.at(20).positions, r, b.topk), all, [&](int32_t p) { return dense[size_t(p)]; });
      ref::LevelOne l1;
      for (int32_t x : blocks)
        if (x != kBlockPad) l1.blocks.push_back(x);
      l1.valid_len = ref::valid_len_of(int64_t(l1.blocks.size()), L);
      const std::vector<int32_t> cand = ref::candidate_positions(l1);
      const std::vector<uint16_t>& sp = sparse.layers.at(24).sparse_scores[size_t(r)];
      REQUIRE(int64_t(sp.size()) == l1.valid_len);
      std::vector<float> by_position(static_cast<size_t>(L), 0.0f);
      for (size_t c = 0; c < cand.size(); ++c) by_position[size_t(cand[c])] = ref::bf16_to_float(sp[c]);
      check_tie_rule(row_of(sparse.layers.at(24).positions, r, b.topk), cand,
                     [&](int32_t p) { return by_position[size_t(p)]; });
      const std::vector<float>& md = mask.layers.at(24).dense_scores[size_t(r)];
      REQUIRE(int64_t(md.size()) == L);
      check_tie_rule(row_of(mask.layers.at(24).positions, r, b.topk), cand, [&](int32_t p) { return md[size_t(p)]; });
    }
  }
  CHECK(zero >= 3);
  CHECK(short_rows >= 6);
  CHECK(boundary == 1);
  CHECK(repeated == 2);
  // Tails: the tail picks equal the full-table picks of the same rows.
  for (const Results* res : {&sparse, &mask, &exact})
    for (int id : {24, 28, 32, 36}) {
      const LayerResult& lr = res->layers.at(id);
      REQUIRE(int64_t(lr.tail_positions.size()) == b.total_tail_rows * b.topk);
      for (int r = 0; r < b.rows(); ++r) {
        const int64_t t = b.tail_index(r);
        if (t >= 0) CHECK(row_of(lr.tail_positions, int(t), b.topk) == row_of(lr.positions, r, b.topk));
      }
    }
}

TEST_CASE("edge-r2 preset: plain layers pick all positions up to k, a real top-k beyond") {
  const Batch b = generated("edge-r2", 1);
  REQUIRE(b.source() == nullptr);
  const Results res = run_reference(PathKind::mask, b, {}, true);
  const Results exact = run_reference(PathKind::exact, b);
  check_valid(b, res);
  check_valid(b, exact);
  CHECK(res.blocks.empty());
  for (int id : {2, 8, 14}) {
    const LayerResult& lr = res.layers.at(id);
    for (int r = 0; r < b.rows(); ++r) {
      const int64_t L = b.compress_len[size_t(r)];
      const std::vector<int32_t> picks = row_of(lr.positions, r, b.topk);
      if (L <= b.topk) {
        for (int64_t p = 0; p < L; ++p) CHECK(picks[size_t(p)] == p);
        continue;
      }
      std::vector<int32_t> all(static_cast<size_t>(L));
      for (int64_t p = 0; p < L; ++p) all[size_t(p)] = int32_t(p);
      const std::vector<float>& dense = lr.dense_scores[size_t(r)];
      check_tie_rule(picks, all, [&](int32_t p) { return dense[size_t(p)]; });
    }
  }
}

TEST_CASE("sampled rows equal the full run on those rows, on every path") {
  const Batch b = generated("smoke", 2);
  const std::vector<int> rows = {0, 3, b.rows() - 1};
  for (PathKind path : {PathKind::sparse, PathKind::mask, PathKind::exact}) {
    INFO(path_name(path));
    const Results full = run_reference(path, b);
    const Results part = run_reference(path, b, rows);
    check_valid(b, full);
    check_valid(b, part);
    for (int r = 0; r < b.rows(); ++r) {
      const bool in = std::find(rows.begin(), rows.end(), r) != rows.end();
      CHECK(part.rows_done[size_t(r)] == uint8_t(in));
      const std::vector<int32_t> blocks = row_of(part.blocks, r, kTopkBlocks);
      if (in) CHECK(blocks == row_of(full.blocks, r, kTopkBlocks));
      else CHECK(blocks == std::vector<int32_t>(kTopkBlocks, kBlockPad));
      for (const auto& [id, lr] : part.layers) {
        const std::vector<int32_t> picks = row_of(lr.positions, r, b.topk);
        if (in) CHECK(picks == row_of(full.layers.at(id).positions, r, b.topk));
        else CHECK(picks == std::vector<int32_t>(size_t(b.topk), -1));
      }
    }
  }
}

TEST_CASE("runs are deterministic and the paths agree where they must") {
  const Batch b = generated("smoke", 3);
  const Results a = run_reference(PathKind::sparse, b, {}, true);
  const Results again = run_reference(PathKind::sparse, b, {}, true);
  CHECK(a.blocks == again.blocks);
  for (const auto& [id, lr] : a.layers) {
    CHECK(lr.positions == again.layers.at(id).positions);
    CHECK(lr.dense_scores == again.layers.at(id).dense_scores);
    CHECK(lr.sparse_scores == again.layers.at(id).sparse_scores);
  }
  const Results mask = run_reference(PathKind::mask, b);
  CHECK(mask.blocks == a.blocks);
  CHECK(mask.layers.at(20).positions == a.layers.at(20).positions);
  // Timings name the stages.
  bool dense_stage = false;
  for (const KernelTiming& t : a.timings) dense_stage |= t.kernel == "reference-sparse/dense_scores";
  CHECK(dense_stage);
  // Count picks: min(k, L) per row and layer (the smoke batch has a row beyond 16384 positions,
  // where the count is k, not the candidates' 16384).
  CHECK(b.max_len() > 16384);
  for (const auto& [id, lr] : a.layers)
    for (int r = 0; r < b.rows(); ++r) {
      const std::vector<int32_t> picks = row_of(lr.positions, r, b.topk);
      INFO("layer " << id << " row " << r);
      CHECK(std::count_if(picks.begin(), picks.end(), [](int32_t p) { return p >= 0; }) ==
            std::min(b.topk, b.compress_len[size_t(r)]));
    }
}
