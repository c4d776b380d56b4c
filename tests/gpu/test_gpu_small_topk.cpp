// gpu/small_topk: the sparse path's top-512 over bf16 candidate scores, with the page transform,
// against the reference's bf16 top-k on rows built for the radix select's branches: ties across
// the row, +0 against -0, a cut inside the last digit, a bin that holds exactly the keys still
// needed, short rows, the one-pass window under the largest key hit on its floor and just missed,
// a far outlier, huge negatives whose high byte is the padding's, tiny positives over negatives
// (the raw window's signed order); more rows than an H200 holds
// blocks at once (five an SM), so blocks that start late reuse the shared memory of finished
// ones. ctest -L gpu; exits 77 without a GPU.
#if DSA_HAVE_CUDA
#include <algorithm>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "core/constants.hpp"
#include "gpu/common/device_buffer.cuh"
#include "gpu/small_topk/small_topk.cuh"
#include "reference/formats.hpp"
#include "reference/selection.hpp"
#include "tests/catch.hpp"
#include "tests/gpu/same_results.hpp"

using namespace dsa;

TEST_CASE("small top-512 over bf16 candidates equals the reference, positions through the table") {
  constexpr int k = 512;
  std::mt19937 rng(11);
  std::normal_distribution<float> normal(0.f, 3.f);
  using Fill = uint16_t (*)(int, std::mt19937&, std::normal_distribution<float>&);
  struct Case {
    std::string name;
    int valid;
    Fill value;
  };
  const std::vector<Case> cases = {
      {"normal", kCandidateWidth, [](int, std::mt19937& g, std::normal_distribution<float>& d) { return ref::bf16_rne(d(g)); }},
      {"all equal", kCandidateWidth, [](int, std::mt19937&, std::normal_distribution<float>&) { return ref::bf16_rne(2.f); }},
      {"+0 and -0", 9000, [](int i, std::mt19937&, std::normal_distribution<float>&) { return uint16_t(i % 2 ? 0x8000 : 0); }},
      {"exact bin", kCandidateWidth, [](int i, std::mt19937&, std::normal_distribution<float>&) { return ref::bf16_rne(i % 32 == 1 ? 3.f : 1.f); }},
      {"last digit", kCandidateWidth, [](int i, std::mt19937&, std::normal_distribution<float>&) { return uint16_t(0x3F80 + i % 29); }},
      {"k + 1", k + 1, [](int, std::mt19937& g, std::normal_distribution<float>& d) { return ref::bf16_rne(d(g)); }},
      {"k - 3", k - 3, [](int, std::mt19937& g, std::normal_distribution<float>& d) { return ref::bf16_rne(d(g)); }},
      {"ragged", 12345, [](int, std::mt19937& g, std::normal_distribution<float>& d) { return ref::bf16_rne(float(int(d(g)))); }},
      // One +inf: the k-th key lies far below the one-pass window under the largest key.
      {"far outlier", kCandidateWidth, [](int i, std::mt19937& g, std::normal_distribution<float>& d) {
         return i == 77 ? uint16_t(0x7F80) : ref::bf16_rne(d(g));
       }},
      // The k-th key (1.0, tied) on the window's lowest value, 255 under the largest.
      {"k-th on the window floor", kCandidateWidth, [](int i, std::mt19937&, std::normal_distribution<float>&) {
         return uint16_t(i == 5 ? 0x3F80 + 255 : 0x3F80);
       }},
      // The k-th key one value under that floor: the digit passes.
      {"k-th just under the window", kCandidateWidth, [](int i, std::mt19937&, std::normal_distribution<float>&) {
         return uint16_t(i == 5 ? 0x3F80 + 256 : 0x3F80);
       }},
      // The k-th key (tied) one value above the floor: the window's second bin.
      {"k-th just above the floor", kCandidateWidth, [](int i, std::mt19937&, std::normal_distribution<float>&) {
         return uint16_t(i == 5 ? 0x3F80 + 255 : i % 2 ? 0x3F81 : 0x3F80);
       }},
      // -inf and the most negative finite value under one +inf: the k-th key's high byte is the
      // padding's (0), which the digit passes must not count.
      {"negatives under +inf", 2001, [](int i, std::mt19937&, std::normal_distribution<float>&) {
         return uint16_t(i == 3 ? 0x7F80 : i % 3 ? 0xFF7F : 0xFF80);
       }},
      // Tiny positives (largest 0x01C7, so the window's floor is 0x00C8) among negatives whose
      // bits, read unsigned, lie above every positive's: the window must count and pick only
      // the positives.
      {"tiny positives over negatives", kCandidateWidth, [](int i, std::mt19937&, std::normal_distribution<float>&) {
         return uint16_t(i % 3 == 0 ? 0x0100 + i % 200 : 0x8000 + i % 300);
       }},
      // Mostly -inf with a tied cut: the k-th key is the least real key.
      {"k-th is -inf", 3003, [](int i, std::mt19937&, std::normal_distribution<float>&) {
         return uint16_t(i % 7 == 0 ? 0x4000 : 0xFF80);
       }},
  };
  // The cases repeated in rotating order: more rows than five blocks an SM on an H200, rows of
  // every kind next to each other.
  std::vector<const Case*> row_case;
  for (int rep = 0; rep < 60; ++rep)
    for (size_t i = 0; i < cases.size(); ++i) row_case.push_back(&cases[(i * 3 + size_t(rep)) % cases.size()]);
  const int nrows = int(row_case.size());
  std::vector<uint16_t> scores(size_t(nrows) * kCandidateWidth, 0);
  std::vector<int32_t> blocks(static_cast<size_t>(nrows) * kTopkBlocks), valid(static_cast<size_t>(nrows));
  for (int r = 0; r < nrows; ++r) {
    valid[size_t(r)] = row_case[size_t(r)]->valid;
    for (int c = 0; c < valid[size_t(r)]; ++c)
      scores[size_t(r) * kCandidateWidth + c] = row_case[size_t(r)]->value(c, rng, normal);
    for (int b = 0; b < kTopkBlocks; ++b) blocks[size_t(r) * kTopkBlocks + b] = 3 * b + r;  // ascending
  }
  gpu::DeviceBuffer<uint16_t> d_scores;
  gpu::DeviceBuffer<int32_t> d_blocks, d_valid, d_out(size_t(nrows) * k);
  d_scores.upload(scores);
  d_blocks.upload(blocks);
  d_valid.upload(valid);
  gpu::launch_small_topk(d_scores.get(), d_blocks.get(), d_valid.get(), nrows, k, d_out.get());
  const std::vector<int32_t> got = d_out.to_host(size_t(nrows) * k);
  for (int r = 0; r < nrows; ++r) {
    const int n = valid[size_t(r)];
    std::vector<int32_t> positions(static_cast<size_t>(n));
    for (int c = 0; c < n; ++c)
      positions[size_t(c)] = blocks[size_t(r) * kTopkBlocks + c / kBlockSize] * kBlockSize + c % kBlockSize;
    const std::vector<int32_t> want =
        ref::topk_ids_bf16(scores.data() + size_t(r) * kCandidateWidth, positions.data(), n, k);
    INFO("row " << r << " (" << row_case[size_t(r)]->name << ", " << n << " candidates)");
    std::vector<int32_t> want_row(k, kPositionPad);
    std::copy(want.begin(), want.end(), want_row.begin());
    const std::vector<int32_t> got_row(got.begin() + r * k, got.begin() + (r + 1) * k);
    REQUIRE(test::first_mismatch(want_row, got_row, k) == "");
  }
}
#endif
