// Worst rows (harness/replay/cases.cpp): the ranks shown around the k-th score are the reference
// order (larger score first, then the smaller position), placed without sorting the whole row.
#include <algorithm>
#include <numeric>
#include <vector>

#include "harness/batch/batch_io.hpp"
#include "harness/impls/reference_views.hpp"
#include "harness/replay/cases.hpp"
#include "reference/scores.hpp"
#include "tests/catch.hpp"
#include "tests/harness/replay/replay_fixture.hpp"

using namespace dsa;

namespace {

// A case with one failing row figure on `layer`, so that add_worst_rows draws that row.
CaseResult case_of(const Layer& layer, int row, int length) {
  RowFigure f;
  f.row = row;
  f.length = length;
  f.agreement = 0.5;
  LayerComparison part;
  part.layer = std::to_string(layer.id);
  part.rows = {f};
  CaseResult c;
  c.layer = part.layer;
  c.comparisons = {{Rule::public_test, "reference-mask", {part}}};
  return c;
}

}  // namespace

TEST_CASE("worst rows: the ranks around the k-th equal a full stable sort of the row, ties included") {
  const Batch batch = read_batch(test::kFixtures + "/edge.h5");
  int rows = 0, tied = 0;
  for (const Layer& layer : batch.layers) {
    for (int r = 0; r < batch.rows(); ++r) {
      const int L = batch.compress_len[size_t(r)];
      if (L <= batch.topk + 3) continue;
      std::vector<float> s(static_cast<size_t>(L));
      ref::dense_scores_row(query_of(layer, r), keys_of(batch, r), L, s.data());
      std::vector<int> order(static_cast<size_t>(L));
      std::iota(order.begin(), order.end(), 0);
      std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return s[size_t(a)] > s[size_t(b)]; });

      CaseResult c = case_of(layer, r, L);
      add_worst_rows(c, batch);
      REQUIRE(c.worst.size() == 1);
      const WorstRow& w = c.worst[0];
      INFO("layer " << layer.id << " row " << r << " (L " << L << ")");
      CHECK(w.kth_score == s[size_t(order[size_t(batch.topk - 1)])]);
      REQUIRE(w.around_kth.size() == 7);
      for (int i = 0; i < 7; ++i) {
        const int rank = batch.topk - 4 + i;
        CHECK(w.around_kth[size_t(i)].position == order[size_t(rank)]);
        if (i > 0 && s[size_t(order[size_t(rank)])] == s[size_t(order[size_t(rank - 1)])]) ++tied;
      }
      ++rows;
    }
  }
  CHECK(rows > 0);
  CHECK(tied > 0);  // the edge fixture's repeated keys put equal scores inside the window
}
