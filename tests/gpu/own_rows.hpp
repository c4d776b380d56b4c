#pragma once
// Dense rows for the source's own top-k tests (test_gpu_topk, test_gpu_source_select): row 0 all
// equal, row 3 one far outlier (the k-th key lies far below the row's largest, outside a
// selection's first window), row 4 few values (ties everywhere), row 5 all negative, the others
// distinct with a slow ramp; each row's candidate count under level one (valid_len).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "core/constants.hpp"
#include "reference/selection.hpp"

namespace dsa::test {

struct OwnRows {
  std::vector<int> lens;
  int max_len = 0;
  int64_t ld = 0, ld_keys = 0;  // dense row stride (positions), block key row stride
  std::vector<float> dense;     // [rows][ld]
  std::vector<int32_t> valid;   // [rows]
};

inline OwnRows own_rows(const std::vector<int>& lens, unsigned seed) {
  OwnRows o;
  o.lens = lens;
  o.max_len = *std::max_element(lens.begin(), lens.end());
  o.ld = (o.max_len + 7) / 8 * 8;
  o.ld_keys = ((o.max_len + 7) / 8 + 3) / 4 * 4;
  const int nrows = int(lens.size());
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.f, 1.f);
  o.dense.assign(size_t(nrows * o.ld), 0.f);
  for (int r = 0; r < nrows; ++r)
    for (int i = 0; i < lens[size_t(r)]; ++i) {
      float& v = o.dense[size_t(r * o.ld + i)];
      if (r == 0) v = 1.f;                                  // all equal
      else if (r == 4) v = std::floor(normal(rng) * 2.f);   // few values: ties everywhere
      else if (r == 3 && i == 100) v = 1e30f;               // far outlier
      else if (r == 5) v = -std::fabs(normal(rng)) - 0.001f * float(i % 1000);  // all negative
      else v = normal(rng) + 0.001f * float(i % 1000);
    }
  o.valid.resize(size_t(nrows));
  for (int r = 0; r < nrows; ++r) {
    const int64_t kept = std::min<int64_t>(ref::block_count(lens[size_t(r)]), kTopkBlocks);
    o.valid[size_t(r)] = int32_t(ref::valid_len_of(kept, lens[size_t(r)]));
  }
  return o;
}

}  // namespace dsa::test
