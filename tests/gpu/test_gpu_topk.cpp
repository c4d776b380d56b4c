// gpu/topk: the level-one block top-2048 (launch_block_topk) against the reference's top-k with
// its tie rule, on rows built to reach every branch of the register-resident radix select: ties
// across the whole row, a cut inside the last digit, a bin that holds exactly the keys still
// needed after the first or the second digit, a cut and ties inside one first-digit bin,
// infinities, signed zeros, subnormals, rows at and around k and up to 32768 blocks.
// More rows than SMs, so the persistent kernel prefetches rows of every kind behind each other;
// each row's reported k-th key (the own top-k's check reads it) is the smallest published key.
// ctest -L gpu; exits 77 without a GPU.
#if DSA_HAVE_CUDA
#include <algorithm>
#include <cmath>
#include <cstring>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "core/constants.hpp"
#include "gpu/block_amax/block_amax.cuh"
#include "gpu/common/device_buffer.cuh"
#include "gpu/topk/topk.cuh"
#include "reference/formats.hpp"
#include "reference/selection.hpp"
#include "tests/catch.hpp"
#include "tests/gpu/own_rows.hpp"
#include "tests/gpu/same_results.hpp"

using namespace dsa;

namespace {

struct KeyRow {
  std::string name;
  std::vector<float> keys;  // one per block
};

std::vector<KeyRow> key_rows() {
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(4.f, 1.f);
  const float inf = std::numeric_limits<float>::infinity();
  auto make = [&](const std::string& name, int n, auto value) {
    KeyRow r{name, std::vector<float>(size_t(n))};
    for (int i = 0; i < n; ++i) r.keys[size_t(i)] = value(i);
    return r;
  };
  std::vector<KeyRow> rows;
  rows.push_back(make("normal, 32768 blocks", 32768, [&](int) { return normal(rng); }));
  rows.push_back(make("normal, newest +inf", 20001, [&](int i) { return i == 20000 ? inf : normal(rng); }));
  rows.push_back(make("all equal", 32768, [](int) { return 1.5f; }));
  rows.push_back(make("three values", 30000, [](int i) { return float(i % 3); }));
  // One ulp apart: every key shares the first two digits, the cut is in the last.
  rows.push_back(make("consecutive ulps", 32768, [](int i) { return std::nextafter(1.f, 2.f) + float(i % 977) * 1.1920929e-7f; }));
  // 2048 keys of 2.0 over 1.0: the first digit's bin holds exactly the keys needed.
  rows.push_back(make("exact bin", 32768, [](int i) { return i % 16 == 3 ? 2.f : 1.f; }));
  // 2047 large keys and ties below: the cut falls on the ties, taken in index order.
  rows.push_back(make("ties at the cut", 32768, [](int i) { return i % 16 == 5 && i < 32752 ? 8.f : 0.5f; }));
  // The cut inside a bin of the first digit (a quarter binade) that holds a few keys of each
  // thread: 1024 keys near 6, 2048 distinct ones in [2, 2.25) of which the larger 1024 are
  // taken (no tie: the one-comparison placement).
  rows.push_back(make("cut inside a first-digit bin", 32768, [](int i) {
    return i % 32 == 1 ? 6.f + float(i) * 1e-6f : i % 16 == 9 ? 2.f + float(i / 16) * 1e-4f : 1.f;
  }));
  // The same with 50 values repeated in the bin: the cut splits ties, taken in index order.
  rows.push_back(make("ties inside a first-digit bin", 32768, [](int i) {
    return i % 32 == 1 ? 6.f : i % 16 == 9 ? 2.f + float((i / 16) % 50) * 1e-3f : 1.f;
  }));
  // 1024 keys 2.25 + j ulps and 1024 keys 2.0 + j ulps (j < 1024): one bin of the first digit, two
  // of the second; the upper one holds exactly the keys still needed (the search stops there).
  rows.push_back(make("exact second digit", 32768, [](int i) {
    const uint32_t j = uint32_t(i / 32);
    if (i % 32 == 9) return ref::bits_float(0x40100000u + j);
    if (i % 32 == 13) return ref::bits_float(0x40000000u + j);
    return i % 32 == 1 ? 6.f : 1.f;
  }));
  rows.push_back(make("k + 1 blocks", kTopkBlocks + 1, [&](int) { return normal(rng); }));
  rows.push_back(make("k blocks", kTopkBlocks, [&](int) { return normal(rng); }));
  rows.push_back(make("k - 1 blocks", kTopkBlocks - 1, [&](int) { return normal(rng); }));
  rows.push_back(make("ragged, 4097 blocks", 4097, [&](int) { return std::floor(normal(rng) * 4.f); }));
  rows.push_back(make("signed zeros, subnormals, -inf", 32768, [&](int i) {
    switch (i % 5) {
      case 0: return -0.f;
      case 1: return 0.f;
      case 2: return 1e-40f * float(i % 7);
      case 3: return -inf;
      default: return -1e-40f;
    }
  }));
  rows.push_back(make("negative", 25000, [&](int) { return -std::fabs(normal(rng)); }));
  return rows;
}

// order_f32 (gpu/topk/radix_topk.cuh) on the host: larger float, larger key; -0 ranks as +0.
uint32_t ordered(float x) {
  uint32_t u;
  std::memcpy(&u, &x, 4);
  if (u == 0x80000000u) u = 0;
  return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}

}  // namespace

TEST_CASE("block top-2048 equals the reference's top-k, ties by smaller block id") {
  // The rows repeated in rotating order, more rows than an H200 has SMs: the persistent kernel's
  // blocks take several rows each, short and long ones mixed, while the next row's copy runs.
  const std::vector<KeyRow> kinds = key_rows();
  std::vector<KeyRow> rows;
  for (int rep = 0; rep < 23; ++rep)
    for (size_t i = 0; i < kinds.size(); ++i) rows.push_back(kinds[(i * 5 + size_t(rep)) % kinds.size()]);
  const int nrows = int(rows.size());
  int max_blocks = 0;
  for (const KeyRow& r : rows) max_blocks = std::max(max_blocks, int(r.keys.size()));
  const int64_t ld = (max_blocks + 3) / 4 * 4;
  std::vector<float> keys(size_t(nrows * ld), 0.f);
  std::vector<int32_t> len(static_cast<size_t>(nrows));
  for (int r = 0; r < nrows; ++r) {
    const std::vector<float>& k = rows[size_t(r)].keys;
    std::copy(k.begin(), k.end(), keys.begin() + r * ld);
    len[size_t(r)] = int32_t(k.size()) * kBlockSize - (r % kBlockSize);  // ragged newest block
  }
  gpu::DeviceBuffer<float> d_keys;
  gpu::DeviceBuffer<int32_t> d_len, d_blocks(size_t(nrows) * kTopkBlocks);
  gpu::DeviceBuffer<uint32_t> d_kth(static_cast<size_t>(nrows));
  d_keys.upload(keys);
  d_len.upload(len);
  gpu::launch_block_topk(d_keys.get(), ld, d_len.get(), nrows, max_blocks * kBlockSize, d_blocks.get(), d_kth.get());
  const std::vector<int32_t> got = d_blocks.to_host(size_t(nrows) * kTopkBlocks);
  const std::vector<uint32_t> kth = d_kth.to_host(size_t(nrows));
  for (int r = 0; r < nrows; ++r) {
    const std::vector<float>& k = rows[size_t(r)].keys;
    const std::vector<int32_t> want = ref::topk_ids(k.data(), nullptr, int64_t(k.size()), kTopkBlocks);
    INFO("row " << r << " (" << rows[size_t(r)].name << ", " << k.size() << " blocks)");
    if (int(k.size()) > kTopkBlocks) {  // the reported k-th key: the smallest published one
      float smallest = std::numeric_limits<float>::infinity();
      for (int32_t b : want) smallest = std::min(smallest, k[size_t(b)]);
      CHECK(kth[size_t(r)] == ordered(smallest));
    }
    std::vector<int32_t> want_row(kTopkBlocks, kBlockPad);
    std::copy(want.begin(), want.end(), want_row.begin());
    const std::vector<int32_t> got_row(got.begin() + r * kTopkBlocks, got.begin() + (r + 1) * kTopkBlocks);
    REQUIRE(test::first_mismatch(want_row, got_row, kTopkBlocks) == "");
  }
}

// The source's own top-k through level one (launch_block_amax, launch_block_topk with its k-th
// key, launch_own_topk) against ref::source_topk over the whole row. For k = 512 the candidates
// always hold the answer (docs/semantics.md) and no row takes the full-row pass, ties or not; for
// k = 2048 the all-equal row must take it (its k-th candidate score equals the smallest published
// block key), and its answer still equals the reference's.
TEST_CASE("own top-k through level one equals the whole row's top-k, ties and the full-row pass included") {
  const test::OwnRows rows = test::own_rows({20000, 20000, 300, 16385, 30000, 2049}, 5);
  const std::vector<int>& lens = rows.lens;
  const std::vector<float>& dense = rows.dense;
  const int nrows = int(lens.size()), max_len = rows.max_len;
  const int64_t ld = rows.ld, ld_keys = rows.ld_keys;
  gpu::DeviceBuffer<float> d_dense, d_keys(size_t(nrows * ld_keys));
  gpu::DeviceBuffer<int32_t> d_len, d_valid, d_blocks(size_t(nrows) * kTopkBlocks), d_list(static_cast<size_t>(nrows));
  gpu::DeviceBuffer<uint32_t> d_kth(static_cast<size_t>(nrows));
  d_dense.upload(dense);
  d_len.upload(lens);
  d_valid.upload(rows.valid);
  gpu::launch_block_amax(d_dense.get(), ld, d_len.get(), nullptr, nrows, 0, max_len, d_keys.get(), ld_keys);
  gpu::launch_block_topk(d_keys.get(), ld_keys, d_len.get(), nrows, max_len, d_blocks.get(), d_kth.get());
  for (int k : {512, 2048}) {
    INFO("k " << k);
    gpu::DeviceBuffer<int32_t> d_out(size_t(nrows) * k);
    gpu::launch_own_topk(d_dense.get(), ld, d_len.get(), nrows, k, d_kth.get(), d_blocks.get(), d_valid.get(),
                         d_out.get(), d_list.get());
    const std::vector<int32_t> got = d_out.to_host(size_t(nrows) * k), list = d_list.to_host(size_t(nrows));
    for (int r = 0; r < nrows; ++r) {
      INFO("row " << r << ", L " << lens[size_t(r)] << ", listed for the full pass: " << (list[size_t(r)] == r));
      const std::vector<int32_t> want = ref::source_topk(dense.data() + r * ld, lens[size_t(r)], k);
      std::vector<int32_t> want_row(size_t(k), kPositionPad);
      std::copy(want.begin(), want.end(), want_row.begin());
      const std::vector<int32_t> got_row(got.begin() + r * k, got.begin() + (r + 1) * k);
      REQUIRE(test::first_mismatch(want_row, got_row, k) == "");
    }
    if (k < kTopkBlocks)
      CHECK(gpu::own_topk_full_rows(list) == 0);
    else
      CHECK(list[0] == 0);
  }
}

// The own top-k narrowed by level one's published keys (launch_block_topk's pick keys,
// launch_own_topk with them, k = 512): against ref::source_topk over the whole true row, while
// every score outside the narrowed blocks (published blocks whose key lies below the (k+1)-th
// largest published key) is replaced by 1e30 on the device, so a row that read one would pick
// it. Rows: distinct scores (narrowed), all equal (2048 tied blocks: the fallback over all
// candidates), few values, 600 blocks tied at the (k+1)-th key under 100 higher ones (narrowed to
// 701 blocks with the newest, the tie split by position), at most 2048 blocks, and at most k positions.
TEST_CASE("own top-k narrowed by level one's keys equals the whole row's top-k and reads only its blocks") {
  test::OwnRows rows = test::own_rows({20000, 20000, 300, 16385, 30000, 2049, 40000}, 9);
  const std::vector<int>& lens = rows.lens;
  const int nrows = int(lens.size()), max_len = rows.max_len, k = 512, tied_row = 6;
  const int64_t ld = rows.ld, ld_keys = rows.ld_keys;
  {  // the tied row: scores in [0, 1); blocks 7 j (j < 100) peak at 10 + j, blocks 7 j + 3 (j < 600) at 5
    std::mt19937 rng(11);
    std::uniform_real_distribution<float> unit(0.f, 1.f);
    float* row = rows.dense.data() + tied_row * ld;
    for (int i = 0; i < lens[size_t(tied_row)]; ++i) row[i] = unit(rng);
    for (int j = 0; j < 100; ++j) row[8 * (7 * j) + j % 8] = 10.f + float(j);
    for (int j = 0; j < 600; ++j) row[8 * (7 * j + 3) + (j * 5) % 8] = 5.f;
  }
  const std::vector<float>& dense = rows.dense;
  gpu::DeviceBuffer<float> d_dense, d_keys(size_t(nrows * ld_keys));
  gpu::DeviceBuffer<int32_t> d_len, d_valid, d_blocks(size_t(nrows) * kTopkBlocks), d_list(static_cast<size_t>(nrows));
  gpu::DeviceBuffer<uint32_t> d_pick(size_t(nrows) * kTopkBlocks);
  d_dense.upload(dense);
  d_len.upload(lens);
  d_valid.upload(rows.valid);
  REQUIRE(gpu::block_topk_in_registers(max_len));
  gpu::launch_block_amax(d_dense.get(), ld, d_len.get(), nullptr, nrows, 0, max_len, d_keys.get(), ld_keys);
  gpu::launch_block_topk(d_keys.get(), ld_keys, d_len.get(), nrows, max_len, d_blocks.get(), nullptr, d_pick.get());
  const std::vector<int32_t> blocks = d_blocks.to_host(size_t(nrows) * kTopkBlocks);
  const std::vector<uint32_t> pick = d_pick.to_host(size_t(nrows) * kTopkBlocks);
  const std::vector<float> keys = d_keys.to_host(size_t(nrows * ld_keys));
  std::vector<float> poisoned = dense;
  std::vector<int> narrowed(size_t(nrows), 0);  // blocks the narrowing keeps (0: none, it takes all)
  for (int r = 0; r < nrows; ++r) {
    if (ref::block_count(lens[size_t(r)]) <= kTopkBlocks) continue;
    std::vector<uint32_t> sorted;
    for (int c = 0; c < kTopkBlocks; ++c) {
      const int32_t b = blocks[size_t(r * kTopkBlocks + c)];
      INFO("row " << r << ", published column " << c << ", block " << b);
      REQUIRE(pick[size_t(r * kTopkBlocks + c)] == ordered(keys[size_t(r * ld_keys + b)]));  // the pick keys
      sorted.push_back(pick[size_t(r * kTopkBlocks + c)]);
    }
    std::sort(sorted.rbegin(), sorted.rend());
    const uint32_t least = sorted[size_t(k)];  // the (k+1)-th largest
    int kept = 0;
    for (uint32_t v : sorted) kept += v >= least;
    if (kept > 1024) continue;
    narrowed[size_t(r)] = kept;
    for (int c = 0; c < kTopkBlocks; ++c)
      if (pick[size_t(r * kTopkBlocks + c)] < least)
        std::fill_n(poisoned.begin() + r * ld + 8 * blocks[size_t(r * kTopkBlocks + c)], 8, 1e30f);
  }
  CHECK(narrowed[1] == k + 1);
  CHECK(narrowed[0] == 0);  // all equal: 2048 blocks tie
  CHECK(narrowed[size_t(tied_row)] == 701);  // the newest, 100 above, 600 tied
  d_dense.upload(poisoned);
  gpu::DeviceBuffer<int32_t> d_out(size_t(nrows) * k);
  gpu::launch_own_topk(d_dense.get(), ld, d_len.get(), nrows, k, nullptr, d_blocks.get(), d_valid.get(), d_out.get(),
                       d_list.get(), d_pick.get());
  const std::vector<int32_t> got = d_out.to_host(size_t(nrows) * k);
  for (int r = 0; r < nrows; ++r) {
    INFO("row " << r << ", L " << lens[size_t(r)] << ", narrowed to " << narrowed[size_t(r)] << " blocks");
    const std::vector<int32_t> want = ref::source_topk(dense.data() + r * ld, lens[size_t(r)], k);
    std::vector<int32_t> want_row(size_t(k), kPositionPad);
    std::copy(want.begin(), want.end(), want_row.begin());
    const std::vector<int32_t> got_row(got.begin() + r * k, got.begin() + (r + 1) * k);
    REQUIRE(test::first_mismatch(want_row, got_row, k) == "");
  }
  CHECK(gpu::own_topk_full_rows(d_list.to_host(size_t(nrows))) == 0);
}
#endif
