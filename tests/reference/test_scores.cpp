// Scores: the exact head score rounded once, the dense lane order, the single-rounding bf16 fma,
// the fast row kernel against the scalar path, and a second, independent computation of the
// scores (fp64 Eigen GEMM per group on dequantized values).
#include <Eigen/Dense>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "harness/generate/generate.hpp"
#include "reference/formats.hpp"
#include "reference/scores.hpp"
#include "tests/catch.hpp"

using namespace dsa;
using namespace dsa::ref;

namespace {

uint32_t bits_of(float x) { return float_bits(x); }

// A 128-dim packed vector from per-dim fp4 codes.
std::vector<uint8_t> pack(const std::vector<uint8_t>& codes128) {
  std::vector<uint8_t> out(kPackedDim, 0);
  for (int d = 0; d < kHeadDim; ++d) out[size_t(d / 2)] |= uint8_t((codes128[size_t(d)] & 0xF) << (d % 2 ? 4 : 0));
  return out;
}

// Exponent bytes (qs, ks) giving e = qs + ks - 256 for a wanted e, both in [1, 254].
void exps_for(int e, uint8_t& qs, uint8_t& ks) {
  const int sum = e + 256;
  qs = uint8_t(std::min(254, std::max(1, sum / 2)));
  ks = uint8_t(sum - qs);
}

float combine_with_exponents(const int32_t g4[4], const int e4[4]) {
  uint8_t qs[4], ks[4];
  for (int g = 0; g < 4; ++g) exps_for(e4[g], qs[g], ks[g]);
  return combine_fp32(g4, qs, ks);
}

// A small ratio-1 pool holding `n` random keys (identity page table, page size 64), with key
// exponent bytes in [ks_lo, ks_hi].
struct RandomKeys {
  std::vector<uint8_t> pool;
  std::vector<int32_t> table;
  KeyView view;
  RandomKeys(int n, int ks_lo, int ks_hi, std::mt19937& rng) {
    const int page = 64, pages = (n + page - 1) / page;
    pool.assign(size_t(pages) * page * kSlotBytes, 0);
    for (int p = 0; p < pages; ++p) table.push_back(pages - 1 - p);  // reversed: paging is exercised
    std::uniform_int_distribution<int> byte(0, 255), ks(ks_lo, ks_hi);
    view = KeyView{pool.data(), page, table.data()};
    for (int p = 0; p < n; ++p) {
      uint8_t* k = const_cast<uint8_t*>(view.payload(p));
      uint8_t* s = const_cast<uint8_t*>(view.scale(p));
      for (int b = 0; b < kPackedDim; ++b) k[b] = uint8_t(byte(rng));
      for (int g = 0; g < 4; ++g) s[g] = uint8_t(ks(rng));
    }
  }
};

struct RandomQuery {
  std::vector<uint8_t> q, qs;
  std::vector<float> w;
  QueryRow row;
  RandomQuery(int qs_lo, int qs_hi, std::mt19937& rng) : q(kHeads * kPackedDim), qs(kHeads * 4), w(kHeads) {
    std::uniform_int_distribution<int> byte(0, 255), e(qs_lo, qs_hi);
    std::uniform_int_distribution<int> weight(-64, 64);
    for (auto& b : q) b = uint8_t(byte(rng));
    for (auto& b : qs) b = uint8_t(e(rng));
    for (auto& x : w) x = float(weight(rng)) / 64.0f;  // bf16-exact, like production weights
    row = QueryRow{q.data(), qs.data(), w.data()};
  }
};

}  // namespace

TEST_CASE("group sums are integer dot products of twice-codes") {
  std::vector<uint8_t> qc(128, 0), kc(128, 0);
  qc[0] = 2;       // 1.0  -> twice 2
  kc[0] = 7;       // 6.0  -> twice 12
  qc[33] = 8 | 5;  // -3.0 -> twice -6
  kc[33] = 3;      // 1.5  -> twice 3
  qc[127] = 1;     // 0.5 -> 1
  kc[127] = 9;     // -0.5 -> -1
  int32_t g4[4];
  const auto q = pack(qc), k = pack(kc);
  group_sums(q.data(), k.data(), g4);
  CHECK(g4[0] == 24);
  CHECK(g4[1] == -18);
  CHECK(g4[2] == 0);
  CHECK(g4[3] == -1);
  // Values: group 0: 1 * 6 = 6; group 1: -3 * 1.5 = -4.5; group 3: -0.25; at scale 1: 1.25.
  const uint8_t one[4] = {127, 127, 127, 127};
  CHECK(head_score_fp32(q.data(), one, k.data(), one) == 1.25f);
  CHECK(head_score_fp64(q.data(), one, k.data(), one) == 1.25);
  // Group 1 at scale 2^3 * 2^2: -4.5 * 32 = -144; total 6 - 144 - 0.25.
  const uint8_t qs[4] = {127, 130, 127, 127}, ks[4] = {127, 129, 127, 127};
  CHECK(head_score_fp32(q.data(), qs, k.data(), ks) == -138.25f);
}

TEST_CASE("head score is the exact sum rounded once (a running fp32 sum differs)") {
  // Terms 2^24, 1, 1: a running fp32 sum gives 2^24 twice (ties to even); exact is 2^24 + 2.
  // G is a twice-code product sum, the term is G * 2^e with e = qs + ks - 256.
  const int32_t g4[4] = {4, 4, 4, 0};
  const int e4[4] = {22, -2, -2, 0};  // 4 * 2^22 = 2^24, 4 * 2^-2 = 1
  const float exact = combine_with_exponents(g4, e4);
  CHECK(exact == 16777218.0f);
  float running = 0.0f;
  for (int g = 0; g < 4; ++g) running += float(std::ldexp(double(g4[g]), e4[g]));
  CHECK(running == 16777216.0f);
}

TEST_CASE("exact combination against long double for spreads up to 49 binades") {
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> g(-4608, 4608), base(-254, 252 - 49), spread(0, 49), pick(0, 3);
  int subnormal = 0, overflow = 0;
  for (int it = 0; it < 200000; ++it) {
    int32_t g4[4];
    int e4[4];
    const int lo = base(rng), width = spread(rng);
    std::uniform_int_distribution<int> e(lo, lo + width);
    for (int i = 0; i < 4; ++i) { g4[i] = g(rng); e4[i] = e(rng); }
    if (pick(rng) == 0) g4[pick(rng)] = 0;
    long double sum = 0.0L;  // 64 significant bits: exact for these spreads
    for (int i = 0; i < 4; ++i) sum += std::ldexp((long double)g4[i], e4[i]);
    const float want = float(sum);
    const float got = combine_with_exponents(g4, e4);
    subnormal += std::fpclassify(want) == FP_SUBNORMAL;
    overflow += std::isinf(want);
    REQUIRE(bits_of(got) == bits_of(want));
  }
  CHECK(subnormal > 0);
  CHECK(overflow > 0);
}

TEST_CASE("exact combination against __int128 for spreads of 50 to 110 binades") {
  std::mt19937 rng(11);
  std::uniform_int_distribution<int> g(-4608, 4608), width(50, 110);
  int tested = 0;
  for (int it = 0; it < 100000; ++it) {
    const int w = width(rng);
    std::uniform_int_distribution<int> base(-120, 120 - w);
    const int lo = base(rng);
    int32_t g4[4];
    int e4[4] = {lo, lo + w, 0, 0};
    std::uniform_int_distribution<int> e(lo, lo + w);
    e4[2] = e(rng);
    e4[3] = e(rng);
    for (int i = 0; i < 4; ++i) g4[i] = g(rng);
    __int128 n = 0;
    // Multiply, not shift: g4[i] may be negative, and a left shift of a negative value is UB.
    for (int i = 0; i < 4; ++i) n += (__int128)g4[i] * ((__int128)1 << (e4[i] - lo));
    const float want = std::ldexp(float(n), lo);  // float(__int128) rounds once; scaling is exact here
    if (std::fpclassify(want) != FP_NORMAL) continue;
    ++tested;
    REQUIRE(bits_of(combine_with_exponents(g4, e4)) == bits_of(want));
  }
  CHECK(tested > 90000);
}

TEST_CASE("exact combination: a term 200 binades below decides a tie") {
  // 4097 * 2^12 + 1 = 2^24 + 2^12 + 1 lies halfway between two floats (ulp 2 there).
  const int32_t tie[4] = {4097, 1, 0, 0};
  const int e_tie[4] = {0, -12, 0, 0};
  const float lower = std::ldexp(16781312.0f, -12), upper = std::ldexp(16781314.0f, -12);
  CHECK(combine_with_exponents(tie, e_tie) == lower);  // ties to even (16781312 / 2 is even)
  const int32_t up[4] = {4097, 1, 1, 0};
  const int32_t down[4] = {4097, 1, -1, 0};
  const int e_far[4] = {0, -12, -212, 0};
  CHECK(combine_with_exponents(up, e_far) == upper);
  CHECK(combine_with_exponents(down, e_far) == lower);
  // A running double sum would lose the far term and tie to even: both would give `lower`.
  CHECK(double(4097) + std::ldexp(1.0, -12) + std::ldexp(1.0, -212) == double(4097) + std::ldexp(1.0, -12));
  // fp64 rounding of the same sums: the exact value needs 226 bits; the far term sets the sticky.
  const int32_t wide[4] = {1, 0, 0, 1};
  const int e_wide[4] = {0, 0, 0, -60};
  uint8_t qs[4], ks[4];
  for (int g = 0; g < 4; ++g) exps_for(e_wide[g], qs[g], ks[g]);
  CHECK(combine_fp64(wide, qs, ks) == 1.0);  // 1 + 2^-60 -> 1
}

TEST_CASE("exact combination: cancellation to zero and signs") {
  const int32_t g4[4] = {3, -3, 5, -5};
  const int e4[4] = {100, 100, -200, -200};
  CHECK(bits_of(combine_with_exponents(g4, e4)) == 0u);  // exact zero is +0
  const int32_t g5[4] = {1, -1, -1, 0};
  const int e5[4] = {120, 120, -250, 0};
  CHECK(combine_with_exponents(g5, e5) == -0.0f);  // -2^-250 underflows to -0
  CHECK(std::signbit(combine_with_exponents(g5, e5)));
}

TEST_CASE("dense score: 4 lanes of fma, then (a0 + a2) + (a1 + a3)") {
  float s[kHeads] = {}, w[kHeads] = {};
  for (int h = 0; h < kHeads; ++h) w[h] = 1.0f;
  s[0] = 16777216.0f;  // lane 0
  s[1] = 1.0f;         // lane 1, step 0
  s[5] = 1.0f;         // lane 1, step 1
  s[2] = -3.0f;        // negative: r = 0
  // Lanes: a0 = 2^24, a1 = 2, a2 = a3 = 0 -> 2^24 + 2 exactly.
  CHECK(dense_score(s, w) == 16777218.0f);
  float naive = 0.0f;
  for (int h = 0; h < kHeads; ++h) naive += std::max(s[h], 0.0f) * w[h];
  CHECK(naive == 16777216.0f);  // a sequential sum rounds the ones away
  // The fma inside a lane: r * w + acc rounded once.
  float s2[kHeads] = {}, w2[kHeads] = {};
  s2[0] = 1.0f + std::ldexp(1.0f, -12);
  w2[0] = 1.0f + std::ldexp(1.0f, -12);
  s2[4] = -1.0f;  // r = 0 -> no change
  s2[8] = 1.0f;
  w2[8] = -1.0f;
  // fma(1+2^-12, 1+2^-12, 0) = 1 + 2^-11 (2^-24 rounded off), then fma(1, -1, that) = 2^-11.
  CHECK(dense_score(s2, w2) == std::ldexp(1.0f, -11));
}

TEST_CASE("bf16 fma rounds once (rounding the product first differs)") {
  const uint16_t a = 0x3F81;  // 1 + 2^-7
  const uint16_t c = 0xBF82;  // -(1 + 2^-6)
  // (1 + 2^-7)^2 = 1 + 2^-6 + 2^-14; plus c leaves 2^-14 exactly.
  CHECK(bf16_to_float(bf16_fma(a, a, c)) == std::ldexp(1.0f, -14));
  const uint16_t product_first = bf16_rne(bf16_to_float(bf16_rne(bf16_to_float(a) * bf16_to_float(a))) + bf16_to_float(c));
  CHECK(bf16_to_float(product_first) == 0.0f);
}

TEST_CASE("bf16 fma: a tie decided by an addend 60 binades below (beyond a double sum)") {
  // 3 * 129 = 387: halfway between bf16 values 386 and 388 (ulp 2 in [256, 512)).
  const uint16_t a = bf16_rne(std::ldexp(3.0f, 30)), b = bf16_rne(std::ldexp(129.0f, 30));
  const float lo = std::ldexp(386.0f, 60), hi = std::ldexp(388.0f, 60);
  CHECK(bf16_to_float(bf16_fma(a, b, 0x0000)) == hi);               // tie -> even (388 = 1.1000010b)
  CHECK(bf16_to_float(bf16_fma(a, b, bf16_rne(1.0f))) == hi);       // just above
  CHECK(bf16_to_float(bf16_fma(a, b, bf16_rne(-1.0f))) == lo);      // just below: down
  CHECK(bf16_from_double(std::ldexp(387.0, 60) - 1.0) == bf16_rne(std::ldexp(387.0f, 60)));  // double lost the -1
}

TEST_CASE("bf16 fma: subnormal results, signed zeros, overflow") {
  const uint16_t tiny = 0x0080;  // 2^-126
  const uint16_t half = 0x3F00;  // 0.5
  CHECK(bf16_fma(tiny, half, 0) == 0x0040);  // 2^-127: a bf16 subnormal, exact
  const uint16_t quarter_ulp = bf16_fma(0x0001, half, 0);  // 2^-134: tie between 0 and 2^-133 -> 0
  CHECK(quarter_ulp == 0x0000);
  CHECK(bf16_fma(0x3F80, 0x3F80, 0xBF80) == 0x0000);  // 1 * 1 - 1 = +0
  CHECK(bf16_fma(0x7F7F, 0x4000, 0) == 0x7F80);       // overflow -> inf
}

TEST_CASE("sparse score: bf16 heads, negatives to +0, four lanes, pairwise finish") {
  float s[kHeads] = {}, w[kHeads] = {};
  s[0] = 3.0f;  w[0] = 0.5f;    // lane 0: 1.5
  s[1] = 1.0f;  w[1] = 0.25f;   // lane 1: 0.25
  s[2] = -5.0f; w[2] = 1.0f;    // negative -> +0
  s[3] = 1.0f + std::ldexp(1.0f, -9);  w[3] = 1.0f;  // bf16(s) = 1 (ties to even below)
  s[4] = 2.0f;  w[4] = -0.25f;  // lane 0: 1.5 - 0.5 = 1
  // a0 = 1, a1 = 0.25, a2 = 0, a3 = 1: t0 = 1, t1 = 1.25, score 2.25.
  CHECK(bf16_to_float(sparse_score(s, w)) == 2.25f);
}

TEST_CASE("exact score sums w * max(s, 0) in double") {
  double s[kHeads] = {};
  float w[kHeads] = {};
  s[0] = 16777216.0; w[0] = 1.0f;
  s[1] = 1.0;        w[1] = 1.0f;
  s[2] = -7.0;       w[2] = 3.0f;
  s[3] = 0.5;        w[3] = -2.0f;
  CHECK(exact_score(s, w) == 16777216.0);
}

TEST_CASE("row kernel equals the scalar path, also for extreme exponent spreads") {
  std::mt19937 rng(3);
  // Exponent bytes with qs + ks - 256 <= 110: no overflow, but spreads far beyond the fast path.
  RandomKeys keys(300, 1, 186, rng);
  for (int trial = 0; trial < 3; ++trial) {
    RandomQuery q(1, 180, rng);
    std::vector<float> fast(300), slow(300);
    dense_scores_row(q.row, keys.view, 300, fast.data());
    dense_scores_row_scalar(q.row, keys.view, 300, slow.data());
    CHECK(std::memcmp(fast.data(), slow.data(), sizeof(float) * 300) == 0);
    std::vector<int32_t> positions = {299, 0, 17, 17, 128, 64, 250};
    std::vector<float> heads(positions.size() * kHeads);
    head_scores_at(q.row, keys.view, positions.data(), int64_t(positions.size()), heads.data());
    for (size_t i = 0; i < positions.size(); ++i)
      for (int h = 0; h < kHeads; ++h)
        CHECK(bits_of(heads[i * kHeads + size_t(h)]) ==
              bits_of(head_score_fp32(q.q.data() + h * kPackedDim, q.qs.data() + h * 4, keys.view.payload(positions[i]),
                                      keys.view.scale(positions[i]))));
  }
}

TEST_CASE("row kernel equals the scalar path for small spreads: normal, subnormal and huge results") {
  // Spreads <= 16 take the kernel's int32 path; tiny scales make subnormal scores (its
  // fallback), large ones scores near 2^120.
  std::mt19937 rng(13);
  for (int lo : {60, 100, 120, 176}) {
    RandomKeys keys(260, lo, lo + 6, rng);
    RandomQuery q(lo, lo + 6, rng);
    std::vector<float> fast(260), slow(260);
    dense_scores_row(q.row, keys.view, 260, fast.data());
    dense_scores_row_scalar(q.row, keys.view, 260, slow.data());
    CHECK(std::memcmp(fast.data(), slow.data(), sizeof(float) * 260) == 0);
    std::vector<int32_t> positions(260);
    for (int i = 0; i < 260; ++i) positions[size_t(i)] = (i * 37) % 260;
    std::vector<float> heads(260 * kHeads);
    head_scores_at(q.row, keys.view, positions.data(), 260, heads.data());
    int subnormal = 0;
    for (int i = 0; i < 260; ++i)
      for (int h = 0; h < kHeads; ++h) {
        const float want = head_score_fp32(q.q.data() + h * kPackedDim, q.qs.data() + h * 4,
                                           keys.view.payload(positions[size_t(i)]), keys.view.scale(positions[size_t(i)]));
        subnormal += std::fpclassify(want) == FP_SUBNORMAL;
        REQUIRE(bits_of(heads[size_t(i) * kHeads + size_t(h)]) == bits_of(want));
      }
    if (lo == 60) CHECK(subnormal > 100);
  }
}

TEST_CASE("row kernel: several rows of one request in one pass equal single-row passes") {
  std::mt19937 rng(5);
  RandomKeys keys(700, 110, 140, rng);
  std::vector<RandomQuery> qs;
  for (int i = 0; i < 3; ++i) qs.emplace_back(110, 140, rng);
  std::vector<QueryRow> rows = {qs[0].row, qs[1].row, qs[2].row};
  const int64_t lens[3] = {700, 5, 333};
  std::vector<std::vector<float>> outs(3);
  std::vector<float*> ptrs;
  for (int i = 0; i < 3; ++i) { outs[size_t(i)].resize(size_t(lens[i])); ptrs.push_back(outs[size_t(i)].data()); }
  dense_scores_rows(rows.data(), 3, keys.view, lens, ptrs.data());
  for (int i = 0; i < 3; ++i) {
    std::vector<float> one(static_cast<size_t>(lens[i]));
    dense_scores_row_scalar(rows[size_t(i)], keys.view, lens[i], one.data());
    CHECK(std::memcmp(one.data(), outs[size_t(i)].data(), sizeof(float) * size_t(lens[i])) == 0);
  }
}

TEST_CASE("overflowing head scores are reported with position and head") {
  std::mt19937 rng(9);
  RandomKeys keys(40, 250, 254, rng);
  RandomQuery q(250, 254, rng);
  std::vector<float> out(40);
  CHECK_THROWS_AS(dense_scores_row(q.row, keys.view, 40, out.data()), ScoreOverflow);
  CHECK_THROWS_AS(dense_scores_row_scalar(q.row, keys.view, 40, out.data()), ScoreOverflow);
  const int32_t p = 3;
  std::vector<uint16_t> sparse(1);
  CHECK_THROWS_AS(sparse_scores_at(q.row, keys.view, &p, 1, sparse.data()), ScoreOverflow);
}

TEST_CASE("sparse vector path equals the scalar sparse score, also near the fallbacks") {
  std::mt19937 rng(21);
  for (int lo : {60, 110}) {
    RandomKeys keys(200, lo, 140, rng);
    RandomQuery q(lo, 140, rng);
    std::vector<int32_t> positions(200);
    for (int i = 0; i < 200; ++i) positions[size_t(i)] = 199 - i;
    std::vector<uint16_t> fast(200);
    std::vector<float> heads(200 * kHeads);
    sparse_scores_at(q.row, keys.view, positions.data(), 200, fast.data());
    head_scores_at(q.row, keys.view, positions.data(), 200, heads.data());
    for (int i = 0; i < 200; ++i) CHECK(fast[size_t(i)] == sparse_score(&heads[size_t(i) * kHeads], q.w.data()));
  }
}

TEST_CASE("independent computation: fp64 Eigen GEMM per group agrees bit for bit") {
  GenerateOptions options;
  options.preset = "smoke";
  options.seed = 4;
  const Batch batch = generate_batch(options);
  const Layer* layer = batch.source();
  REQUIRE(layer != nullptr);
  int rows_checked = 0;
  int64_t cells = 0;
  for (int r = 0; r < batch.rows(); r += 3) {
    const int64_t L = batch.compress_len[size_t(r)];
    if (L == 0) continue;
    const int b = batch.row_request[size_t(r)];
    const KeyView keys{batch.pool.data(), batch.page_size, batch.page_table.data() + size_t(b) * size_t(batch.table_width)};
    // Dequantized values, one matrix per 32-dim group.
    double total_spread = 0;
    Eigen::MatrixXd s = Eigen::MatrixXd::Zero(kHeads, L);
    for (int g = 0; g < 4; ++g) {
      Eigen::MatrixXd qg(kHeads, 32), kg(32, L);
      for (int h = 0; h < kHeads; ++h)
        for (int d = 0; d < 32; ++d)
          qg(h, d) = double(fp4_value(fp4_code_at(layer->q_row(r) + h * kPackedDim, 32 * g + d))) *
                     std::ldexp(1.0, int(layer->scale_row(r)[h * 4 + g]) - 127);
      for (int64_t p = 0; p < L; ++p)
        for (int d = 0; d < 32; ++d)
          kg(d, p) = double(fp4_value(fp4_code_at(keys.payload(p), 32 * g + d))) *
                     std::ldexp(1.0, int(keys.scale(p)[g]) - 127);
      s += qg * kg;  // each group exact in double; the sum exact while spreads stay small
    }
    for (int h = 0; h < kHeads; ++h) {
      int lo = 255, hi = 0;
      for (int g = 0; g < 4; ++g) { lo = std::min(lo, int(layer->scale_row(r)[h * 4 + g])); hi = std::max(hi, int(layer->scale_row(r)[h * 4 + g])); }
      total_spread = std::max(total_spread, double(hi - lo));
    }
    REQUIRE(total_spread <= 12);  // generated data: the double sum above is exact
    std::vector<float> fast(static_cast<size_t>(L));
    dense_scores_row(QueryRow{layer->q_row(r), layer->scale_row(r), layer->weight_row(r)}, keys, L, fast.data());
    std::vector<int32_t> all(static_cast<size_t>(L));
    for (int64_t p = 0; p < L; ++p) all[size_t(p)] = int32_t(p);
    std::vector<uint16_t> sparse(static_cast<size_t>(L));
    std::vector<double> exact(static_cast<size_t>(L));
    const QueryRow q{layer->q_row(r), layer->scale_row(r), layer->weight_row(r)};
    sparse_scores_at(q, keys, all.data(), L, sparse.data());
    exact_scores_row(q, keys, L, exact.data());
    for (int64_t p = 0; p < L; ++p) {
      float sh[kHeads];
      double sd[kHeads];
      float lanes[4] = {0, 0, 0, 0};
      for (int h = 0; h < kHeads; ++h) {
        sd[h] = s(h, p);
        sh[h] = float(s(h, p));
        lanes[h % 4] = std::fma(std::max(sh[h], 0.0f), layer->weight_row(r)[h], lanes[h % 4]);
      }
      const float dense = (lanes[0] + lanes[2]) + (lanes[1] + lanes[3]);
      REQUIRE(bits_of(dense) == bits_of(fast[size_t(p)]));
      REQUIRE(sparse_score(sh, layer->weight_row(r)) == sparse[size_t(p)]);
      REQUIRE(exact_score(sd, layer->weight_row(r)) == exact[size_t(p)]);
      ++cells;
    }
    ++rows_checked;
  }
  CHECK(rows_checked >= 2);
  CHECK(cells > 10000);
}
