// Google Benchmark of the CPU reference's hot loops, single thread: dense row scores
// (positions/s, one row and a group of rows sharing keys), source top-k, block amax (level one's
// block keys) alone, level one, and level two per path (16384 candidates). Keys and queries are
// random with production-like scales.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <random>
#include <vector>

#include "reference/scores.hpp"
#include "reference/selection.hpp"

using namespace dsa;
using namespace dsa::ref;

namespace {

constexpr int kContext = 262144;
constexpr int kPage = 128;

struct Data {
  std::vector<uint8_t> pool;
  std::vector<int32_t> table;
  KeyView keys;
  std::vector<std::vector<uint8_t>> q, qs;
  std::vector<std::vector<float>> w;
  std::vector<QueryRow> rows;
  std::vector<float> dense;  // dense scores of row 0 over the whole context
  LevelOne l1;               // its level one

  Data() {
    std::mt19937 rng(1);
    std::uniform_int_distribution<int> byte(0, 255), scale(122, 128), weight(-64, 64);
    const int pages = kContext / kPage;
    pool.resize(size_t(pages) * kPage * kSlotBytes);
    for (auto& b : pool) b = uint8_t(byte(rng));
    for (int p = 0; p < pages; ++p) table.push_back((p * 7919) % pages);  // scattered pages
    keys = KeyView{pool.data(), kPage, table.data()};
    for (int p = 0; p < kContext; ++p)
      for (int g = 0; g < 4; ++g) const_cast<uint8_t*>(keys.scale(p))[g] = uint8_t(scale(rng));
    for (int r = 0; r < 8; ++r) {
      q.emplace_back(kHeads * kPackedDim);
      qs.emplace_back(kHeads * kScaleGroups);
      w.emplace_back(kHeads);
      for (auto& b : q.back()) b = uint8_t(byte(rng));
      for (auto& b : qs.back()) b = uint8_t(scale(rng));
      for (auto& x : w.back()) x = float(weight(rng)) / 64.0f;
    }
    for (int r = 0; r < 8; ++r) rows.push_back(QueryRow{q[size_t(r)].data(), qs[size_t(r)].data(), w[size_t(r)].data()});
    dense.resize(kContext);
    dense_scores_row(rows[0], keys, kContext, dense.data());
    l1 = level_one(dense.data(), kContext);
  }
};

const Data& data() {
  static const Data d;
  return d;
}

void BM_dense_row(benchmark::State& state) {
  const Data& d = data();
  const int64_t L = state.range(0);
  std::vector<float> out(static_cast<size_t>(L));
  for (auto _ : state) {
    dense_scores_row(d.rows[0], d.keys, L, out.data());
    benchmark::DoNotOptimize(out.data());
  }
  state.SetItemsProcessed(state.iterations() * L);  // positions of one row
}
BENCHMARK(BM_dense_row)->Arg(16384)->Arg(kContext)->Unit(benchmark::kMillisecond);

void BM_dense_rows_grouped(benchmark::State& state) {
  const Data& d = data();
  const int n = int(state.range(0));
  const int64_t L = 65536;
  std::vector<std::vector<float>> outs(size_t(n), std::vector<float>(static_cast<size_t>(L)));
  std::vector<float*> ptrs;
  for (auto& o : outs) ptrs.push_back(o.data());
  std::vector<int64_t> lens(size_t(n), L);
  for (auto _ : state) {
    dense_scores_rows(d.rows.data(), n, d.keys, lens.data(), ptrs.data());
    benchmark::DoNotOptimize(ptrs.data());
  }
  state.SetItemsProcessed(state.iterations() * L * n);  // row-positions
}
BENCHMARK(BM_dense_rows_grouped)->Arg(1)->Arg(4)->Arg(8)->Unit(benchmark::kMillisecond);

void BM_dense_row_scalar(benchmark::State& state) {
  const Data& d = data();
  const int64_t L = 2048;
  std::vector<float> out(static_cast<size_t>(L));
  for (auto _ : state) {
    dense_scores_row_scalar(d.rows[0], d.keys, L, out.data());
    benchmark::DoNotOptimize(out.data());
  }
  state.SetItemsProcessed(state.iterations() * L);
}
BENCHMARK(BM_dense_row_scalar)->Unit(benchmark::kMillisecond);

void BM_source_topk(benchmark::State& state) {
  const Data& d = data();
  for (auto _ : state) benchmark::DoNotOptimize(source_topk(d.dense.data(), kContext, 512));
  state.SetItemsProcessed(state.iterations() * kContext);
}
BENCHMARK(BM_source_topk)->Unit(benchmark::kMillisecond);

// Block amax alone: the key of each 8-position block (level one's pass over the dense row).
void BM_block_amax(benchmark::State& state) {
  const Data& d = data();
  for (auto _ : state) benchmark::DoNotOptimize(block_keys(d.dense.data(), kContext));
  state.SetItemsProcessed(state.iterations() * kContext);
}
BENCHMARK(BM_block_amax)->Unit(benchmark::kMillisecond);

void BM_level_one(benchmark::State& state) {
  const Data& d = data();
  for (auto _ : state) benchmark::DoNotOptimize(level_one(d.dense.data(), kContext));
  state.SetItemsProcessed(state.iterations() * kContext);
}
BENCHMARK(BM_level_one)->Unit(benchmark::kMillisecond);

void BM_level_two_sparse(benchmark::State& state) {
  const Data& d = data();
  const std::vector<int32_t> cand = candidate_positions(d.l1);
  std::vector<uint16_t> scores(cand.size());
  for (auto _ : state) {
    sparse_scores_at(d.rows[1], d.keys, cand.data(), int64_t(cand.size()), scores.data());
    benchmark::DoNotOptimize(level_two_sparse(d.l1, scores.data(), 512));
  }
  state.SetItemsProcessed(state.iterations() * int64_t(cand.size()));  // candidates
}
BENCHMARK(BM_level_two_sparse)->Unit(benchmark::kMillisecond);

void BM_level_two_mask(benchmark::State& state) {
  const Data& d = data();
  const std::vector<int32_t> cand = candidate_positions(d.l1);
  std::vector<float> scores(cand.size());
  for (auto _ : state) {
    dense_scores_at(d.rows[1], d.keys, cand.data(), int64_t(cand.size()), scores.data());
    benchmark::DoNotOptimize(level_two_mask(d.l1, scores.data(), 512));
  }
  state.SetItemsProcessed(state.iterations() * int64_t(cand.size()));
}
BENCHMARK(BM_level_two_mask)->Unit(benchmark::kMillisecond);

void BM_level_two_exact(benchmark::State& state) {
  const Data& d = data();
  const std::vector<int32_t> cand = candidate_positions(d.l1);
  std::vector<double> scores(cand.size());
  for (auto _ : state) {
    exact_scores_at(d.rows[1], d.keys, cand.data(), int64_t(cand.size()), scores.data());
    benchmark::DoNotOptimize(level_two_exact(d.l1, scores.data(), 512));
  }
  state.SetItemsProcessed(state.iterations() * int64_t(cand.size()));
}
BENCHMARK(BM_level_two_exact)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
