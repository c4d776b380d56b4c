// Census of the dense wgmma route's plans on a generated batch, on the host: per layer, how many
// rows need no multiply (mode 0), a multiply before group 3 only (mode 1) or earlier (mode 2),
// and how many mode-1 rows fit one multiplier 2^K for all their heads (gpu/prep's uniform plan,
// kUniformClass): group shifts in 0..3, and with value-aware shifts (down by the values'
// trailing zero bits, up by their headroom). It replays the prep's exponent and bound
// conditions, not its weight conditions. A measuring aid, not part of the build:
//   cmake --build build --target dsa_generate
//   g++ -std=c++17 -O2 -I. -Iinclude bench/micro/dense_census.cpp build/libdsa_generate.a \
//       build/libdsa_reference.a build/libdsa_core.a -fopenmp -o /tmp/dense_census
//   /tmp/dense_census chunk-256k            # preset [rows per request]
// Session 22's record (bench/results/h200.md, run 144): chunk-256k's source layer, 16384 rows:
// 14965 mode 1, 1419 mode 2; 10332 fit one K with shifts in 0..3 (K 1: 7292, K 2: 3040), 13907
// with value-aware shifts (K 1: 10801, K 2: 3106; the prep's notes in run 146 count 14906, with
// the rows that also multiply before groups 1-2 per head).
// Session 25's record (f46c093, value-aware shifts landed): of the 1478 source rows the uniform
// plan leaves to per-head plans, value-aware per-head shifts would move 77 from a multiply before
// groups 1-2 to one before group 3 (343 keep the early multiply, 1058 stay on one before group
// 3): about 0.2 % of the kernel's instructions, so the per-head plans keep shifts 0..3.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>

#include "bench/micro/census_common.hpp"
#include "harness/generate/generate.hpp"

using namespace dsa;

namespace {
using census::group_sum;
// 0: all four groups within 3 binades; 1: groups 0-2 within 3, group 3 below (m = m012 - e3); 2: other.
int head_mode(const uint8_t* sc, int* m) {
  int e[4];
  for (int g = 0; g < 4; ++g) e[g] = sc[g];
  const int m012 = std::min({e[0], e[1], e[2]}), top012 = std::max({e[0], e[1], e[2]});
  *m = 0;
  if (std::max(top012, e[3]) - std::min(m012, e[3]) <= 3) return 0;
  if (top012 - m012 <= 3 && e[3] < m012) {
    *m = m012 - e[3];
    return 1;
  }
  return 2;
}
// The shift range of group g that keeps its values int8 and integral: [-tz, hr].
void shift_range(const uint8_t* packed, int g, int* lo, int* hi) {
  int mx = 0, tz = 9;
  for (int d = 0; d < 32; ++d) {
    const int v = census::twice_magnitude(packed, g, d);
    if (v == 0) continue;
    mx = std::max(mx, v);
    tz = std::min(tz, __builtin_ctz(v));
  }
  if (mx == 0) { *lo = -30; *hi = 30; return; }
  int f = 0;
  while ((mx << (f + 1)) <= 127) ++f;
  *lo = -tz;
  *hi = f;
}
long group_sum_f(const uint8_t* packed, int g, int f) {
  return f >= 0 ? group_sum(packed, g, f) : group_sum(packed, g, 0) >> -f;
}
// Each group's shift range: 0..3 as the prep takes it, or the value-aware range (shift_range).
struct Ranges {
  int lo[4], hi[4];
};
Ranges shift_ranges(const uint8_t* q, bool value_aware) {
  Ranges r;
  for (int g = 0; g < 4; ++g) {
    r.lo[g] = 0, r.hi[g] = 3;
    if (value_aware) shift_range(q, g, &r.lo[g], &r.hi[g]);
  }
  return r;
}
// Whether the head folds without a multiply when shifts may use the values' trailing zeros and headroom.
bool head_folds_wide(const uint8_t* q, const uint8_t* sc) {
  const Ranges rg = shift_ranges(q, true);
  int blo = -1000, bhi = 1000;
  for (int g = 0; g < 4; ++g) {
    blo = std::max(blo, int(sc[g]) - rg.hi[g]);
    bhi = std::min(bhi, int(sc[g]) - rg.lo[g]);
  }
  for (int B = blo; B <= bhi; ++B) {
    long bound = 0;
    for (int g = 0; g < 4; ++g) bound += group_sum_f(q, g, int(sc[g]) - B);
    if (bound * 96 < (1L << 24)) return true;
  }
  return false;
}
// Whether the head fits accumulator * 2^K before group 3 with its groups' shifts in range.
bool head_fits_k(const uint8_t* q, const uint8_t* sc, const Ranges& r, int K) {
  for (int s3 = r.lo[3]; s3 <= r.hi[3]; ++s3) {
    bool ok = true;
    long bound = group_sum_f(q, 3, s3);
    for (int g = 0; g < 3 && ok; ++g) {
      const int s = int(sc[g]) - int(sc[3]) + s3 - K;
      ok = s >= r.lo[g] && s <= r.hi[g];
      if (ok) bound += group_sum_f(q, g, s) << K;
    }
    if (ok && bound * 96 < (1L << 24)) return true;
  }
  return false;
}
// A head's per-head plan with value-aware shifts: 0 no multiply, 1 a multiply before group 3
// (its own K), 2 neither (a multiply before group 1 or 2 stays needed).
int head_mode_wide(const uint8_t* q, const uint8_t* sc) {
  if (head_folds_wide(q, sc)) return 0;
  const Ranges r = shift_ranges(q, true);
  for (int K = 1; K <= 20; ++K)
    if (head_fits_k(q, sc, r, K)) return 1;
  return 2;
}
// The smallest K in 1..20 that every head of row r fits, 0 when none does.
int row_k(const Layer& layer, int r, bool value_aware) {
  for (int K = 1; K <= 20; ++K) {
    bool all = true;
    for (int h = 0; h < kHeads && all; ++h) {
      const uint8_t* q = layer.q_row(r) + h * kPackedDim;
      all = head_fits_k(q, layer.scale_row(r) + h * kScaleGroups, shift_ranges(q, value_aware), K);
    }
    if (all) return K;
  }
  return 0;
}
}  // namespace

int main(int argc, char** argv) {
  GenerateOptions o;
  o.preset = argc > 1 ? argv[1] : "chunk-256k";
  if (argc > 2) o.rows_per_request = std::atoi(argv[2]);
  const Batch b = generate_batch(o);
  for (const Layer& layer : b.layers) {
    const int R = int(layer.weights.size() / kHeads);
    long modes[3] = {}, uniform = 0;
    std::map<int, long> kcount, kcount_wide, spread;
    long heads1 = 0, wide_rows = 0, uniform_wide = 0;
    std::map<int, long> mdist;
    // The rows the uniform plan (value-aware) leaves to per-head plans: [their mode with shifts
    // 0..3 (head_mode)][with value-aware per-head shifts (head_mode_wide)].
    long left[3][3] = {};
    for (int r = 0; r < R; ++r) {
      int mode = 0, mlo = 99, mhi = -1;
      bool wide_all = true;
      for (int h = 0; h < kHeads; ++h)
        wide_all = wide_all && head_folds_wide(layer.q_row(r) + h * kPackedDim, layer.scale_row(r) + h * kScaleGroups);
      wide_rows += wide_all;
      for (int h = 0; h < kHeads; ++h) {
        int m = 0;
        const int hm = head_mode(layer.scale_row(r) + h * kScaleGroups, &m);
        mode = std::max(mode, hm);
        if (hm == 1) {
          ++heads1;
          ++mdist[m];
          mlo = std::min(mlo, m);
          mhi = std::max(mhi, m);
        }
      }
      ++modes[mode];
      const int k_wide = row_k(layer, r, true);
      if (k_wide == 0) {
        int mode_wide = 0;
        for (int h = 0; h < kHeads; ++h)
          mode_wide = std::max(mode_wide, head_mode_wide(layer.q_row(r) + h * kPackedDim,
                                                         layer.scale_row(r) + h * kScaleGroups));
        ++left[mode][mode_wide];
      }
      if (mode != 1) continue;
      if (k_wide) {
        ++uniform_wide;
        ++kcount_wide[k_wide];
      }
      ++spread[mhi - mlo];
      if (const int K = row_k(layer, r, false)) {
        ++uniform;
        ++kcount[K];
      }
    }
    std::printf("layer %d: rows off the uniform plan, mode with shifts 0..3 -> with value-aware per-head shifts:",
                layer.id);
    for (int a = 0; a < 3; ++a)
      for (int c = 0; c < 3; ++c)
        if (left[a][c]) std::printf(" %d->%d: %ld", a, c, left[a][c]);
    std::printf("\n");
    std::printf("layer %d (%s): %d rows: mode0 %ld mode1 %ld mode2 %ld; mode1 rows with one K for all heads: %ld\n",
                layer.id, role_name(layer.role), R, modes[0], modes[1], modes[2], uniform);
    std::printf("  rows whose every head folds with value-aware shifts: %ld\n", wide_rows);
    std::printf("  mode-1 rows with one K, value-aware shifts: %ld\n", uniform_wide);
    std::printf("  K:");
    for (auto& [k, n] : kcount) std::printf(" %d:%ld", k, n);
    std::printf("\n  K, value-aware shifts:");
    for (auto& [k, n] : kcount_wide) std::printf(" %d:%ld", k, n);
    std::printf("\n  spread of m over a mode-1 row's mode-1 heads:");
    for (auto& [k, n] : spread) std::printf(" %d:%ld", k, n);
    std::printf("\n  m of mode-1 heads (%ld):", heads1);
    for (auto& [k, n] : mdist) std::printf(" %d:%ld", k, n);
    std::printf("\n");
  }

  return 0;
}
