// gpu/dense_logits/wide_keys: the per-request key facts (exponent range, the ascending list of
// 8-position groups holding a wide key) against a host scan, on requests built for the kernel's
// branches: lengths not a multiple of 8, more wide groups than one round of the block holds, a
// request without wide keys, one without any folded key, an empty one, requests packed with gaps.
// ctest -L gpu; exits 77 without a GPU.
#if DSA_HAVE_CUDA
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "gpu/common/device_buffer.cuh"
#include "gpu/dense_logits/wide_keys.cuh"
#include "tests/catch.hpp"

using namespace dsa;

namespace {

struct Request {
  int lc;
  double wide_share;  // chance that a key is wide (kscale 0)
};

float key_scale(int fmin) { return std::ldexp(1.0f, fmin - 128); }  // 2^(fmin - 128), as the key prep writes it

}  // namespace

TEST_CASE("request key facts: exponent ranges and wide-key groups equal a host scan") {
  const std::vector<Request> reqs = {{16411, 0.004}, {8 * 256 * 3 + 5, 0.5}, {9000, 0.0}, {77, 1.0},
                                     {0, 0.0},       {1, 0.0},               {12345, 0.02}};
  std::mt19937 rng(5);
  std::uniform_int_distribution<int> exp_dist(90, 160);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  std::vector<int64_t> start;
  std::vector<int32_t> lc;
  std::vector<float> kscale;
  for (const Request& r : reqs) {
    kscale.resize(kscale.size() + 3, 0.5f);  // a gap between requests, never read
    start.push_back(int64_t(kscale.size()));
    lc.push_back(r.lc);
    for (int j = 0; j < r.lc; ++j) kscale.push_back(u(rng) < r.wide_share ? 0.0f : key_scale(exp_dist(rng)));
  }
  kscale.resize(kscale.size() + 8, 0.0f);
  const int nreq = int(reqs.size());
  const int64_t ncols = int64_t(kscale.size());

  gpu::DeviceBuffer<float> d_kscale;
  gpu::DeviceBuffer<int64_t> d_start;
  gpu::DeviceBuffer<int32_t> d_lc, d_count(static_cast<size_t>(nreq)), d_list(static_cast<size_t>(gpu::wide_list_capacity(ncols, nreq)));
  gpu::DeviceBuffer<int2> d_range(static_cast<size_t>(nreq));
  d_kscale.upload(kscale);
  d_start.upload(start);
  d_lc.upload(lc);
  gpu::launch_request_keys(d_kscale.get(), d_start.get(), d_lc.get(), nreq, d_range.get(), d_count.get(), d_list.get());
  std::vector<int32_t> count(static_cast<size_t>(nreq)), list(d_list.size());
  std::vector<int2> range(static_cast<size_t>(nreq));
  d_count.download(count.data(), count.size());
  d_list.download(list.data(), list.size());
  d_range.download(range.data(), range.size());

  for (int b = 0; b < nreq; ++b) {
    INFO("request " << b << " (lc " << lc[size_t(b)] << ")");
    std::vector<int32_t> groups;
    int lo = 1 << 20, hi = -(1 << 20);
    for (int j = 0; j < lc[size_t(b)]; ++j) {
      const float v = kscale[size_t(start[size_t(b)] + j)];
      if (v == 0.0f) {
        if (groups.empty() || groups.back() != j / 8) groups.push_back(j / 8);
        continue;
      }
      const int fmin = std::ilogb(v) + 128;
      lo = std::min(lo, fmin);
      hi = std::max(hi, fmin);
    }
    if (lo > hi) lo = hi = 127;
    CHECK(range[size_t(b)].x == lo);
    CHECK(range[size_t(b)].y == hi);
    REQUIRE(count[size_t(b)] == int32_t(groups.size()));
    const int64_t off = gpu::wide_list_offset(start[size_t(b)], b);
    for (size_t i = 0; i < groups.size(); ++i) {
      INFO("list entry " << i);
      REQUIRE(list[size_t(off) + i] == groups[i]);
    }
  }
  CHECK(*std::max_element(count.begin(), count.end()) > 256);  // a request took several rounds
}

#endif
