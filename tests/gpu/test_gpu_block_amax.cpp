// gpu/block_amax: the block keys of listed rows (the rows the dense wgmma kernel does not cover,
// addressed from a chunk's first row) against ref::block_keys, and the engine's check of the fused
// keys, which must count a planted wrong key and name the first. ctest -L gpu; exits 77 without
// a GPU.
#if DSA_HAVE_CUDA
#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <random>
#include <vector>

#include "gpu/block_amax/block_amax.cuh"
#include "gpu/common/device_buffer.cuh"
#include "reference/formats.hpp"
#include "reference/selection.hpp"
#include "tests/catch.hpp"

using namespace dsa;

TEST_CASE("block amax: listed rows of a chunk get the reference's keys; a wrong key is counted and located") {
  // Selected rows 3..8 form the chunk (row0 = 3); lengths cover an empty row, a partial and a
  // full newest block, and one block.
  const std::vector<int32_t> lens = {9, 9, 9, 20000, 0, 17, 16, 8, 12345};
  const int row0 = 3, nrows = 6, max_len = 20000;
  const int64_t ld = (max_len + 7) / 8 * 8, ld_keys = ((max_len + 7) / 8 + 3) / 4 * 4;
  std::mt19937 rng(11);
  std::normal_distribution<float> normal(0.f, 1.f);
  std::vector<float> dense(size_t(nrows * ld), 0.f);
  for (int i = 0; i < nrows; ++i)
    for (int p = 0; p < lens[size_t(row0 + i)]; ++p) dense[size_t(i * ld + p)] = normal(rng) - (p % 3 == 0 ? 9.f : 0.f);
  const std::vector<int32_t> rows = {8, 4, 6, 3};  // some rows of the chunk, in any order
  gpu::DeviceBuffer<float> d_dense, d_keys(size_t(nrows * ld_keys));
  gpu::DeviceBuffer<int32_t> d_len, d_rows;
  d_dense.upload(dense);
  d_len.upload(lens);
  d_rows.upload(rows);
  d_keys.fill_bytes(0xFF, d_keys.size());
  gpu::launch_block_amax(d_dense.get(), ld, d_len.get(), d_rows.get(), int(rows.size()), row0, max_len, d_keys.get(),
                         ld_keys);
  std::vector<float> keys = d_keys.to_host(d_keys.size());
  for (int sel : rows) {
    INFO("selected row " << sel);
    const int i = sel - row0, L = lens[size_t(sel)];
    const std::vector<float> want = ref::block_keys(dense.data() + i * ld, L);
    REQUIRE(want.size() == size_t((L + 7) / 8));
    for (size_t b = 0; b < want.size(); ++b) {
      INFO("block " << b);
      REQUIRE(ref::float_bits(keys[size_t(i * ld_keys) + b]) == ref::float_bits(want[b]));
    }
  }
  // The other rows' keys, then the check over the whole chunk: none wrong, then two planted.
  gpu::launch_block_amax(d_dense.get(), ld, d_len.get(), nullptr, nrows, row0, max_len, d_keys.get(), ld_keys);
  gpu::KeyMismatches none = gpu::count_block_key_mismatches(d_dense.get(), ld, d_len.get(), nrows, row0, max_len,
                                                            d_keys.get(), ld_keys);
  CHECK(none.count == 0);
  keys = d_keys.to_host(d_keys.size());
  keys[size_t(5 * ld_keys + 1000)] = std::nextafter(keys[size_t(5 * ld_keys + 1000)], 0.f);  // selected row 8
  keys[size_t(2 * ld_keys + 1)] = -keys[size_t(2 * ld_keys + 1)];                           // selected row 5
  d_keys.upload(keys);
  const gpu::KeyMismatches bad = gpu::count_block_key_mismatches(d_dense.get(), ld, d_len.get(), nrows, row0, max_len,
                                                                 d_keys.get(), ld_keys);
  CHECK(bad.count == 2);
  CHECK(bad.row == 5);
  CHECK(bad.block == 1);
}

TEST_CASE("block amax: more than 65535 rows are launched in pieces; a wrong key past row 65535 is located") {
  // grid.y is limited to 65535 rows a launch: 70000 short rows (1..5 blocks) cross the first piece.
  const int row0 = 2, nrows = 70000, max_len = 40;
  const int64_t ld = 40, ld_keys = 8;
  std::mt19937 rng(23);
  std::uniform_int_distribution<int> length(8, max_len);
  std::uniform_real_distribution<float> mag(0.5f, 4.f);
  std::vector<int32_t> lens(size_t(row0 + nrows), 0);
  std::vector<float> dense(size_t(nrows * ld), 0.f);
  for (int i = 0; i < nrows; ++i) {
    lens[size_t(row0 + i)] = length(rng);
    for (int p = 0; p < lens[size_t(row0 + i)]; ++p) dense[size_t(i * ld + p)] = rng() % 2 ? mag(rng) : -mag(rng);
  }
  std::vector<int32_t> rows(static_cast<size_t>(nrows));  // every row, newest first
  for (int j = 0; j < nrows; ++j) rows[size_t(j)] = row0 + nrows - 1 - j;
  gpu::DeviceBuffer<float> d_dense, d_keys(size_t(nrows * ld_keys));
  gpu::DeviceBuffer<int32_t> d_len, d_rows;
  d_dense.upload(dense);
  d_len.upload(lens);
  d_rows.upload(rows);
  // The first row whose keys differ from ref::block_keys, or -1.
  auto first_wrong_row = [&](const std::vector<float>& keys) {
    for (int i = 0; i < nrows; ++i) {
      const std::vector<float> want = ref::block_keys(dense.data() + i * ld, lens[size_t(row0 + i)]);
      for (size_t b = 0; b < want.size(); ++b)
        if (ref::float_bits(keys[size_t(i * ld_keys) + b]) != ref::float_bits(want[b])) return i;
    }
    return -1;
  };
  for (const int32_t* list : std::initializer_list<const int32_t*>{d_rows.get(), nullptr}) {
    INFO((list ? "listed rows" : "all rows of the chunk"));
    d_keys.fill_bytes(0xFF, d_keys.size());
    gpu::launch_block_amax(d_dense.get(), ld, d_len.get(), list, nrows, row0, max_len, d_keys.get(), ld_keys);
    CHECK(first_wrong_row(d_keys.to_host(d_keys.size())) == -1);
  }
  const gpu::KeyMismatches none = gpu::count_block_key_mismatches(d_dense.get(), ld, d_len.get(), nrows, row0,
                                                                  max_len, d_keys.get(), ld_keys);
  CHECK(none.count == 0);
  // Two wrong keys, both in the second piece: both counted, the earlier one named.
  std::vector<float> keys = d_keys.to_host(d_keys.size());
  keys[size_t(69999 * ld_keys)] = -keys[size_t(69999 * ld_keys)];
  keys[size_t(66000 * ld_keys)] = -keys[size_t(66000 * ld_keys)];
  d_keys.upload(keys);
  const gpu::KeyMismatches bad = gpu::count_block_key_mismatches(d_dense.get(), ld, d_len.get(), nrows, row0,
                                                                 max_len, d_keys.get(), ld_keys);
  CHECK(bad.count == 2);
  CHECK(bad.row == row0 + 66000);
  CHECK(bad.block == 0);
}
#endif
