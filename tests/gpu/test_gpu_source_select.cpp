// gpu/topk/source_select: the source's selection in one launch (launch_source_select) against the
// reference's whole-row top-k and against level one's separate launch on the same block keys, on
// rows of every length class (fewer blocks than 2048, just over, up to 3750 blocks), all-equal and
// few-valued rows (ties at both cuts), with tail rows (their published blocks copied) and at
// k = 512 and 2048 (the own check and its full-row pass). The wide keys inside it are covered by
// the engine's runs (test_gpu_implementations, every 97th key wide).
// ctest -L gpu; exits 77 without a GPU.
#if DSA_HAVE_CUDA
#include <algorithm>
#include <cstdint>
#include <vector>

#include "core/constants.hpp"
#include "gpu/block_amax/block_amax.cuh"
#include "gpu/common/device_buffer.cuh"
#include "gpu/topk/source_select.cuh"
#include "gpu/topk/topk.cuh"
#include "reference/selection.hpp"
#include "tests/catch.hpp"
#include "tests/gpu/own_rows.hpp"
#include "tests/gpu/same_results.hpp"

using namespace dsa;

TEST_CASE("source selection in one launch equals level one's launch and the whole row's top-k") {
  const test::OwnRows rows = test::own_rows({20000, 20000, 300, 16385, 30000, 2049, 16384, 17}, 9);
  const std::vector<int>& lens = rows.lens;
  const std::vector<float>& dense = rows.dense;
  const std::vector<int> tail_of = {-1, 0, -1, 1, -1, -1, 2, -1};  // three tail rows
  const int nrows = int(lens.size()), ntail = 3, max_len = rows.max_len;
  const int64_t ld = rows.ld, ld_keys = rows.ld_keys;
  gpu::DeviceBuffer<float> d_dense, d_keys(size_t(nrows * ld_keys));
  gpu::DeviceBuffer<int32_t> d_len, d_valid, d_tail_of, d_list(static_cast<size_t>(nrows));
  gpu::DeviceBuffer<int32_t> d_blocks(size_t(nrows + ntail) * kTopkBlocks), d_level(size_t(nrows) * kTopkBlocks);
  gpu::DeviceBuffer<uint32_t> d_kth(static_cast<size_t>(nrows)), d_level_kth(static_cast<size_t>(nrows));
  d_dense.upload(dense);
  d_len.upload(lens);
  d_valid.upload(rows.valid);
  d_tail_of.upload(tail_of);
  gpu::launch_block_amax(d_dense.get(), ld, d_len.get(), nullptr, nrows, 0, max_len, d_keys.get(), ld_keys);
  gpu::launch_block_topk(d_keys.get(), ld_keys, d_len.get(), nrows, max_len, d_level.get(), d_level_kth.get());
  const std::vector<int32_t> level = d_level.to_host(size_t(nrows) * kTopkBlocks);
  const std::vector<uint32_t> level_kth = d_level_kth.to_host(size_t(nrows));
  for (int k : {512, 2048}) {
    INFO("k " << k);
    gpu::DeviceBuffer<int32_t> d_out(size_t(nrows) * k);
    d_blocks.fill_bytes(0x5A, size_t(nrows + ntail) * kTopkBlocks);  // nothing left from the last run
    gpu::SourceSelectArgs a{};
    a.keys = d_keys.get();
    a.ld_keys = ld_keys;
    a.len = d_len.get();
    a.nrows = nrows;
    a.blocks = d_blocks.get();
    a.level_kth = k >= kTopkBlocks ? d_kth.get() : nullptr;
    a.tail_of = d_tail_of.get();
    a.dense = d_dense.get();
    a.ld_dense = ld;
    a.valid_len = d_valid.get();
    a.k = k;
    a.picks = d_out.get();
    a.list = d_list.get();
    gpu::launch_source_select(a);
    const std::vector<int32_t> got = d_out.to_host(size_t(nrows) * k), list = d_list.to_host(size_t(nrows));
    const std::vector<int32_t> blocks = d_blocks.to_host(size_t(nrows + ntail) * kTopkBlocks);
    for (int r = 0; r < nrows; ++r) {
      INFO("row " << r << ", L " << lens[size_t(r)] << ", listed for the full pass: " << (list[size_t(r)] == r));
      const auto row_of = [](const std::vector<int32_t>& v, int i, int w) {
        return std::vector<int32_t>(v.begin() + int64_t(i) * w, v.begin() + int64_t(i + 1) * w);
      };
      const std::vector<int32_t> want_blocks = row_of(level, r, kTopkBlocks);
      REQUIRE(test::first_mismatch(want_blocks, row_of(blocks, r, kTopkBlocks), kTopkBlocks) == "");
      if (tail_of[size_t(r)] >= 0)
        REQUIRE(test::first_mismatch(want_blocks, row_of(blocks, nrows + tail_of[size_t(r)], kTopkBlocks),
                                     kTopkBlocks) == "");
      const std::vector<int32_t> want = ref::source_topk(dense.data() + r * ld, lens[size_t(r)], k);
      std::vector<int32_t> want_row(size_t(k), kPositionPad);
      std::copy(want.begin(), want.end(), want_row.begin());
      REQUIRE(test::first_mismatch(want_row, row_of(got, r, k), k) == "");
    }
    if (k < kTopkBlocks) {
      CHECK(gpu::own_topk_full_rows(list) == 0);
    } else {
      CHECK(list[0] == 0);  // all equal: the k-th candidate ties the smallest published block key
      const std::vector<uint32_t> kth = d_kth.to_host(size_t(nrows));
      for (int r = 0; r < nrows; ++r)
        if ((lens[size_t(r)] + 7) / 8 > kTopkBlocks) CHECK(kth[size_t(r)] == level_kth[size_t(r)]);
    }
  }
}
#endif
