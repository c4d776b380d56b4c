// Selection: top-k with the reference tie rule, level one, level two on each path, final write.
#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "reference/formats.hpp"
#include "reference/selection.hpp"
#include "tests/catch.hpp"

using namespace dsa;
using namespace dsa::ref;

TEST_CASE("top-k: larger score first, ties to the smaller id, result ascending") {
  const float score[6] = {1.0f, 5.0f, 3.0f, 5.0f, 3.0f, 0.0f};
  CHECK(topk_ids(score, nullptr, 6, 2) == std::vector<int32_t>{1, 3});
  CHECK(topk_ids(score, nullptr, 6, 3) == std::vector<int32_t>{1, 2, 3});  // 2 beats 4 (tie on 3)
  CHECK(topk_ids(score, nullptr, 6, 4) == std::vector<int32_t>{1, 2, 3, 4});
  const int32_t ids[6] = {60, 10, 50, 20, 40, 30};
  // Scores tie at 5 for ids 10 and 20, at 3 for ids 50 and 40: the smaller id wins.
  CHECK(topk_ids(score, ids, 6, 3) == std::vector<int32_t>{10, 20, 40});
  CHECK(topk_ids(score, nullptr, 6, 10) == std::vector<int32_t>{0, 1, 2, 3, 4, 5});  // n <= k: all
  CHECK(topk_ids(score, nullptr, 0, 3).empty());
}

TEST_CASE("top-k: -0 ties +0, negatives and infinities order correctly") {
  const float score[5] = {-0.0f, 0.0f, -1.0f, std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity()};
  CHECK(topk_ids(score, nullptr, 5, 2) == std::vector<int32_t>{0, 3});
  const double d[4] = {0.5, 0.25, 0.5, 1.0};
  CHECK(topk_ids(d, nullptr, 4, 2) == std::vector<int32_t>{0, 3});
}

TEST_CASE("top-k on bf16 bits compares the values, not the bit patterns") {
  // -1 (0xBF80) has larger bits than 2 (0x4000); +0 and -0 tie.
  const uint16_t s[5] = {0xBF80, 0x4000, 0x8000, 0x0000, 0x3F80};
  CHECK(topk_ids_bf16(s, nullptr, 5, 2) == std::vector<int32_t>{1, 4});
  CHECK(topk_ids_bf16(s, nullptr, 5, 3) == std::vector<int32_t>{1, 2, 4});  // -0 at id 2 beats +0 at id 3
}

TEST_CASE("top-k agrees with a full sort on random data with many ties") {
  std::mt19937 rng(1);
  std::uniform_int_distribution<int> v(0, 20);
  for (int trial = 0; trial < 50; ++trial) {
    const int n = 1 + trial * 37, k = 1 + trial * 5;
    std::vector<float> s(static_cast<size_t>(n));
    for (float& x : s) x = float(v(rng));
    std::vector<int32_t> order(static_cast<size_t>(n));
    for (int i = 0; i < n; ++i) order[size_t(i)] = i;
    std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return s[size_t(a)] > s[size_t(b)]; });
    order.resize(size_t(std::min(n, k)));
    std::sort(order.begin(), order.end());
    CHECK(topk_ids(s.data(), nullptr, n, k) == order);
  }
}

TEST_CASE("source top-k: all positions when L <= k") {
  std::vector<float> s = {3, 1, 2};
  CHECK(source_topk(s.data(), 3, 512) == std::vector<int32_t>{0, 1, 2});
  CHECK(source_topk(s.data(), 3, 1) == std::vector<int32_t>{0});
  CHECK(source_topk(s.data(), 0, 512).empty());
}

TEST_CASE("valid_len and block counts") {
  CHECK(block_count(0) == 0);
  CHECK(block_count(1) == 1);
  CHECK(block_count(8) == 1);
  CHECK(block_count(9) == 2);
  CHECK(valid_len_of(0, 0) == 0);
  CHECK(valid_len_of(1, 1) == 1);
  CHECK(valid_len_of(2, 10) == 10);      // 8 + (9 % 8) + 1
  CHECK(valid_len_of(2048, 16385) == 8 * 2047 + 1);  // the newest block holds one position
  CHECK(valid_len_of(2048, 16392) == 16384);
}

TEST_CASE("level one keeps every block up to 2048 blocks") {
  std::vector<float> s(16384);
  for (size_t i = 0; i < s.size(); ++i) s[i] = float(i % 13);
  const LevelOne l1 = level_one(s.data(), 16384);
  REQUIRE(l1.blocks.size() == 2048);
  for (int i = 0; i < 2048; ++i) CHECK(l1.blocks[size_t(i)] == i);
  CHECK(l1.valid_len == 16384);
  const LevelOne empty = level_one(s.data(), 0);
  CHECK(empty.blocks.empty());
  CHECK(empty.valid_len == 0);
}

TEST_CASE("level one beyond 2048 blocks: largest keys, newest kept, ties to smaller id") {
  // L = 16385: 2049 blocks; the newest (2048) holds one position and is always kept.
  std::vector<float> s(16385, 1.0f);
  s[16384] = -100.0f;        // the newest block's own score does not matter (+inf key)
  for (int p = 40; p < 48; ++p) s[size_t(p)] = 0.5f;  // block 5: key 0.5, the smallest
  LevelOne l1 = level_one(s.data(), 16385);
  REQUIRE(l1.blocks.size() == 2048);
  CHECK(std::find(l1.blocks.begin(), l1.blocks.end(), 5) == l1.blocks.end());
  CHECK(l1.blocks.back() == 2048);
  CHECK(std::is_sorted(l1.blocks.begin(), l1.blocks.end()));
  CHECK(l1.valid_len == 8 * 2047 + 1);
  // All keys equal: the largest old block id (2047) is the one dropped.
  std::fill(s.begin(), s.end(), 2.0f);
  l1 = level_one(s.data(), 16385);
  CHECK(l1.blocks[2046] == 2046);
  CHECK(l1.blocks[2047] == 2048);
  // One high position makes a block's key: block 2047's max is 9 beats the rest.
  std::fill(s.begin(), s.end(), 2.0f);
  s[8 * 3 + 2] = 1.0f;       // block 3 still has key 2 (max over its positions)
  s[8 * 2047 + 7] = 9.0f;
  const std::vector<float> keys = block_keys(s.data(), 16385);
  CHECK(keys[3] == 2.0f);
  CHECK(keys[2047] == 9.0f);
  CHECK(std::isinf(keys[2048]));
  l1 = level_one(s.data(), 16385);
  CHECK(l1.blocks[2046] == 2047);  // kept; block 2046 dropped instead
  CHECK(std::find(l1.blocks.begin(), l1.blocks.end(), 2046) == l1.blocks.end());
}

// docs/semantics.md, "The own top-k lies in the published blocks": for k <= 2047 every position
// of the source's own top-k lies in a kept block, so the top-k over the candidate columns is the
// top-k of the whole row. Checked on rows built to stress the tie rule.
TEST_CASE("the source's own top-512 lies in the level-one blocks, ties included") {
  std::mt19937_64 rng(5);
  const int64_t L = 8 * 4000 + 3;  // 4001 blocks, a partial newest one
  for (int trial = 0; trial < 12; ++trial) {
    std::vector<float> s(static_cast<size_t>(L));
    const int distinct = trial < 4 ? 1 : trial < 8 ? 3 : 200;  // all tied, few values, many
    for (float& v : s) v = float(int(rng() % uint64_t(distinct)));
    if (trial % 2 == 1)  // block keys tie while positions inside blocks differ
      for (int64_t p = 0; p < L; p += 8) s[size_t(p)] = float(distinct);
    const LevelOne l1 = level_one(s.data(), L);
    const std::vector<int32_t> own = source_topk(s.data(), L, 512);
    REQUIRE(own.size() == 512);
    for (int32_t p : own) {
      INFO("trial " << trial << " position " << p);
      CHECK(std::binary_search(l1.blocks.begin(), l1.blocks.end(), p / 8));
    }
    // The top-512 over the candidates equals the whole row's.
    std::vector<float> cand;
    for (int32_t p : candidate_positions(l1)) cand.push_back(s[size_t(p)]);
    CHECK(level_two_mask(l1, cand.data(), 512) == own);
  }
}

TEST_CASE("level one in fp64 uses the same rule") {
  std::vector<double> s(8 * 2100, 1.0);
  for (int p = 0; p < 8; ++p) s[size_t(p)] = 0.0;  // block 0 smallest
  s[8 * 10] = 1.0 + 1e-12;                         // block 10 above the rest only in fp64
  const LevelOne l1 = level_one(s.data(), int64_t(s.size()));
  REQUIRE(l1.blocks.size() == 2048);
  CHECK(l1.blocks.front() == 1);  // block 0 dropped
  CHECK(std::find(l1.blocks.begin(), l1.blocks.end(), 10) != l1.blocks.end());
  CHECK(l1.blocks.back() == 2099);
  // 2100 blocks, keep 2048: drop block 0 and the 51 largest old ids (2048..2098), keep 10.
  CHECK(l1.blocks[2046] == 2047);
}

TEST_CASE("candidate columns map to positions through the block table") {
  LevelOne l1;
  l1.blocks = {2, 5, 9};
  l1.valid_len = valid_len_of(3, 75);  // L = 75: the newest block 9 holds positions 72..74
  CHECK(l1.valid_len == 19);
  const std::vector<int32_t> c = candidate_positions(l1);
  REQUIRE(c.size() == 19);
  CHECK(c[0] == 16);
  CHECK(c[7] == 23);
  CHECK(c[8] == 40);
  CHECK(c[16] == 72);
  CHECK(c[18] == 74);
  CHECK(candidate_position(l1, 9) == 41);
}

TEST_CASE("level two: each path ranks candidates by its own scores") {
  LevelOne l1;
  l1.blocks = {0, 3};
  l1.valid_len = 12;  // positions 0..7 and 24..27
  std::vector<float> dense(12, 0.0f);
  dense[9] = 7.0f;   // position 25
  dense[2] = 7.0f;   // position 2 (ties 25, smaller wins at k = 1)
  dense[11] = 3.0f;  // position 27
  CHECK(level_two_mask(l1, dense.data(), 1) == std::vector<int32_t>{2});
  CHECK(level_two_mask(l1, dense.data(), 3) == std::vector<int32_t>{2, 25, 27});
  CHECK(level_two_mask(l1, dense.data(), 12).size() == 12);  // valid_len <= k: all
  std::vector<uint16_t> sparse(12, 0x0000);
  sparse[10] = bf16_rne(1.0f);   // position 26
  sparse[4] = bf16_rne(-1.0f);   // position 4: lowest
  sparse[0] = 0x8000;            // -0 ties +0
  const std::vector<int32_t> two = level_two_sparse(l1, sparse.data(), 2);
  CHECK(two == std::vector<int32_t>{0, 26});
  CHECK(level_two_sparse(l1, sparse.data(), 11) == std::vector<int32_t>{0, 1, 2, 3, 5, 6, 7, 24, 25, 26, 27});
  std::vector<double> exact(12, 1.0);
  exact[7] = 2.0;  // position 7
  CHECK(level_two_exact(l1, exact.data(), 2) == std::vector<int32_t>{0, 7});
}

TEST_CASE("final write: ascending, -1 and INT32_MAX padding") {
  int32_t row[6];
  write_positions({9, 3, 5}, 6, row);
  CHECK(std::vector<int32_t>(row, row + 6) == std::vector<int32_t>{3, 5, 9, -1, -1, -1});
  LevelOne l1;
  l1.blocks = {0, 4};
  std::vector<int32_t> blocks(kTopkBlocks);
  write_blocks(l1, blocks.data());
  CHECK(blocks[0] == 0);
  CHECK(blocks[1] == 4);
  CHECK(blocks[2] == INT32_MAX);
  CHECK(blocks.back() == INT32_MAX);
}
