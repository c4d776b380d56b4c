// An independent check of the reference: a plain long-double model of semantics.md written
// from the page alone. It shares nothing with reference/ (its own e2m1 and ue8m0 decoding, its
// own page-table arithmetic, integer group sums instead of the error-free float sum, its own
// RNE roundings to fp32 and bf16, its own top-k) and reads only the batch's raw arrays. It runs
// over sampled rows of every generator preset and must agree bit for bit with the sparse and
// mask references on dense scores, sparse scores, blocks, picks and tail picks.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <numeric>
#include <sstream>
#include <string>
#include <vector>

#include "harness/generate/generate.hpp"
#include "harness/impls/reference.hpp"
#include "harness/batch/row_selection.hpp"
#include "tests/catch.hpp"

using namespace dsa;

namespace {

using Real = long double;

// ---- number formats, from "Number formats" ----

// Twice the e2m1 value of a nibble: an integer in [-12, 12] (bit 3 sign, bits 2..1 exponent,
// bit 0 mantissa; magnitude m/2 when e == 0, else (1 + m/2) * 2^(e-1)).
int twice_e2m1(unsigned nibble) {
  const unsigned e = (nibble >> 1) & 3u, m = nibble & 1u;
  const int twice = e == 0 ? int(m) : int(2 + m) << (e - 1);
  return (nibble & 8u) ? -twice : twice;
}

// One 128-dim vector: twice its e2m1 values and its four ue8m0 exponents E (scale 2^(E-127)).
struct Vector128 {
  int twice[128];
  int exponent[4];
};

Vector128 decode(const uint8_t* packed, const uint8_t* scales) {
  Vector128 v;
  for (int i = 0; i < 64; ++i) {
    v.twice[2 * i] = twice_e2m1(packed[i] & 0x0fu);
    v.twice[2 * i + 1] = twice_e2m1(packed[i] >> 4);
  }
  for (int g = 0; g < 4; ++g) v.exponent[g] = scales[g];
  return v;
}

// Round to a binary format with `bits` significant bits and smallest quantum 2^min_quantum,
// ties to even (the default rounding mode of nearbyintl).
Real round_to(Real x, int bits, int min_quantum) {
  if (x == 0 || !std::isfinite(x)) return x;
  int e = 0;
  std::frexp(x, &e);  // x = m * 2^e, 0.5 <= |m| < 1
  const int quantum = std::max(e - bits, min_quantum);
  return std::ldexp(std::nearbyint(std::ldexp(x, -quantum)), quantum);
}
// The conversion to float is one IEEE rounding (RNE, subnormals kept), and much faster.
Real to_fp32(Real x) { return Real(float(x)); }
Real to_bf16(Real x) { return round_to(x, 8, -133); }

// ---- keys through the page table, from "Index-K pool (paged)" ----

// Position j of request b: page table[b][j / P], slot j % P of that page; payloads first
// (64 bytes a slot), then the scales (4 bytes a slot).
Vector128 key_at(const Batch& batch, int request, int64_t j) {
  const int64_t P = batch.page_size;
  const int64_t page = batch.page_table[size_t(request) * size_t(batch.table_width) + size_t(j / P)];
  const int64_t offset = j % P;
  const uint8_t* base = batch.pool.data() + page * P * 68;
  return decode(base + 64 * offset, base + 64 * P + 4 * offset);
}

// ---- scores, from "Scores" ----

// s_h for the 32 heads of one (row, position), rounded once to fp32: each group sum is an exact
// integer (twice times twice = 4x the products), scaled exactly in long double.
void head_scores(const Vector128* q, const Vector128& k, Real* s) {
  for (int h = 0; h < 32; ++h) {
    Real sum = 0;
    for (int g = 0; g < 4; ++g) {
      long long group = 0;
      for (int d = 32 * g; d < 32 * g + 32; ++d) group += (long long)q[h].twice[d] * k.twice[d];
      sum += std::ldexp(Real(group), q[h].exponent[g] + k.exponent[g] - 254 - 2);
    }
    s[h] = to_fp32(sum);
  }
}

Real dense_score(const Real* s, const float* w) {
  Real acc[4] = {0, 0, 0, 0};
  for (int h = 0; h < 32; ++h) acc[h % 4] = to_fp32(std::max(s[h], Real(0)) * Real(w[h]) + acc[h % 4]);
  return to_fp32(to_fp32(acc[0] + acc[2]) + to_fp32(acc[1] + acc[3]));
}

Real sparse_score(const Real* s, const float* w) {
  Real acc[4] = {0, 0, 0, 0};
  for (int h = 0; h < 32; ++h) {
    const Real a = std::max(to_bf16(s[h]), Real(0));
    acc[h % 4] = to_bf16(a * to_bf16(Real(w[h])) + acc[h % 4]);
  }
  return to_bf16(to_bf16(acc[0] + acc[2]) + to_bf16(acc[1] + acc[3]));
}

// Dense scores of one row of one layer at every position below L; sparse scores at the
// positions marked in `sparse_at` (the candidates; NaN elsewhere).
struct RowScores {
  std::vector<Real> dense, sparse;
};

RowScores row_scores(const Batch& batch, const Layer& layer, int row, const std::vector<char>& sparse_at) {
  Vector128 q[32];
  const uint8_t* packed = layer.q.data() + size_t(row) * 32 * 64;
  const uint8_t* scales = layer.q_scale.data() + size_t(row) * 32 * 4;
  for (int h = 0; h < 32; ++h) q[h] = decode(packed + 64 * h, scales + 4 * h);
  const float* w = layer.weights.data() + size_t(row) * 32;
  const int request = batch.row_request[size_t(row)];
  const int64_t L = batch.compress_len[size_t(row)];
  RowScores out;
  Real s[32];
  for (int64_t j = 0; j < L; ++j) {
    head_scores(q, key_at(batch, request, j), s);
    out.dense.push_back(dense_score(s, w));
    out.sparse.push_back(sparse_at.empty() || !sparse_at[size_t(j)] ? std::nan("") : sparse_score(s, w));
  }
  return out;
}

// ---- selection, from "Selection": larger score first, then smaller id ----

std::vector<int32_t> top(const std::vector<int32_t>& ids, const std::vector<Real>& score, size_t k) {
  std::vector<size_t> order(ids.size());
  std::iota(order.begin(), order.end(), size_t(0));
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return score[a] != score[b] ? score[a] > score[b] : ids[a] < ids[b];
  });
  std::vector<int32_t> out;
  for (size_t i = 0; i < std::min(k, order.size()); ++i) out.push_back(ids[order[i]]);
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<int32_t> all_below(int64_t n) {
  std::vector<int32_t> ids(size_t(std::max<int64_t>(n, 0)));
  std::iota(ids.begin(), ids.end(), 0);
  return ids;
}

std::vector<int32_t> level_one(const std::vector<Real>& dense) {
  const int64_t L = int64_t(dense.size()), nblocks = (L + 7) / 8;
  std::vector<Real> key(size_t(nblocks), -std::numeric_limits<Real>::infinity());
  for (int64_t j = 0; j < L; ++j) key[size_t(j / 8)] = std::max(key[size_t(j / 8)], dense[size_t(j)]);
  if (nblocks > 0) key.back() = std::numeric_limits<Real>::infinity();
  return top(all_below(nblocks), key, 2048);
}

// The positions of the published blocks below L, in candidate-column order.
std::vector<int32_t> candidates_of(const std::vector<int32_t>& blocks, int64_t L) {
  std::vector<int32_t> out;
  for (int32_t b : blocks)
    for (int64_t j = int64_t(b) * 8; j < int64_t(b) * 8 + 8 && j < L; ++j) out.push_back(int32_t(j));
  return out;
}

// Level two on published blocks, ranked by `score` (indexed by position).
std::vector<int32_t> level_two(const std::vector<int32_t>& blocks, int64_t L, const std::vector<Real>& score, int k) {
  const std::vector<int32_t> candidates = candidates_of(blocks, L);
  std::vector<Real> s;
  for (int32_t j : candidates) s.push_back(score[size_t(j)]);
  return top(candidates, s, size_t(k));
}

// ---- comparing with the reference's results ----

std::vector<int32_t> picks_of(const std::vector<int32_t>& table, size_t row, int width, int32_t pad) {
  std::vector<int32_t> out;
  for (int i = 0; i < width; ++i)
    if (table[row * size_t(width) + size_t(i)] != pad) out.push_back(table[row * size_t(width) + size_t(i)]);
  return out;
}

// "preset edge layer 24 row 17 sparse score at 4097: reference 1.5, model 1.25" or "" when equal.
template <typename T>
std::string first_mismatch(const std::string& where, const std::vector<T>& reference, const std::vector<T>& model) {
  for (size_t i = 0; i < std::max(reference.size(), model.size()); ++i) {
    if (i < reference.size() && i < model.size() && reference[i] == model[i]) continue;
    std::ostringstream s;
    s << where << " at " << i << ": reference ";
    if (i < reference.size()) s << double(reference[i]); else s << "none";
    s << ", model ";
    if (i < model.size()) s << double(model[i]); else s << "none";
    return s.str();
  }
  return "";
}

float bf16_value(uint16_t bits) {
  const uint32_t u = uint32_t(bits) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

struct Checked {
  int rows = 0, dense_cells = 0, sparse_cells = 0, pick_rows = 0;
};

// Every output of the sparse and mask references on `rows` against the model.
Checked check_preset(const std::string& preset, const Batch& batch, const std::vector<int>& rows) {
  RunOptions o;
  o.rows = rows;
  o.scores = true;
  const Results sparse = make_reference(PathKind::sparse)->run(batch, o);
  const Results mask = make_reference(PathKind::mask)->run(batch, o);
  Checked done;
  for (int r : rows) {
    const int64_t L = batch.compress_len[size_t(r)];
    const std::string at = "preset " + preset + " row " + std::to_string(r) + " (L " + std::to_string(L) + ")";
    std::vector<int32_t> blocks;
    ++done.rows;
    for (const Layer& layer : batch.layers) {
      std::vector<char> candidate;
      if (layer.role == Role::consumer) {
        candidate.assign(size_t(L), 0);
        for (int32_t j : candidates_of(blocks, L)) candidate[size_t(j)] = 1;
      }
      const RowScores model = row_scores(batch, layer, r, candidate);
      const std::string where = at + " layer " + std::to_string(layer.id);
      const std::vector<float> model_dense(model.dense.begin(), model.dense.end());
      const LayerResult& lm = mask.layers.at(layer.id);
      CHECK(first_mismatch(where + " dense score", lm.dense_scores.at(size_t(r)), model_dense) == "");
      done.dense_cells += int(model_dense.size());
      std::vector<int32_t> want_mask, want_sparse;
      if (layer.role == Role::source) {
        blocks = level_one(model.dense);
        CHECK(first_mismatch(where + " block", picks_of(mask.blocks, size_t(r), 2048, INT32_MAX), blocks) == "");
        CHECK(first_mismatch(where + " block", picks_of(sparse.blocks, size_t(r), 2048, INT32_MAX), blocks) == "");
      }
      if (layer.role == Role::consumer) {
        want_mask = level_two(blocks, L, model.dense, batch.topk);
        want_sparse = level_two(blocks, L, model.sparse, batch.topk);
        std::vector<float> model_sparse;
        for (int32_t j : candidates_of(blocks, L)) model_sparse.push_back(float(model.sparse[size_t(j)]));
        std::vector<float> ref_sparse;
        for (uint16_t bits : sparse.layers.at(layer.id).sparse_scores.at(size_t(r))) ref_sparse.push_back(bf16_value(bits));
        CHECK(first_mismatch(where + " sparse score (candidate column)", ref_sparse, model_sparse) == "");
        done.sparse_cells += int(model_sparse.size());
      } else {
        want_mask = want_sparse = top(all_below(L), model.dense, size_t(batch.topk));
      }
      CHECK(first_mismatch(where + " mask pick", picks_of(lm.positions, size_t(r), batch.topk, -1), want_mask) == "");
      const LayerResult& ls = sparse.layers.at(layer.id);
      CHECK(first_mismatch(where + " sparse pick", picks_of(ls.positions, size_t(r), batch.topk, -1), want_sparse) == "");
      const int64_t tail = batch.tail_index(r);
      if (layer.role == Role::consumer && tail >= 0) {
        CHECK(first_mismatch(where + " mask tail pick", picks_of(lm.tail_positions, size_t(tail), batch.topk, -1), want_mask) == "");
        CHECK(first_mismatch(where + " sparse tail pick", picks_of(ls.tail_positions, size_t(tail), batch.topk, -1), want_sparse) == "");
      }
      ++done.pick_rows;
    }
  }
  return done;
}

Batch preset_batch(const std::string& preset) {
  GenerateOptions o;
  o.preset = preset;
  o.seed = 11;
  if (preset == "chunk-256k") {  // a reduced chunk, still beyond 20000 positions and 2048 blocks
    o.context = 24000;
    o.rows_per_request = 64;
  }
  return generate_batch(o);
}

// DSA_MODEL_PRESETS: a comma-separated subset, where the same code runs again only for the
// sanitizers (the asan test preset leaves out chunk-256k, the slowest under ASan); the plain
// build checks every preset.
std::vector<std::string> model_presets() {
  const char* env = std::getenv("DSA_MODEL_PRESETS");
  if (!env || !*env) return preset_names();
  const std::vector<std::string> known = preset_names();
  std::vector<std::string> out;
  std::stringstream list(env);
  for (std::string name; std::getline(list, name, ',');) {
    INFO("DSA_MODEL_PRESETS names " << name);
    REQUIRE(std::find(known.begin(), known.end(), name) != known.end());
    out.push_back(name);
  }
  return out;
}

}  // namespace

TEST_CASE("the model's own formats: e2m1 codes, roundings") {
  const int twice[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};
  for (unsigned n = 0; n < 16; ++n) CHECK(twice_e2m1(n) == twice[n]);
  CHECK(to_fp32(1 + std::ldexp(Real(1), -24)) == 1);                 // tie to even, down
  CHECK(to_fp32(1 + 3 * std::ldexp(Real(1), -24)) == 1 + std::ldexp(Real(1), -22));  // tie to even, up
  CHECK(to_bf16(Real(1) + std::ldexp(Real(1), -8)) == 1);
  CHECK(to_bf16(Real(1) + 3 * std::ldexp(Real(1), -8)) == 1 + std::ldexp(Real(1), -6));
  CHECK(to_fp32(std::ldexp(Real(3), -151)) == std::ldexp(Real(1), -149));  // subnormal quantum
}

TEST_CASE("the reference agrees with the independent model on every preset's sampled rows") {
  const std::vector<std::string> presets = model_presets();
  REQUIRE(!presets.empty());
  for (const std::string& preset : presets) {
    const Batch batch = preset_batch(preset);
    // Two drawn rows plus the shortest and longest (select_rows adds them); on numerics the rows
    // of its extremes: wide keys (0), huge scores (5, 9), subnormal ones (7), a tiny row (11).
    const std::vector<int> rows = select_rows(batch, preset == "numerics" ? "0,5,7,9,11" : "2", 5);
    INFO("preset " << preset);
    REQUIRE(rows.size() >= 2);
    const Checked done = check_preset(preset, batch, rows);
    CHECK(done.rows == int(rows.size()));
    CHECK(done.dense_cells > 0);
    if (batch.source()) CHECK(done.sparse_cells > 0);
    if (preset == "chunk-256k") CHECK(batch.max_len() > 20000);
  }
}
