#include "gpu/common/check.cuh"
#include "gpu/common/fp4_mma.cuh"
#include "gpu/common/bf16.cuh"
#include "gpu/common/swizzle.cuh"
#include "gpu/dense_logits/dense_wgmma.cuh"
#include "gpu/prep/prep.cuh"

namespace dsa::gpu {
namespace {

// A vector's group exponents (4 ue8m0 bytes, group g in byte g) and what follows from them: the
// shifted form folds the groups into their minimum exponent when they span <= 3 (else it is the
// raw form again); the fast path needs span <= max_span and the minimum within 2^+-45 of 1 (see
// fp4_mma.cuh), its scale is 2^(E_min - 128), 0 for the generic path.
struct VectorExps {
  uint32_t packed;
  int emin, emax;
  __device__ explicit VectorExps(uint32_t word) : packed(word) {
    emin = min(min(group_exp(0), group_exp(1)), min(group_exp(2), group_exp(3)));
    emax = max(max(group_exp(0), group_exp(1)), max(group_exp(2), group_exp(3)));
  }
  // Byte g by shifts, not an array: g is a thread's group in key_prep_kernel (no local memory).
  __device__ int group_exp(int g) const { return int((packed >> (8 * g)) & 0xFFu); }
  __device__ int shift(int g) const { return emax - emin <= 3 ? group_exp(g) - emin : 0; }
  __device__ float fast_scale(int max_span) const {
    const bool fast = emax - emin <= max_span && emin - 128 >= -45 && emin - 128 <= 45;
    return fast ? __int_as_float((emin - 128 + 127) << 23) : 0.0f;
  }
};

__device__ __forceinline__ uint32_t load_u32(const uint8_t* p) {
  uint32_t word;
  memcpy(&word, p, 4);  // 4-byte aligned: pool entries are 64 + 4 bytes, query rows 64
  return word;
}

// The 16 packed bytes of one group (32 dims), as words.
struct GroupWords {
  uint32_t w[4];
};

// A query head's 64 packed bytes, loaded once (16-byte aligned: rows of 64 bytes).
struct PackedVector {
  uint32_t w[16];
  __device__ explicit PackedVector(const uint8_t* p) {
    const uint4* v = reinterpret_cast<const uint4*>(p);
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      const uint4 x = v[k];
      w[4 * k] = x.x, w[4 * k + 1] = x.y, w[4 * k + 2] = x.z, w[4 * k + 3] = x.w;
    }
  }
  // Group g by selects, not an index: g is a runtime value in wgmma_vector (no local memory).
  __device__ GroupWords group(int g) const {
    GroupWords r;
#pragma unroll
    for (int k = 0; k < 4; ++k) r.w[k] = g == 0 ? w[k] : g == 1 ? w[4 + k] : g == 2 ? w[8 + k] : w[12 + k];
    return r;
  }
};

// Where a vector's 128-byte int8 row goes, 16 bytes (chunk 0..7) at a time: straight to memory
// (the key prep: four threads a key write a row whole), or into a warp's staging tile of 32 rows
// (the query prep: a lane a head), swizzled so that a store of the 32 lanes and the copy out
// (flush_rows) each take 4 wavefronts.
struct GlobalRow {
  int8_t* p;
  __device__ void put(int chunk, uint4 v) const { reinterpret_cast<uint4*>(p)[chunk] = v; }
};
struct StagedRow {
  uint8_t* tile;  // [32][128]
  int h;
  __device__ void put(int chunk, uint4 v) const {
    *reinterpret_cast<uint4*>(tile + swizzled_offset(h, chunk)) = v;
  }
};
// The warp's staged tile to dst's 4 KiB (row h of the tile at dst + 128 h), whole lines.
__device__ __forceinline__ void flush_rows(const uint8_t* tile, int8_t* dst) {
  __syncwarp();
  const int lane = threadIdx.x & 31;
#pragma unroll
  for (int k = 0; k < 8; ++k) {
    const int n = lane + 32 * k, h = n >> 3;
    reinterpret_cast<uint4*>(dst)[n] = *reinterpret_cast<const uint4*>(tile + swizzled_offset(h, n & 7));
  }
  __syncwarp();
}

// One group as int8 values through `lut`: 8 words of 4.
__device__ __forceinline__ void unpack_lut(const GroupWords& p, const Fp4Lut& lut, uint32_t (&v)[8]) {
#pragma unroll
  for (int w = 0; w < 4; ++w) unpack8(p.w[w], lut, v[2 * w], v[2 * w + 1]);
}
// One group as int8 values shifted left by `shift` (<= 3).
__device__ __forceinline__ void unpack_group(const GroupWords& p, int shift, uint32_t (&v)[8]) {
  unpack_lut(p, fp4_lut(shift), v);
}

// The magnitudes of a group's 32 int8 values: their sum, largest and bitwise or.
struct Magnitudes {
  int sum, max, bits;
};
__device__ __forceinline__ Magnitudes magnitudes(const uint32_t (&v)[8]) {
  Magnitudes m{0, 0, 0};
  for (int w = 0; w < 8; ++w)
    for (int k = 0; k < 4; ++k) {
      const int a = abs(int(int8_t(v[w] >> (8 * k))));
      m.sum += a;
      m.max = max(m.max, a);
      m.bits |= a;
    }
  return m;
}

template <class Row>
__device__ __forceinline__ void put_group(const Row& row, int g, const uint32_t (&v)[8]) {
  row.put(2 * g, make_uint4(v[0], v[1], v[2], v[3]));
  row.put(2 * g + 1, make_uint4(v[4], v[5], v[6], v[7]));
}

// Group g as int8, shifted left by `shift` into the shifted row and unshifted into the raw row.
template <class Row>
__device__ __forceinline__ void prep_group(const GroupWords& p, int g, int shift, const Row& shifted, const Row& raw) {
  uint32_t v[8];
  unpack_group(p, shift, v);
  put_group(shifted, g, v);
  unpack_group(p, 0, v);
  put_group(raw, g, v);
}

// Four threads a key, one group each: a warp reads 8 keys' 512 contiguous payload bytes and writes
// their 1 KiB of shifted rows and 1 KiB of raw rows whole (a thread a key wrote 16 bytes of 32
// different lines an instruction: 36 % of the HBM floor on decode, run 92).
constexpr int kKeyPrepThreads = 256;
__global__ void key_prep_kernel(KeyPrepArgs a) {
  const int b = blockIdx.y, g = threadIdx.x & 3;
  const int64_t j = (int64_t(blockIdx.x) * kKeyPrepThreads + threadIdx.x) >> 2;
  if (j >= a.lc[b]) return;
  const int P = a.page_size;
  const int64_t page = a.table[int64_t(b) * a.table_width + j / P];
  const uint8_t* base = a.pool + page * P * 68;
  const int64_t off = j % P;
  const int64_t col = a.start[b] + j;
  const VectorExps v(load_u32(base + int64_t(P) * 64 + off * 4));
  GroupWords p;
  for (int w = 0; w < 4; ++w) p.w[w] = load_u32(base + off * 64 + 16 * g + 4 * w);
  prep_group(p, g, v.shift(g), GlobalRow{a.ks + col * 128}, GlobalRow{a.kr + col * 128});
  if (g == 0) {
    a.kexp[col] = v.packed;
    a.kscale[col] = v.fast_scale(3);
  }
}

// Group g of a query head as int8 2*values shifted left by `shift` (<= 3) into its row; returns
// the sum of their magnitudes.
template <class Row>
__device__ int fold_group(const PackedVector& q, int g, int shift, const Row& out) {
  uint32_t v[8];
  unpack_group(q.group(g), shift, v);
  put_group(out, g, v);
  return magnitudes(v).sum;
}

// The split form of one query head (fp4_mma.cuh, "the split route"): groups 0-2 shifted to
// their minimum exponent, group 3 raw, multipliers {mA, mB}. Returns whether the head can take
// the route: groups 0-2 within 3 binades and |S| < 2^23 for any key (key values <= 96).
// A group 4 binades above the lowest of groups 0-2 would overflow int8 shifted by 4; it is stored
// shifted by 3 and *doubled names it: the sparse wgmma kernel adds it twice, as one more k-step
// (sparse_wgmma.cu, "the doubled group"). At most one group may need it; -1 when none does.
template <class Row>
__device__ bool split_vector(const PackedVector& q, const VectorExps& x, const Row& out, int2* mul, int* doubled) {
  int e[4];
  for (int g = 0; g < 4; ++g) e[g] = x.group_exp(g);
  const int m012 = min(min(e[0], e[1]), e[2]);
  const int span012 = max(max(e[0], e[1]), e[2]) - m012;
  const int base = min(m012, e[3]);
  const int fours = int(e[0] - m012 == 4) + int(e[1] - m012 == 4) + int(e[2] - m012 == 4);
  const bool shape_ok = span012 <= 4 && fours <= 1 && m012 - base <= 12 && e[3] - base <= 12;
  const int ma = shape_ok ? 1 << (m012 - base) : 0, mb = shape_ok ? 1 << (e[3] - base) : 0;
  *mul = make_int2(ma, mb);
  *doubled = -1;
  int64_t bound = 0;  // sum over dims of |q'| * multiplier (a doubled group twice), times 96 below
  for (int g = 0; g < 4; ++g) {
    const int f = g < 3 && shape_ok ? e[g] - m012 : 0;
    if (f == 4) *doubled = g;
    bound += int64_t(fold_group(q, g, min(f, 3), out)) * (f == 4 ? 2 : 1) * (g < 3 ? ma : mb);
  }
  return shape_ok && bound * 96 < (int64_t(1) << 23);
}

// A Horner plan for one query head's group exponents e (the wgmma form, dense_wgmma.cuh): the
// k-steps run in the row's order (group wgmma_order_group(order, pos) at position pos, group 3
// last) and the accumulator is multiplied by 2^m[pos] before position pos's step (pos = 1..3),
// group g's values shifted left by f[g] <= 3 (int8: |2q| <= 12, so <= 96). The group at position
// pos then weighs 2^(its f + m[pos+1] + .. + m[3]) = 2^(e - base) with base = e[3] - f[3].
// The plans, cheapest first (each multiply costs the kernel a wait and an integer multiply per
// accumulator): none when the four groups span at most 3 binades; m[3] alone when groups 0-2 do
// and group 3 lies below them (either in any order); else a greedy from position 3 down, each m
// as small as the next position's shift allows. Fails when a group lies more than 3 binades below
// the one after it in the order (no f[3] in 0..3 works) or a multiplier passes 2^20.
__device__ bool horner_plan(const int (&e)[4], int order, int (&f)[4], int (&m)[4], int* base) {
  const int m012 = min(min(e[0], e[1]), e[2]), top012 = max(max(e[0], e[1]), e[2]);
  m[0] = m[1] = m[2] = m[3] = 0;
  const bool fold_all = max(top012, e[3]) - min(m012, e[3]) <= 3;
  if (top012 - m012 <= 3 && (fold_all || e[3] < m012)) {
    *base = min(m012, e[3]);
    const int low = fold_all ? *base : m012;  // groups 0-2 shifted from here
    for (int g = 0; g < 3; ++g) f[g] = e[g] - low;
    f[3] = e[3] - *base;
    m[3] = low - *base;
    return m[3] <= 20;
  }
  for (int f3 = 0; f3 <= 3; ++f3) {
    *base = e[3] - f3;
    f[3] = f3;
    int above = 0;  // m[pos+1] + .. + m[3]
    bool ok = true;
    for (int pos = 2; pos >= 0 && ok; --pos) {
      const int g = wgmma_order_group(order, pos);
      const int need = e[g] - *base - above;
      m[pos + 1] = max(0, need - 3);
      above += m[pos + 1];
      f[g] = need - m[pos + 1];
      ok = f[g] >= 0 && m[pos + 1] <= 20;
    }
    if (ok) return true;
  }
  return false;
}

// The wgmma form of one query head under a k-step order: its groups shifted by the Horner plan,
// the plan packed by pack_multipliers with the order (no multiply: m bits 0; most
// heads span at most 3 binades, and the common exception is group 3 far below the others: m[3]
// alone). Returns whether the head fits: |S| < 2^24 for any folded key (values <= 96).
template <class Row>
__device__ bool wgmma_vector(const PackedVector& q, const VectorExps& x, int order, const Row& out, int* mul,
                             int* base) {
  int e[4], f[4], m[4];
  for (int g = 0; g < 4; ++g) e[g] = x.group_exp(g);
  const bool shape_ok = horner_plan(e, order, f, m, base);
  *mul = shape_ok ? pack_multipliers(m[1], m[2], m[3], order) : pack_multipliers(0, 0, 0, order);
  int64_t bound = 0;  // sum over dims of |q'| times the group's weight 2^(f + above), times 96 below
  bool fits = shape_ok;
  int above = shape_ok ? m[1] + m[2] + m[3] : 0;
  for (int pos = 0; pos < 4; ++pos) {
    const int g = wgmma_order_group(order, pos);
    const int sum = fold_group(q, g, shape_ok ? f[g] : 0, out);
    if (sum != 0 && above > 24) fits = false;
    else if (sum != 0) bound += int64_t(sum) << above;
    if (pos < 3 && shape_ok) above -= m[pos + 1];
  }
  return fits && bound * 96 < (int64_t(1) << 24);
}

// The int8 values 2q of a group (e2m1 codes 0..7: 0 1 2 3 4 6 8 12) shifted by any s: right
// shifts exact only for values with that many trailing zero bits, left shifts int8 only up to
// the group's largest value (the entries above it may be wrong: they are never read).
__device__ Fp4Lut fp4_lut_any(int shift) {
  const int vals[8] = {0, 1, 2, 3, 4, 6, 8, 12};
  uint32_t p0 = 0, p1 = 0;
  for (int j = 0; j < 4; ++j) {
    const int a = shift >= 0 ? vals[j] << shift : vals[j] >> -shift;
    const int b = shift >= 0 ? vals[4 + j] << shift : vals[4 + j] >> -shift;
    p0 |= uint32_t(a & 0xFF) << (8 * j);
    p1 |= uint32_t(b & 0xFF) << (8 * j);
  }
  return with_negatives(p0, p1);
}

// Group g of a query head as int8 2q shifted by any s in its exact range (group_stats) into its row.
template <class Row>
__device__ void fold_group_any(const PackedVector& q, int g, int shift, const Row& out) {
  uint32_t v[8];
  unpack_lut(q.group(g), fp4_lut_any(shift), v);
  put_group(out, g, v);
}

// A group's magnitudes 2|q| (sum) and the shifts that keep its values exact int8: down by the
// fewest trailing zero bits of a nonzero value, up while its largest value stays <= 127. An
// all-zero group takes any shift in -3..6.
struct GroupStats {
  int sum, lo, hi;
};
__device__ GroupStats group_stats(const PackedVector& q, int g) {
  uint32_t v[8];
  unpack_group(q.group(g), 0, v);
  const Magnitudes m = magnitudes(v);
  if (m.max == 0) return {0, -3, 6};
  int hi = 0;
  while ((m.max << (hi + 1)) <= 127) ++hi;
  return {m.sum, -(__ffs(m.bits) - 1), hi};
}
__device__ __forceinline__ int64_t shifted(int sum, int s) { return s >= 0 ? int64_t(sum) << s : int64_t(sum >> -s); }

// One multiplier a row (dense_wgmma.cuh, kUniformClass): the accumulator times 2^K before group
// 3 for every head of the row, so the kernel holds one multiplier a thread instead of making 32
// from packed exponents at every step (run 144: the per-head multiply, 64 IMAD and 56 shifts a
// step, costs 12 % of dense_logits). Group g < 3 is shifted by s_g = e_g - e_3 + s_3 - K and group
// 3 by s_3, each within its group's exact int8 range (group_stats: beyond 0..3 where the values'
// trailing zeros or headroom allow), so group g weighs 2^(e_g - base) with base = e_3 - s_3; the
// smallest s_3 that works keeps |S| smallest. Returns whether the head fits (and s_3): the shifts
// in range and |S| < 2^24 for keys up to 96.
__device__ bool uniform_shift3(const VectorExps& x, const GroupStats (&st)[4], int K, int* s3) {
  const int e3 = x.group_exp(3);
  int lo = st[3].lo, hi = st[3].hi;
  for (int g = 0; g < 3; ++g) {
    const int d = x.group_exp(g) - e3;
    lo = max(lo, K + st[g].lo - d);
    hi = min(hi, K + st[g].hi - d);
  }
  if (lo > hi) return false;
  *s3 = lo;
  int64_t bound = shifted(st[3].sum, lo);
  for (int g = 0; g < 3; ++g) bound += shifted(st[g].sum, x.group_exp(g) - e3 + lo - K) << K;
  return bound * 96 < (int64_t(1) << 24);
}

// The multipliers 2^K (K = 1..20, bit K) this head fits under one multiplier a row.
__device__ uint32_t uniform_ks(const GroupStats (&st)[4], const VectorExps& x) {
  uint32_t ks = 0;
  int s3 = 0;
  for (int K = 1; K <= 20; ++K)
    if (uniform_shift3(x, st, K, &s3)) ks |= 1u << K;
  return ks;
}

// This head in the uniform plan with multiplier 2^K (it fits: uniform_ks): its groups shifted
// into the staging tile; returns base.
__device__ int uniform_vector(const PackedVector& q, const VectorExps& x, const GroupStats (&st)[4], int K,
                              const StagedRow& out) {
  int s3 = 0;
  uniform_shift3(x, st, K, &s3);
  const int e3 = x.group_exp(3);
  for (int g = 0; g < 3; ++g) fold_group_any(q, g, x.group_exp(g) - e3 + s3 - K, out);
  fold_group_any(q, 3, s3, out);
  return e3 - s3;
}

// Admits row i to the wgmma route under one plan (this lane's head: its packed multipliers mul,
// base, and whether it fits), with pre-scaled weights w'' = w * 2^(149 + base - 256 - c), c = min
// over heads of (ilogb w + base - 130), so |w''| >= 2^23, when the row's conditions hold
// (dense_wgmma.cuh): every head fits, its scores are exact floats, the reference's products are
// multiples of 2^-149 for the request's keys (c + fmin >= 0), F = 2^(c + fmin) is a normal float,
// nothing overflows. Writes the row (the staged tile, its multipliers, weights and class:
// kUniformClass when `uniform`, else early + 2 order) when it is admitted, or as not admitted when
// `last`; returns whether it wrote.
__device__ bool admit_row(const QueryPrepArgs& a, int i, int64_t dst, const uint8_t* tile, int mul, int base,
                          bool head_ok, int order, bool uniform, bool last) {
  constexpr int kNone = 1 << 29;
  const float w = a.weights[dst];
  const int ew = w != 0.0f && isfinite(w) ? ilogbf(w) : 0;
  const int2 fr = a.req_fexp[a.sel_req[i]];
  const int c = __reduce_min_sync(0xFFFFFFFFu, w != 0.0f ? ew + base - 130 : kNone);
  const int top = __reduce_max_sync(0xFFFFFFFFu, w != 0.0f ? ew + base : -kNone);
  const int k = 149 + base - 256 - c;
  const bool w_ok = isfinite(w) && (w == 0.0f || ew + k <= 126);
  // Head scores S * 2^(base + fmin - 256), |S| < 2^24, are exact normal-or-exact floats.
  const bool s_ok = base + fr.x >= 107 && base + fr.y <= 359;
  const bool row_ok = c != kNone && c + fr.x >= 0 && c + fr.y <= 126 && top + fr.y <= 350;
  const bool all = __all_sync(0xFFFFFFFFu, head_ok && w_ok && s_ok && row_ok);
  if (!all && !last) return false;
  const bool early = __any_sync(0xFFFFFFFFu, multiplies_early(mul));
  flush_rows(tile, a.qw + int64_t(i) * 4096);
  a.qw_mul[dst] = mul;
  a.qw_weight[dst] = all ? ldexpf(w, k) : 0.0f;
  if ((threadIdx.x & 31) == 0) {
    a.row_wgmma[i] = all ? 1 + (uniform ? kUniformClass : (early ? 1 : 0) + 2 * order) : 0;
    a.qw_shift[i] = all ? (c + 128) * (1 << 23) : 0;
  }
  return true;
}

// The wgmma form of row i (one lane per head h): one multiplier a row when every head fits one
// and some head needs a multiply, else the first k-step order whose Horner plans admit the row.
__device__ void wgmma_row(const QueryPrepArgs& a, int i, int h, const PackedVector& q, const VectorExps& x, int64_t dst,
                          uint8_t* tile) {
  GroupStats st[4];
  for (int g = 0; g < 4; ++g) st[g] = group_stats(q, g);
  const uint32_t ks = a.uniform_plan ? __reduce_and_sync(0xFFFFFFFFu, uniform_ks(st, x)) : 0u;
  if (ks != 0 && __any_sync(0xFFFFFFFFu, x.emax - x.emin > 3)) {
    const int K = __ffs(int(ks)) - 1;
    const int base = uniform_vector(q, x, st, K, StagedRow{tile, h});
    if (admit_row(a, i, dst, tile, pack_multipliers(0, 0, K, 0), base, true, 0, true, false)) return;
  }
  for (int order = 0; order < kWgmmaOrders; ++order) {  // the first order that admits the row
    int mul = 0, base = 0;
    const bool head_ok = wgmma_vector(q, x, order, StagedRow{tile, h}, &mul, &base);
    if (admit_row(a, i, dst, tile, mul, base, head_ok, order, false, order + 1 == kWgmmaOrders)) return;
  }
}

// Whether the folded weight f = wb * scale (wb = bf16(w), scale = 2^(base-128), the head's
// fast-path scale) is a bf16 value exactly: zero, or normal and finite. The sparse wgmma kernel
// folds the head's scale into its weight (sparse_wgmma.cu), so split rows must have it for every
// head.
__device__ bool folds_into_weight(float wb, float f, float scale) {
  if (wb == 0.0f) return true;
  return isfinite(f) && fabsf(f) >= 0x1p-126f && f / scale == wb;
}

// The exponent range the sparse wgmma kernel needs of a split row's folded weights w' (nonzero
// ones) to apply the key scale sk after the chain instead of to each head score: with ilogb(w')
// >= -81 every value of the unscaled chain is a multiple of G = 2^(-81 - 7), and sk >= 2^-45
// keeps G sk >= 2^-133, the smallest bf16 subnormal, so scaling by sk never meets a rounding the
// reference's chain does not; with ilogb(w') <= 52 neither chain overflows (32 products below
// 2^23 2^53, times sk <= 2^45, stay below 2^127). sparse_wgmma.cu, "the key scale last".
constexpr int kScaleLastMinExp = -81, kScaleLastMaxExp = 52;

// Whether the row's folded weights (this lane's head: f = bf16(w) * scale) lie in that range.
__device__ bool weights_scale_last(float f) {
  const int e = f != 0.0f && isfinite(f) ? ilogbf(f) : 0;
  return __reduce_min_sync(0xFFFFFFFFu, e) >= kScaleLastMinExp && __reduce_max_sync(0xFFFFFFFFu, e) <= kScaleLastMaxExp;
}

// One warp per row, one lane per head. The int8 rows go through two staging tiles so that each
// output's 4 KiB of the row is written in whole lines (a lane writing its head's row wrote 16
// bytes of 32 lines an instruction: L1/TEX 89 % busy, 0.22-0.31 ms a layer on chunk-256k, run 94).
__global__ void __launch_bounds__(32) query_prep_kernel(QueryPrepArgs a) {
  __shared__ __align__(16) uint8_t tile[2][32 * 128];
  const int i = blockIdx.x, h = threadIdx.x;
  const int64_t row = a.sel_rows[i];
  const int64_t src = row * 32 + h, dst = int64_t(i) * 32 + h;
  const PackedVector q(a.q + src * 64);
  const VectorExps x(load_u32(a.q_scale + src * 4));
  const StagedRow shifted{tile[0], h}, raw{tile[1], h};
  a.qexp[dst] = x.packed;
  for (int g = 0; g < 4; ++g) prep_group(q.group(g), g, x.shift(g), shifted, raw);
  flush_rows(tile[0], a.qs + int64_t(i) * 4096);
  flush_rows(tile[1], a.qr + int64_t(i) * 4096);
  const float scale = x.fast_scale(12);
  a.qscale[dst] = scale;
  int doubled = -1;
  const float wb = bf16_value(soft_bf16_rne(a.weights[dst])), wf = wb * scale;  // the folded weight w'
  const bool split = split_vector(q, x, shifted, a.qmul + dst, &doubled) && folds_into_weight(wb, wf, scale);
  flush_rows(tile[0], a.qsplit + int64_t(i) * 4096);
  const bool all_fast = __all_sync(0xFFFFFFFFu, scale != 0.0f);
  const bool all_split = __all_sync(0xFFFFFFFFu, scale != 0.0f && split) && weights_scale_last(wf);
  // The doubled group, if any head has one: the same group for every such head (one k-step).
  const int dmax = __reduce_max_sync(0xFFFFFFFFu, doubled + 1) - 1;
  const int dmin = __reduce_min_sync(0xFFFFFFFFu, doubled >= 0 ? doubled : 3);
  a.qdouble[dst] = doubled >= 0 ? 1 : 0;
  if (h == 0) {
    a.row_fast[i] = all_fast ? 1 : 0;
    a.row_split[i] = !all_split ? 0 : dmax < 0 ? 1 : dmin == dmax ? 2 + dmax : 0;
  }
  if (a.qw != nullptr) wgmma_row(a, i, h, q, x, dst, tile[0]);
}

}  // namespace

void launch_key_prep(const KeyPrepArgs& a) {
  if (a.nreq == 0 || a.max_lc == 0) return;
  constexpr int kKeysPerBlock = kKeyPrepThreads / 4;
  dim3 grid((a.max_lc + kKeysPerBlock - 1) / kKeysPerBlock, a.nreq);
  key_prep_kernel<<<grid, kKeyPrepThreads>>>(a);
  DSA_LAUNCH_CHECK("key_prep_kernel");
}

void launch_query_prep(const QueryPrepArgs& a) {
  if (a.nsel == 0) return;
  query_prep_kernel<<<a.nsel, 32>>>(a);
  DSA_LAUNCH_CHECK("query_prep_kernel");
}

}  // namespace dsa::gpu
