// gpu-sparse and gpu-mask against an exact CPU model of docs/semantics.md written here, independently
// of both the GPU code and reference/: bit-identical scores, identical blocks and picks.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <tuple>
#include <random>

#include "gpu/gpu_implementations.hpp"
#include "reference/formats.hpp"
#include "tests/catch.hpp"
#include "tests/gpu/same_results.hpp"
#include "tests/scoped_env.hpp"

using namespace dsa;

namespace {

using test::ScopedEnv;  // the engine reads its switches when it is made

// ---------- a batch built in memory ----------
struct Spec {
  std::vector<int> lc;                 // per request
  std::vector<std::vector<int>> lens;  // per request: L of each row
  std::vector<int> tails;              // per request
  int page_size = 128;
  int topk = 512;
  bool plain_only = false;
  // Group 3 4 binades lower in every head of rows r % 6 == 3 (the dense wgmma route's one
  // multiplier a row, where the row has no other special head; rows 15 and 21 fix it at 2 and 4)
  // and 8 lower in the odd heads of rows r % 6 == 0 (a multiplier a head).
  bool low_group3 = false;
};

// gain scales group `group` alone: 4096 on group 0 puts the group exponents far apart (the
// kernels' generic path), 32 a few binades apart (the dense wgmma route's multiplies before
// groups 1-2; on group 2, in another k-step order).
void random_vector(std::mt19937_64& rng, float scale, int group, float gain, uint8_t* packed, uint8_t* scales) {
  std::normal_distribution<float> n(0.0f, 1.0f);
  float x[128];
  for (float& v : x) v = n(rng) * scale;
  for (int d = 32 * group; d < 32 * group + 32; ++d) x[d] *= gain;
  ref::quantize_vector_e2m1(x, packed, scales);
}

Batch make_batch(const Spec& spec, uint64_t seed) {
  std::mt19937_64 rng(seed);
  Batch b;
  b.page_size = spec.page_size;
  b.topk = spec.topk;
  const int P = spec.page_size;
  const int Q = int(spec.lc.size());
  int width = 1, pages = 2;  // two spare pages of garbage
  for (int l : spec.lc) {
    width = std::max(width, (l + P - 1) / P);
    pages += (l + P - 1) / P;
  }
  b.table_width = width;
  b.page_table.assign(size_t(Q) * width, -1);
  std::vector<int> order(static_cast<size_t>(pages));
  for (int i = 0; i < pages; ++i) order[size_t(i)] = i;
  std::shuffle(order.begin(), order.end(), rng);
  b.pages = pages;
  b.pool.resize(size_t(pages) * P * kSlotBytes);
  for (auto& byte : b.pool) byte = uint8_t(rng());  // garbage where no key lives
  int next = 0;
  for (int q = 0; q < Q; ++q) {
    b.num_rows.push_back(int(spec.lens[size_t(q)].size()));
    b.compressed_len.push_back(spec.lc[size_t(q)]);
    b.tail_rows.push_back(spec.tails[size_t(q)]);
    for (int j = 0; j < (spec.lc[size_t(q)] + P - 1) / P; ++j) b.page_table[size_t(q) * width + j] = order[size_t(next++)];
    for (int L : spec.lens[size_t(q)]) b.compress_len.push_back(L);
  }
  b.finalize();
  // Keys: locality (recent positions larger), a few sinks, every 97th key with a wide span.
  for (int q = 0; q < Q; ++q)
    for (int j = 0; j < spec.lc[size_t(q)]; ++j) {
      const float scale = (j < 4 ? 3.0f : 1.0f) * (1.0f + 2.0f * float(j) / float(spec.lc[size_t(q)]));
      random_vector(rng, scale, 0, j % 97 == 13 ? 4096.0f : 1.0f, const_cast<uint8_t*>(b.key_payload(q, j)),
                    const_cast<uint8_t*>(b.key_scale(q, j)));
      // Request 0's every 89th key at the smallest fast key scale, 2^-45 (see row 3 below).
      if (q == 0 && j % 89 == 45) std::fill_n(const_cast<uint8_t*>(b.key_scale(q, j)), kScaleGroups, uint8_t(83));
    }
  const int R = b.rows();
  std::vector<std::pair<int, Role>> layers;
  if (spec.plain_only) {
    layers = {{2, Role::plain}};
    b.source_layer = -1;
  } else {
    layers = {{20, Role::source}, {24, Role::consumer}, {28, Role::consumer}};
    b.source_layer = 20;
  }
  std::normal_distribution<float> n(0.0f, 1.0f);
  for (auto [id, role] : layers) {
    Layer l;
    l.id = id;
    l.role = role;
    l.q.resize(size_t(R) * kHeads * kPackedDim);
    l.q_scale.resize(size_t(R) * kHeads * kScaleGroups);
    l.weights.resize(size_t(R) * kHeads);
    for (int r = 0; r < R; ++r)
      for (int h = 0; h < kHeads; ++h) {
        const size_t i = size_t(r) * kHeads + h;
        const int group = r % 6 == 0 && h == 13 ? 2 : 0;  // r % 6 == 3 stays plain: the sparse split route
        const float gain = r % 3 == 1 && h == 5 ? 4096.0f : (r % 3 == 2 && h == 9) || group == 2 ? 32.0f : 1.0f;
        random_vector(rng, 0.5f + 0.1f * float(h % 5), group, gain, l.q.data() + i * kPackedDim,
                      l.q_scale.data() + i * kScaleGroups);
        if (spec.low_group3 && r % 3 == 0) {
          uint8_t* sc = l.q_scale.data() + i * kScaleGroups;
          sc[3] = uint8_t(sc[3] - (r % 6 == 3 ? 4 : h % 2 == 1 ? 8 : 0));
          // Rows 15 and 21: group 3 exactly 4 and 5 binades under the highest of groups 0-2 in
          // every head, so the row's one multiplier is 2 and 4.
          if (r == 15 || r == 21) sc[3] = uint8_t(std::max({sc[0], sc[1], sc[2]}) - (r == 15 ? 4 : 5));
        }
        // Row 9, head 21: group 1 exactly 4 binades above groups 0 and 2, the split route's doubled
        // group (the sparse wgmma kernel adds it twice); row 3 stays plain.
        if (r == 9 && h == 21) {
          uint8_t* sc = l.q_scale.data() + i * kScaleGroups;
          sc[0] = sc[2] = sc[1];
          sc[1] = uint8_t(sc[1] + 4);
        }
        l.weights[i] = ref::bf16_to_float(ref::bf16_rne(n(rng))) / 64.0f;
      }
    b.layers.push_back(std::move(l));
  }
  // One row whose source scores all tie (zero weights): ties at every level.
  if (!spec.plain_only && R > 4)
    for (int h = 0; h < kHeads; ++h) b.layers[0].weights[size_t(4) * kHeads + h] = 0.0f;
  // Row 3 (the split route) at the edges of the sparse wgmma kernel's "key scale last": in layer 24
  // one head's folded weight w' = bf16(w) 2^(emin - 128) is 2^-82, a binade below what it admits
  // (the row leaves the split route); in layer 28 every head's w' is (1 + odd / 128) 2^-81, the
  // least it admits with all 8 bits set, so with request 0's keys of scale 2^-45 its chains are
  // multiples of exactly 2^-133 and run near and under 2^-126, in the subnormals.
  if (!spec.plain_only && R > 3) {
    auto fold_to = [&](Layer& l, int h, float w_folded) {
      const uint8_t* sc = l.scale_row(3) + h * kScaleGroups;
      const int emin = *std::min_element(sc, sc + kScaleGroups);
      l.weights[size_t(3) * kHeads + h] = std::ldexp(w_folded, 128 - emin);
    };
    fold_to(b.layers[1], 6, std::ldexp(1.0f, -82));
    for (int h = 0; h < kHeads; ++h)
      fold_to(b.layers[2], h, (h % 3 == 0 ? -1.0f : 1.0f) * std::ldexp(1.0f + float(2 * h + 1) / 128.0f, -81));
  }
  return b;
}

// ---------- the exact CPU model ----------
// Twice the e2m1 values of one packed vector (integers in [-12, 12]).
std::vector<int8_t> decode(const uint8_t* packed) {
  std::vector<int8_t> v(kHeadDim);
  for (int d = 0; d < kHeadDim; ++d) v[size_t(d)] = int8_t(ref::fp4_twice(ref::fp4_code_at(packed, d)));
  return v;
}

float head_score(const int8_t* q, const uint8_t* qs, const int8_t* k, const uint8_t* ks) {
  long double s = 0;  // 64-bit significand: exact for the spans used here
  for (int g = 0; g < 4; ++g) {
    int G = 0;
    for (int d = 32 * g; d < 32 * g + 32; ++d) G += int(q[d]) * int(k[d]);
    s += std::ldexp((long double)G, int(qs[g]) + int(ks[g]) - 256);
  }
  return float(s);
}

// bf16 of the exact sum x + y (both exact long doubles), one rounding, RNE. A long double sum of
// two values far apart in magnitude drops the smaller one (a tiny product next to a chain value:
// row 3's weights of 2^-81 give such pairs 68 binades apart); TwoSum keeps what it dropped, and
// that error decides a rounding the sum alone would see as a tie. Subnormal bf16 steps are 2^-133.
uint16_t bf16_exact(long double x, long double y) {
  const long double s = x + y, bb = s - x;
  const long double err = (x - (s - bb)) + (y - bb);  // x + y == s + err exactly
  if (s == 0) return std::signbit(s) ? 0x8000 : 0;
  int e;
  std::frexp(std::fabs(s), &e);
  const int ue = std::max(e - 8, -133);
  const long double m = std::ldexp(std::fabs(s), -ue), fl = std::floor(m), fr = m - fl;
  bool up;
  if (fr != 0.5L)
    up = fr > 0.5L;
  else if (err != 0)
    up = (err > 0) == (s > 0);  // the exact sum lies past the tie, away from zero
  else
    up = std::fmod(fl, 2.0L) != 0;  // a true tie: to even
  const float f = float(std::ldexp(fl + (up ? 1 : 0), ue));
  return uint16_t((ref::float_bits(f) >> 16) | (s < 0 ? 0x8000 : 0));
}

struct RowScores {
  std::vector<float> dense;
  std::vector<uint16_t> sparse_at;  // by position
};

// Scores of one row of one layer, cached (the model is slow enough to compute only once).
// Cleared by each test case: batches are locals, their addresses may repeat.
std::map<std::tuple<const Batch*, int, int>, RowScores>& model_cache() {
  static std::map<std::tuple<const Batch*, int, int>, RowScores> cache;
  return cache;
}

const RowScores& model_row(const Batch& b, const Layer& l, int r) {
  auto& cache = model_cache();
  const auto key = std::make_tuple(&b, l.id, r);
  auto it = cache.find(key);
  if (it != cache.end()) return it->second;
  const int L = b.compress_len[size_t(r)], q = b.row_request[size_t(r)];
  RowScores out;
  out.dense.resize(size_t(L));
  out.sparse_at.resize(size_t(L));
  const float* w = l.weight_row(r);
  std::vector<std::vector<int8_t>> qd;
  for (int h = 0; h < kHeads; ++h) qd.push_back(decode(l.q_row(r) + h * kPackedDim));
  for (int p = 0; p < L; ++p) {
    const std::vector<int8_t> kd = decode(b.key_payload(q, p));
    float s[kHeads];
    for (int h = 0; h < kHeads; ++h)
      s[h] = head_score(qd[size_t(h)].data(), l.scale_row(r) + h * kScaleGroups, kd.data(), b.key_scale(q, p));
    float acc[4] = {0, 0, 0, 0};
    uint16_t bacc[4] = {0, 0, 0, 0};
    for (int lane = 0; lane < 4; ++lane)
      for (int h = lane; h < kHeads; h += 4) {
        acc[lane] = std::fma(std::max(s[h], 0.0f), w[h], acc[lane]);
        uint16_t a = ref::bf16_rne(s[h]);
        if (a & 0x8000) a = 0;
        const long double prod = (long double)ref::bf16_to_float(a) * ref::bf16_to_float(ref::bf16_rne(w[h]));
        bacc[lane] = bf16_exact(prod, ref::bf16_to_float(bacc[lane]));
      }
    out.dense[size_t(p)] = (acc[0] + acc[2]) + (acc[1] + acc[3]);
    const uint16_t t0 = bf16_exact(ref::bf16_to_float(bacc[0]), ref::bf16_to_float(bacc[2]));
    const uint16_t t1 = bf16_exact(ref::bf16_to_float(bacc[1]), ref::bf16_to_float(bacc[3]));
    out.sparse_at[size_t(p)] = bf16_exact(ref::bf16_to_float(t0), ref::bf16_to_float(t1));
  }
  return cache.emplace(key, std::move(out)).first->second;
}

// The k best (larger score, then smaller index) of n, ids ascending.
std::vector<int32_t> topk(const std::vector<float>& score, int k) {
  std::vector<int32_t> ids(score.size());
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = int32_t(i);
  if (int(ids.size()) > k) {
    std::stable_sort(ids.begin(), ids.end(), [&](int32_t a, int32_t c) { return score[size_t(a)] > score[size_t(c)]; });
    ids.resize(size_t(k));
  }
  std::sort(ids.begin(), ids.end());
  return ids;
}

std::vector<int32_t> padded(std::vector<int32_t> v, int width, int32_t pad) {
  v.resize(size_t(width), pad);
  return v;
}

std::vector<int32_t> row_of(const std::vector<int32_t>& all, int r, int width) {
  return std::vector<int32_t>(all.begin() + int64_t(r) * width, all.begin() + int64_t(r + 1) * width);
}

Spec standard_spec() {
  Spec s;
  s.lc = {20000, 700, 0, 40, 0};
  s.lens = {{5, 512, 513, 16384, 16385, 20000}, {0, 300, 700}, {}, {1, 40}, {0}};
  s.tails = {2, 1, 0, 1, 1};
  return s;
}

void check_against_model(const Batch& b, const Results& gpu, bool sparse_path, const std::vector<int>& rows) {
  const Layer* src = b.source();
  REQUIRE(src != nullptr);
  for (int r : rows) {
    INFO("row " << r << " L " << b.compress_len[size_t(r)]);
    REQUIRE(gpu.rows_done[size_t(r)] == 1);
    const int L = b.compress_len[size_t(r)];
    const RowScores& s = model_row(b, *src, r);
    REQUIRE(gpu.layers.at(20).dense_scores[size_t(r)].size() == size_t(L));
    for (int p = 0; p < L; ++p) {
      INFO("source position " << p);
      REQUIRE(ref::float_bits(gpu.layers.at(20).dense_scores[size_t(r)][size_t(p)]) ==
              ref::float_bits(s.dense[size_t(p)]));
    }
    CHECK(row_of(gpu.layers.at(20).positions, r, b.topk) == padded(topk(s.dense, b.topk), b.topk, -1));
    // Level one.
    const int nblocks = (L + 7) / 8;
    std::vector<float> keys(static_cast<size_t>(nblocks));
    for (int i = 0; i < nblocks; ++i) {
      float m = -INFINITY;
      for (int p = 8 * i; p < std::min(L, 8 * i + 8); ++p) m = std::max(m, s.dense[size_t(p)]);
      keys[size_t(i)] = i == nblocks - 1 ? INFINITY : m;
    }
    const std::vector<int32_t> blocks = topk(keys, kTopkBlocks);
    REQUIRE(row_of(gpu.blocks, r, kTopkBlocks) == padded(blocks, kTopkBlocks, kBlockPad));
    const int valid = L > 0 ? 8 * (int(blocks.size()) - 1) + (L - 1) % 8 + 1 : 0;
    std::vector<int32_t> cand(static_cast<size_t>(valid));
    for (int c = 0; c < valid; ++c) cand[size_t(c)] = blocks[size_t(c / 8)] * 8 + c % 8;
    for (const Layer* c : b.layers_with(Role::consumer)) {
      INFO("consumer " << c->id);
      const RowScores& cs = model_row(b, *c, r);
      std::vector<float> rank(static_cast<size_t>(valid));
      const LayerResult& lr = gpu.layers.at(c->id);
      if (sparse_path) {
        REQUIRE(lr.sparse_scores[size_t(r)].size() == size_t(valid));
        for (int col = 0; col < valid; ++col) {
          INFO("column " << col);
          REQUIRE(lr.sparse_scores[size_t(r)][size_t(col)] == cs.sparse_at[size_t(cand[size_t(col)])]);
          rank[size_t(col)] = ref::bf16_to_float(cs.sparse_at[size_t(cand[size_t(col)])]) + 0.0f;
        }
      } else {
        REQUIRE(lr.dense_scores[size_t(r)].size() == size_t(L));
        for (int p = 0; p < L; ++p)
          REQUIRE(ref::float_bits(lr.dense_scores[size_t(r)][size_t(p)]) == ref::float_bits(cs.dense[size_t(p)]));
        for (int col = 0; col < valid; ++col) rank[size_t(col)] = cs.dense[size_t(cand[size_t(col)])];
      }
      std::vector<int32_t> picks;
      for (int32_t col : topk(rank, b.topk)) picks.push_back(cand[size_t(col)]);
      CHECK(row_of(lr.positions, r, b.topk) == padded(picks, b.topk, -1));
      const int64_t t = b.tail_index(r);
      if (t >= 0) CHECK(row_of(lr.tail_positions, int(t), b.topk) == row_of(lr.positions, r, b.topk));
    }
  }
}

std::vector<int> all_rows(const Batch& b) {
  std::vector<int> rows(static_cast<size_t>(b.rows()));
  for (int r = 0; r < b.rows(); ++r) rows[size_t(r)] = r;
  return rows;
}

}  // namespace

TEST_CASE("gpu implementations are supported on this device") {
  CHECK(gpu::make_gpu_sparse()->supported().ok);
  CHECK(gpu::make_gpu_mask()->supported().ok);
  CHECK(gpu::describe_device().find("sm_") != std::string::npos);
}

TEST_CASE("gpu-sparse and gpu-mask equal the exact CPU model bit for bit") {
  model_cache().clear();
  const Batch b = make_batch(standard_spec(), 7);
  RunOptions o;
  o.scores = true;
  for (bool sparse : {true, false}) {
    INFO((sparse ? "gpu-sparse" : "gpu-mask"));
    auto impl = sparse ? gpu::make_gpu_sparse() : gpu::make_gpu_mask();
    const Results res = impl->run(b, o);
    CHECK(res.peak_device_bytes > 0);
    check_against_model(b, res, sparse, all_rows(b));
  }
}

// topk 1024 and 2048 (batch-format.md allows both): every selection at another width, and at
// 2048 the own top-k's check against level one's k-th key with its full-row pass.
// Both forms of the source's selection: one launch (publish_once, the default for this few rows)
// and the separate launches (DSA_SOURCE_SELECT_ROWS=0, as for large batches).
TEST_CASE("topk 1024 and 2048: gpu-sparse and gpu-mask equal the exact CPU model") {
  for (int k : {1024, 2048}) {
    INFO("topk " << k);
    model_cache().clear();
    Spec spec = standard_spec();
    spec.topk = k;
    const Batch b = make_batch(spec, 17);
    RunOptions o;
    o.scores = true;
    for (const char* once_rows : {"0", "1000"}) {
      INFO("DSA_SOURCE_SELECT_ROWS=" << once_rows);
      const ScopedEnv env("DSA_SOURCE_SELECT_ROWS", once_rows);
      for (bool sparse : {true, false}) {
        INFO((sparse ? "gpu-sparse" : "gpu-mask"));
        auto impl = sparse ? gpu::make_gpu_sparse() : gpu::make_gpu_mask();
        check_against_model(b, impl->run(b, o), sparse, all_rows(b));
      }
    }
  }
}

// The rows' count on each dense route, from the implementation's notes ("dense: N of M rows on
// wgmma ... (U with one multiplier a row, E multiplying before groups 1-2, R in another k-step
// order), K on mma.sync").
struct DenseRoutes {
  int wgmma = -1, uniform = -1, early = -1, reordered = -1, rest = -1;
};
DenseRoutes dense_routes(const Results& r) {
  DenseRoutes d;
  int total = -1;
  const size_t at = r.notes.find("dense: ");
  if (at != std::string::npos)
    std::sscanf(r.notes.c_str() + at,
                "dense: %d of %d rows on wgmma m64n128k32 (%d with one multiplier a row, %d multiplying before "
                "groups 1-2, %d in another k-step order), %d on mma.sync",
                &d.wgmma, &total, &d.uniform, &d.early, &d.reordered, &d.rest);
  return d;
}

TEST_CASE("dense logits: the wgmma route and the portable kernel each give the model's bits") {
  model_cache().clear();
  Spec spec = standard_spec();
  spec.low_group3 = true;
  spec.lc.push_back(3000);  // rows 12-23: 15 and 21 take one multiplier a row (2, 4) in every layer
  spec.lens.push_back(std::vector<int>(12, 3000));
  spec.tails.push_back(0);
  const Batch b = make_batch(spec, 7);
  RunOptions o;
  o.scores = true;
  const Results both = gpu::make_gpu_mask()->run(b, o);
  const DenseRoutes routes = dense_routes(both);
  INFO(both.notes);
  if (gpu::describe_device().find("sm_90") != std::string::npos) {
    CHECK(routes.wgmma > 0);  // most rows; wide keys (every 97th) are scored by the wide-key pass
    CHECK(routes.uniform >= 2);   // rows 15, 21: multipliers 2 and 4 (run 146 timed 2 as groups 0-2 twice: slower)
    CHECK(routes.early > 0);      // rows with a head whose group 0 lies 5 binades above the others
    CHECK(routes.reordered > 0);  // rows with a head whose group 2 does (group 1 more than 3 below it)
    CHECK(routes.rest > 0);   // rows with a head whose group 0 lies 12 binades above, or zero weights
  }
  check_against_model(b, both, false, all_rows(b));
  const Results portable = [&] {
    const ScopedEnv env("DSA_DENSE_PORTABLE", "1");
    return gpu::make_gpu_mask()->run(b, o);
  }();
  CHECK(dense_routes(portable).wgmma == 0);
  check_against_model(b, portable, false, all_rows(b));
  const Results per_head = [&] {
    const ScopedEnv env("DSA_DENSE_PER_HEAD", "1");
    return gpu::make_gpu_mask()->run(b, o);
  }();
  CHECK(dense_routes(per_head).uniform <= 0);  // -1 off sm_90: no wgmma notes
  check_against_model(b, per_head, false, all_rows(b));
}

// The table rows on the sparse wgmma kernel and in all, from the notes ("sparse: N of M table
// rows on wgmma m64n32k32, ...").
std::pair<int, int> sparse_routes(const Results& r) {
  int wgmma = -1, total = -1;
  const size_t at = r.notes.find("sparse: ");
  if (at != std::string::npos) std::sscanf(r.notes.c_str() + at, "sparse: %d of %d table rows on wgmma", &wgmma, &total);
  return {wgmma, total};
}

// The split rows take the wgmma kernel on sm_90 (keys as A from registers, one warpgroup per
// row), the mma.sync kernel elsewhere or when asked; rows off the split route and blocks with a
// wide key (every 97th key) take the other routes inside both. Few rows on both routes (this
// batch) take one launch by default (sparse_one_launch): the wgmma kernel with extra blocks for
// the other rows, or one mma.sync kernel for all (the portable run); both forms of two launches
// with DSA_SPARSE_ONE_LAUNCH_ROWS=0.
TEST_CASE("sparse logits: the wgmma route and the portable kernels each give the model's bits") {
  model_cache().clear();
  const Batch b = make_batch(standard_spec(), 23);
  RunOptions o;
  o.scores = true;
  const Results both = [&] {
    const ScopedEnv env("DSA_SPARSE_ONE_LAUNCH_ROWS", "0");
    return gpu::make_gpu_sparse()->run(b, o);
  }();
  const auto [wgmma, total] = sparse_routes(both);
  INFO(both.notes);
  REQUIRE(total > 0);
  if (gpu::describe_device().find("sm_90") != std::string::npos) {
    CHECK(wgmma > 0);
    CHECK(wgmma < total);  // rows with a wide query head stay on the mma.sync kernel
  }
  check_against_model(b, both, true, all_rows(b));
  const Results portable = [&] {
    const ScopedEnv env("DSA_SPARSE_PORTABLE", "1");
    return gpu::make_gpu_sparse()->run(b, o);
  }();
  CHECK(sparse_routes(portable).first == 0);
  check_against_model(b, portable, true, all_rows(b));
  const Results portable_two = [&] {
    const ScopedEnv env("DSA_SPARSE_PORTABLE", "1"), rows("DSA_SPARSE_ONE_LAUNCH_ROWS", "0");
    return gpu::make_gpu_sparse()->run(b, o);
  }();
  check_against_model(b, portable_two, true, all_rows(b));
  const Results once = gpu::make_gpu_sparse()->run(b, o);
  CHECK(sparse_routes(once).first == wgmma);
  CHECK(sparse_routes(once).second == total);
  check_against_model(b, once, true, all_rows(b));
}

TEST_CASE("page size 64 and sampled rows give the full run's answers") {
  model_cache().clear();
  Spec spec = standard_spec();
  spec.page_size = 64;
  const Batch b = make_batch(spec, 11);
  RunOptions all;
  all.scores = true;
  RunOptions some = all;
  some.rows = {1, 4, 7};
  for (bool sparse : {true, false}) {
    auto impl = sparse ? gpu::make_gpu_sparse() : gpu::make_gpu_mask();
    const Results full = impl->run(b, all);
    const Results part = impl->run(b, some);
    check_against_model(b, part, sparse, some.rows);
    for (int r : some.rows) {
      CHECK(row_of(part.blocks, r, kTopkBlocks) == row_of(full.blocks, r, kTopkBlocks));
      for (const auto& [id, lr] : full.layers)
        CHECK(row_of(part.layers.at(id).positions, r, b.topk) == row_of(lr.positions, r, b.topk));
    }
    CHECK(part.rows_done[0] == 0);
    CHECK(part.rows_done[4] == 1);
  }
}

TEST_CASE("plain layers take the top-k of their dense scores") {
  model_cache().clear();
  Spec spec;
  spec.lc = {3000, 100};
  spec.lens = {{2999, 3000, 600}, {0, 100}};
  spec.tails = {0, 0};
  spec.plain_only = true;
  const Batch b = make_batch(spec, 3);
  RunOptions o;
  o.scores = true;
  for (bool sparse : {true, false}) {
    const Results res = (sparse ? gpu::make_gpu_sparse() : gpu::make_gpu_mask())->run(b, o);
    CHECK(res.blocks.empty());
    for (int r = 0; r < b.rows(); ++r) {
      const RowScores& s = model_row(b, b.layers[0], r);
      const auto& got = res.layers.at(2).dense_scores[size_t(r)];
      REQUIRE(got.size() == s.dense.size());
      CHECK(std::memcmp(got.data(), s.dense.data(), got.size() * sizeof(float)) == 0);
      CHECK(row_of(res.layers.at(2).positions, r, b.topk) == padded(topk(s.dense, b.topk), b.topk, -1));
    }
  }
}

// The notes without the dense kernel's count of blocks below its bounds (DSA_DENSE_SKIP), which
// depends on how the blocks of a launch were scheduled.
std::string without_skip_note(const std::string& notes) {
  const size_t at = notes.find("dense scores left unstored");
  if (at == std::string::npos) return notes;
  const size_t end = notes.find("; ", at);
  return notes.substr(0, at) + (end == std::string::npos ? "" : notes.substr(end + 2));
}

TEST_CASE("gpu-sparse: the source layer in row chunks gives the whole run's answers") {
  const Batch b = make_batch(standard_spec(), 7);
  RunOptions o;  // no scores: --scores keeps the whole dense matrix
  const Results whole = gpu::make_gpu_sparse()->run(b, o);
  REQUIRE(b.rows() > 5);
  // 5: chunks end inside a request and inside row tiles of both dense routes; 1: a chunk a row.
  for (const char* rows : {"5", "1"}) {
    INFO("DSA_SOURCE_CHUNK_ROWS=" << rows);
    RunOptions timed = o;  // the timed launches reuse one chunk's buffers; the outputs are redone
    timed.timing = true;
    timed.timing_samples = 20;
    const ScopedEnv env("DSA_SOURCE_CHUNK_ROWS", rows);
    const Results chunked = gpu::make_gpu_sparse()->run(b, o);
    const Results chunked_timed = gpu::make_gpu_sparse()->run(b, timed);
    REQUIRE(chunked.rows_done == whole.rows_done);
    REQUIRE(chunked_timed.rows_done == whole.rows_done);
    test::require_identical(b, whole, chunked, "chunked");
    test::require_identical(b, whole, chunked_timed, "chunked, timed");
    // The own top-k's full-row count included; the dense kernel's bounds differ by chunk.
    CHECK(without_skip_note(chunked.notes) == without_skip_note(whole.notes));
  }
}

// Stores skipped (the default; DSA_DENSE_SKIP=0 stores every score; gpu/dense_logits/dense_wgmma.cuh):
// the source's dense kernel leaves the scores of blocks below a row's running bound unstored. 512 rows of about 62000
// positions make 1024 dense blocks, more than a wave, so later blocks read raised bounds; every
// 97th key is wide (the wide pass then writes the whole block). Whole and in chunks of 400 rows.
TEST_CASE("gpu-sparse: the source's dense stores skipped below the rows' bounds give the same answers") {
  Spec spec;
  spec.lc = {65536};
  spec.lens.emplace_back();
  for (int i = 0; i < 512; ++i) spec.lens[0].push_back(60000 + 10 * i);
  spec.tails = {0};
  const Batch b = make_batch(spec, 29);
  const RunOptions o;  // no scores: --scores stores every score
  const Results stored = [&] {
    const ScopedEnv store_all("DSA_DENSE_SKIP", "0");
    return gpu::make_gpu_sparse()->run(b, o);
  }();
  CHECK(stored.notes.find("dense scores left unstored") == std::string::npos);
  for (const char* rows : {"0", "400"}) {
    INFO("DSA_SOURCE_CHUNK_ROWS=" << rows << " (0: whole)");
    const ScopedEnv chunk("DSA_SOURCE_CHUNK_ROWS", rows);
    const Results skipped = gpu::make_gpu_sparse()->run(b, o);
    test::require_identical(b, stored, skipped, "stores skipped");
    if (gpu::describe_device().find("sm_90") == std::string::npos) continue;  // the mode needs the wgmma kernel
    INFO(skipped.notes);
    long long below = -1, total = -1;
    const size_t at = skipped.notes.find("below the rows' bounds: up to ");
    REQUIRE(at != std::string::npos);
    std::sscanf(skipped.notes.c_str() + at, "below the rows' bounds: up to %lld of %lld", &below, &total);
    CHECK(below > 0);  // the bounds rose
    CHECK(below < total);
  }
}

// Both forms of the source's selection: separate launches (DSA_SOURCE_SELECT_ROWS=0), and one
// launch (publish_once: few rows), timed as source_select.
TEST_CASE("timings name every kernel with events and positive medians") {
  Spec spec;
  spec.lc = {18000};
  spec.lens = {{17000, 18000}};
  spec.tails = {1};
  const Batch b = make_batch(spec, 5);
  RunOptions o;
  o.timing = true;
  o.timing_samples = 20;
  for (const char* once_rows : {"0", "1000"}) {
    INFO("DSA_SOURCE_SELECT_ROWS=" << once_rows);
    const ScopedEnv env("DSA_SOURCE_SELECT_ROWS", once_rows);
    const Results res = gpu::make_gpu_sparse()->run(b, o);
    std::vector<std::string> names;
    for (const KernelTiming& t : res.timings) {
      names.push_back(t.kernel);
      CHECK(t.samples >= 20);
      CHECK(t.median_ms > 0);
      CHECK(t.min_ms <= t.median_ms);
      CHECK(t.median_ms <= t.max_ms);
    }
    std::vector<std::string> want = {"gpu-sparse/dense_logits", "gpu-sparse/block_amax", "gpu-sparse/sparse_logits",
                                     "gpu-sparse/small_topk"};
    for (const char* k : {"gpu-sparse/block_topk", "gpu-sparse/topk", "gpu-sparse/source_select"})
      if ((std::string(k) == "gpu-sparse/source_select") == (std::string(once_rows) != "0")) want.push_back(k);
    for (const std::string& k : want) {
      INFO(k);
      CHECK(std::find(names.begin(), names.end(), k) != names.end());
    }
    CHECK(names.size() >= want.size());
  }
}
