// Route census of a generated batch's consumer rows on the host: how many rows the query prep
// (gpu/prep/prep.cu, split_vector and prep_vector's fast test) admits to the sparse split route,
// how many more it would admit with a doubled group (a head whose groups 0-2 span 4 binades,
// bench/results/attempts/sparse-doubled-group-unverified.diff), and how many stay off. It
// replays the prep's exponent and bound conditions on the generator's rows, without a GPU
// (folds_into_weight is not replayed: the generator's weights always fold). A measuring aid, not
// part of the build:
//   cmake --build build --target dsa_generate
//   g++ -std=c++17 -O2 -I. -Iinclude bench/micro/route_census.cpp build/libdsa_generate.a \
//       build/libdsa_reference.a build/libdsa_core.a -fopenmp -o /tmp/route_census
//   /tmp/route_census chunk-256k 4096      # preset, rows per request
// Run 90's record (bench/results/h200.md): 16384 rows, 14502 plain, 1827 doubled, 55 off.
// It also counts the split rows whose folded weights w' = bf16(w) 2^(emin - 128) leave the range
// [-81, 52] of exponents that the query prep admits (weights_scale_last, gpu/prep/prep.cu), and
// the split rows where group 3 is the lowest group of every head (mB = 1: the split route could
// then keep one accumulator and multiply it in place before group 3, as the dense kernel does;
// run 102's record: 0 of chunk-256k's 16329).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "bench/micro/census_common.hpp"
#include "harness/generate/generate.hpp"
#include "reference/formats.hpp"

using namespace dsa;

namespace {
using census::group_sum;

// The split route's verdict on one head: -2 off, -1 plain, g when group g is doubled;
// *group3_lowest: whether group 3's exponent is the head's minimum.
int head_route(const uint8_t* packed, const uint8_t* scales, bool* group3_lowest) {
  int e[4];
  for (int g = 0; g < 4; ++g) e[g] = scales[g];
  const int emin = *std::min_element(e, e + 4), emax = *std::max_element(e, e + 4);
  const bool fast = emax - emin <= 12 && emin - 128 >= -45 && emin - 128 <= 45;
  const int m = std::min({e[0], e[1], e[2]}), span = std::max({e[0], e[1], e[2]}) - m, base = std::min(m, e[3]);
  int fours = 0, doubled = -1;
  for (int g = 0; g < 3; ++g)
    if (e[g] - m == 4) ++fours, doubled = g;
  *group3_lowest = e[3] == base;
  if (!fast || span > 4 || fours > 1 || m - base > 12 || e[3] - base > 12) return -2;
  long bound = group_sum(packed, 3, 0) << (e[3] - base);
  for (int g = 0; g < 3; ++g) bound += group_sum(packed, g, e[g] - m) << (m - base);
  return bound * 96 < (1L << 23) ? doubled : -2;
}

// Whether every nonzero folded weight of row r has its exponent in [-81, 52] (prep.cu's
// weights_scale_last in the attempt).
bool weights_in_range(const Layer& layer, int r) {
  for (int h = 0; h < kHeads; ++h) {
    const uint8_t* sc = layer.scale_row(r) + h * kScaleGroups;
    const int emin = *std::min_element(sc, sc + kScaleGroups);
    const float w = ref::bf16_to_float(ref::bf16_rne(layer.weight_row(r)[h]));
    if (w == 0.0f) continue;
    const int e = std::ilogb(w) + emin - 128;
    if (e < -81 || e > 52) return false;
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: route_census PRESET ROWS_PER_REQUEST\n");
    return 2;
  }
  GenerateOptions o;
  o.preset = argv[1];
  o.rows_per_request = std::atoi(argv[2]);
  const Batch b = generate_batch(o);
  long rows = 0, plain = 0, doubled = 0, off = 0, out_of_range = 0, group3_low = 0;
  for (const Layer& layer : b.layers) {
    if (layer.id == b.source_layer) continue;
    const int R = int(layer.weights.size() / kHeads);
    for (int r = 0; r < R; ++r, ++rows) {
      int group = -1;
      bool ok = true, low = true;
      for (int h = 0; h < kHeads && ok; ++h) {
        bool lowest = false;
        const int v = head_route(layer.q_row(r) + h * kPackedDim, layer.scale_row(r) + h * kScaleGroups, &lowest);
        low = low && lowest;
        ok = v != -2 && !(v >= 0 && group >= 0 && v != group);  // one doubled group a row
        if (v >= 0) group = v;
      }
      (!ok ? off : group >= 0 ? doubled : plain) += 1;
      if (ok && !weights_in_range(layer, r)) ++out_of_range;
      if (ok && low) ++group3_low;
    }
  }
  std::printf("%s: %ld consumer rows: %ld plain split, %ld with a doubled group, %ld off the route; "
              "%ld split rows with a folded weight outside 2^-81 .. 2^52; %ld split rows with group 3 lowest in "
              "every head\n",
              argv[1], rows, plain, doubled, off, out_of_range, group3_low);
  return 0;
}
