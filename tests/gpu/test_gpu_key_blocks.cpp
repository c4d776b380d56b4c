// gpu/prep/key_blocks: both layouts of the key records (the mma.sync fragments, the pair order
// both wgmma kernels read) and the block scales, byte for byte against a host model built from key_blocks.cuh's definitions, over two requests whose last
// blocks are partial. ctest -L gpu; exits 77 without a GPU.
#if DSA_HAVE_CUDA
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "gpu/common/device_buffer.cuh"
#include "gpu/prep/key_blocks.cuh"
#include "tests/catch.hpp"

using namespace dsa;

namespace {

// Word i (dims 4i..4i+3) of position pos's key, or 0 past the request's end.
uint32_t key_word(const std::vector<int8_t>& ks, int64_t start, int len, int pos, int i) {
  if (pos >= len) return 0;
  uint32_t w;
  std::memcpy(&w, ks.data() + (start + pos) * 128 + 4 * i, 4);
  return w;
}

uint32_t record_word(const std::vector<int8_t>& rec, int64_t b, int word) {
  uint32_t w;
  std::memcpy(&w, rec.data() + b * gpu::kKeyBlockBytes + 4 * word, 4);
  return w;
}

}  // namespace

TEST_CASE("key blocks: the two record layouts and the scales of partial and full blocks") {
  const std::vector<int32_t> lens = {13, 30};  // blocks 0-1 and 2-5; both last blocks partial
  const std::vector<int64_t> start = {0, 13};
  std::vector<int64_t> req_blk;
  const int64_t nblk = gpu::key_block_starts(lens, req_blk);
  REQUIRE(nblk == 6);
  std::mt19937 rng(5);
  std::uniform_int_distribution<int> byte(-96, 96);
  std::vector<int8_t> ks(size_t(43 * 128));
  for (int8_t& v : ks) v = int8_t(byte(rng) | 1);  // odd: never zero
  std::vector<float> kscale(43);
  for (size_t i = 0; i < kscale.size(); ++i) kscale[i] = i % 7 == 3 ? 0.f : float(1 << (i % 5));
  gpu::DeviceBuffer<int8_t> d_ks, frag(size_t(nblk * gpu::kKeyBlockBytes)), pair(frag.size());
  gpu::DeviceBuffer<float> d_kscale, scale(size_t(nblk * 8));
  gpu::DeviceBuffer<int64_t> d_start, d_blk;
  gpu::DeviceBuffer<int32_t> d_len;
  d_ks.upload(ks);
  d_kscale.upload(kscale);
  d_start.upload(start);
  d_blk.upload(req_blk);
  d_len.upload(lens);
  for (auto* buf : {&frag, &pair}) buf->fill_bytes(0x5A, buf->size());
  scale.fill_bytes(0x5A, scale.size());
  gpu::launch_key_blocks(d_ks.get(), d_kscale.get(), d_start.get(), d_len.get(), d_blk.get(), 2, 30,
                         {frag.get(), pair.get(), scale.get()});
  const std::vector<int8_t> f = frag.to_host(frag.size()), p = pair.to_host(pair.size());
  const std::vector<float> sc = scale.to_host(scale.size());
  for (int r = 0; r < 2; ++r)
    for (int blk = 0; blk < (lens[size_t(r)] + 7) / 8; ++blk) {
      const int64_t b = req_blk[size_t(r)] + blk;
      for (int g = 0; g < 8; ++g) {
        const int pos = blk * 8 + g;
        INFO("request " << r << ", block " << blk << ", key " << g);
        const float want_scale = pos < lens[size_t(r)] ? kscale[size_t(start[size_t(r)] + pos)] : 1.f;
        CHECK(sc[size_t(b * 8 + g)] == want_scale);
        for (int t = 0; t < 4; ++t)
          for (int k = 0; k < 4; ++k)
            for (int h = 0; h < 2; ++h) {
              // Dims 32k + 16h + 4t.. of key g: word 8k + 4h + t of the key.
              const uint32_t want = key_word(ks, start[size_t(r)], lens[size_t(r)], pos, 8 * k + 4 * h + t);
              INFO("lane " << 4 * g + t << ", k-step " << k << ", half " << h);
              const int lane = 4 * g + t, idx = 2 * k + h;  // fragments: [idx / 4][lane][idx % 4]
              CHECK(record_word(f, b, (idx / 4) * 128 + lane * 4 + idx % 4) == want);
              CHECK(record_word(p, b, (16 * k + gpu::pair_slot(g / 2, t)) * 4 + 2 * h + g % 2) == want);
            }
      }
    }
}
#endif
