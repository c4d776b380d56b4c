#pragma once
// A small, valid batch with random non-zero data for the batch I/O, validator and content ID
// tests: 3 requests (one without rows), tails, a source and two consumers, shuffled pool pages,
// and one recorded output with blocks, positions, tail positions and dense + sparse scores on
// sampled rows. Independent of the generator so these tests pin the format alone.
#include <algorithm>
#include <cstdint>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "harness/batch/batch_validate.hpp"
#include "core/batch.hpp"
#include "core/constants.hpp"

namespace dsa::test {

inline std::vector<int32_t> random_positions(std::mt19937& rng, int len, int k) {
  std::vector<int32_t> all(static_cast<size_t>(len));
  std::iota(all.begin(), all.end(), 0);
  std::shuffle(all.begin(), all.end(), rng);
  const int n = std::min(k, int(std::uniform_int_distribution<int>(len / 2, len)(rng)));
  std::vector<int32_t> row(all.begin(), all.begin() + n);
  std::sort(row.begin(), row.end());
  row.resize(size_t(k), kPositionPad);
  return row;
}

inline Results small_results(const Batch& b, std::mt19937& rng, const std::string& name) {
  const int r = b.rows(), k = b.topk;
  Results res;
  res.name = name;
  res.implementation = "test " + name;
  res.device = "cpu";
  res.notes = "sampled rows";
  res.rows_done.assign(size_t(r), 0);
  for (int i = 0; i < r; ++i) res.rows_done[size_t(i)] = i % 3 != 1;  // rows 1, 4 not done
  res.blocks.assign(size_t(r) * kTopkBlocks, kBlockPad);
  for (int i = 0; i < r; ++i) {
    if (!res.rows_done[size_t(i)]) continue;
    const int nblocks = (b.compress_len[size_t(i)] + kBlockSize - 1) / kBlockSize;
    for (int j = 0; j < nblocks; ++j) res.blocks[size_t(i) * kTopkBlocks + size_t(j)] = j;
  }
  for (int id : {20, 24}) {
    LayerResult& lr = res.layers[id];
    lr.positions.assign(size_t(r) * k, kPositionPad);
    for (int i = 0; i < r; ++i)
      if (res.rows_done[size_t(i)]) {
        auto row = random_positions(rng, b.compress_len[size_t(i)], k);
        std::copy(row.begin(), row.end(), lr.positions.begin() + size_t(i) * k);
      }
  }
  LayerResult& consumer = res.layers[24];
  for (int i = 0; i < r; ++i) {
    if (b.tail_index(i) < 0) continue;
    auto row = random_positions(rng, b.compress_len[size_t(i)], k);
    consumer.tail_positions.insert(consumer.tail_positions.end(), row.begin(), row.end());
  }
  std::uniform_real_distribution<float> score(-3.0f, 40.0f);
  std::uniform_int_distribution<int> bits(1, 0x7f7f);
  res.layers[20].dense_scores.resize(size_t(r));
  consumer.sparse_scores.resize(size_t(r));
  for (int i = 0; i < r; ++i) {
    if (!res.rows_done[size_t(i)]) continue;
    const int len = b.compress_len[size_t(i)];
    for (int j = 0; j < len; ++j) res.layers[20].dense_scores[size_t(i)].push_back(score(rng));
    for (int j = 0; j < valid_len_of(len); ++j) consumer.sparse_scores[size_t(i)].push_back(uint16_t(bits(rng)));
  }
  return res;
}

inline Layer small_layer(std::mt19937& rng, int id, Role role, int rows) {
  std::uniform_int_distribution<int> byte(1, 255), scale(100, 140);
  std::uniform_real_distribution<float> weight(-2.0f, 2.0f);
  Layer l;
  l.id = id;
  l.role = role;
  l.q.resize(size_t(rows) * kHeads * kPackedDim);
  for (auto& v : l.q) v = uint8_t(byte(rng));
  l.q_scale.resize(size_t(rows) * kHeads * kScaleGroups);
  for (auto& v : l.q_scale) v = uint8_t(scale(rng));
  l.weights.resize(size_t(rows) * kHeads);
  for (auto& v : l.weights) v = weight(rng) / 64.0f;
  return l;
}

// page_size 16; requests: 3 rows at lc 40, 0 rows at lc 7, 4 rows at lc 300; tails 1, 0, 2.
inline Batch small_batch(uint32_t seed = 7, bool with_outputs = true) {
  std::mt19937 rng(seed);
  Batch b;
  b.topk = 512;
  b.page_size = 16;
  b.compress_ratio = 1;
  b.source_layer = 20;
  b.origin = "synthetic";
  b.description = "test small_batch seed " + std::to_string(seed);
  b.num_rows = {3, 0, 4};
  b.compressed_len = {40, 7, 300};
  b.tail_rows = {1, 0, 2};
  b.compress_len = {0, 13, 40, 100, 200, 299, 300};
  b.table_width = 20;
  b.pages = 26;  // 3 + 1 + 19 used, 3 spare
  std::vector<int32_t> order(size_t(b.pages));
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(), rng);
  b.page_table.assign(size_t(b.requests()) * b.table_width, -1);
  size_t next = 0;
  for (int q = 0; q < b.requests(); ++q)
    for (int j = 0; j * b.page_size < b.compressed_len[size_t(q)]; ++j)
      b.page_table[size_t(q) * b.table_width + size_t(j)] = order[next++];
  std::uniform_int_distribution<int> byte(1, 255), scale(110, 135);
  b.pool.resize(size_t(b.pages) * b.page_size * kSlotBytes);
  for (auto& v : b.pool) v = uint8_t(byte(rng));
  for (int64_t p = 0; p < b.pages; ++p)
    for (int s = 0; s < b.page_size * kScaleGroups; ++s)
      b.pool[size_t(p * b.page_size * kSlotBytes + b.page_size * kPackedDim + s)] = uint8_t(scale(rng));
  b.layers.push_back(small_layer(rng, 20, Role::source, b.rows()));
  b.layers.push_back(small_layer(rng, 24, Role::consumer, b.rows()));
  b.layers.push_back(small_layer(rng, 28, Role::consumer, b.rows()));
  b.finalize();
  if (with_outputs) b.outputs["reference-sparse"] = small_results(b, rng, "reference-sparse");
  return b;
}

}  // namespace dsa::test
