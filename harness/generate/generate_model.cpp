// The generator's score model. Keys and queries are fp32 vectors built from a few production-like
// components, then quantized with the production quantizer (reference/formats.hpp):
//   * sinks: positions 0..3 carry a strong shared direction that every query also carries, so
//     they score high in every row (attention sinks);
//   * locality: the last 32 dims hold rope-like rotating pairs (periods 8 .. 65536 positions);
//     a query rotated to its row's newest position and a key rotated to its own position give
//     sum_j cos((newest - p) * theta_j): recent positions score higher, relative to each row;
//   * topic drift: each request's keys follow a smooth random walk (four slow sinusoids over
//     random directions); a query carries the topic of its newest position, so whole regions
//     (many blocks) score high or low together, which is what makes block selection matter;
//   * retrieval: each row looks for a few earlier positions (shared by every layer) plus one of
//     each layer's own, by carrying those keys' content; so consumers want some positions the
//     source does not rank high, and level one misses a few of a consumer's exact top-k;
//   * content: per-position Gaussian noise in keys and queries.
// Per-group magnitudes vary (model channel scales for keys, per-head scales for queries, a
// per-row scale), so ue8m0 exponents vary but stay within a few binades of each other.
// Weights: per-head bases (mostly positive, some negative heads) with per-row jitter, rounded to
// bf16 and divided by 64. Every random number comes from a stream keyed by (seed, purpose,
// indices), so any row or position can be generated alone, in any order, on any thread.
#include "harness/generate/generate_model.hpp"

#include <algorithm>
#include <cmath>

#include "core/constants.hpp"
#include "core/random.hpp"
#include "reference/formats.hpp"

namespace dsa::gen {

// ---------------------------------------------------------------- randomness
uint64_t stream_key(uint64_t seed, uint64_t tag, uint64_t a, uint64_t b, uint64_t c) {
  uint64_t h = splitmix64(seed);
  for (uint64_t v : {tag, a, b, c}) h = splitmix64(h ^ splitmix64(v + 0x632BE59BD9B4E019ull));
  return h;
}

namespace {
inline uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
constexpr double kTwoPi = 6.283185307179586476925;
constexpr double kHalfPi = 1.570796326794896619231;
constexpr double kLn2 = 0.693147180559945309417;
}  // namespace

Rng::Rng(uint64_t key) {
  for (int i = 0; i < 4; ++i) s_[i] = splitmix64(key + uint64_t(i) * kSplitmixGamma);
}

uint64_t Rng::next() {
  const uint64_t result = rotl(s_[1] * 5, 7) * 9;
  const uint64_t t = s_[1] << 17;
  s_[2] ^= s_[0];
  s_[3] ^= s_[1];
  s_[1] ^= s_[2];
  s_[0] ^= s_[3];
  s_[2] ^= t;
  s_[3] = rotl(s_[3], 45);
  return result;
}

double Rng::uniform() { return double(next() >> 11) * 0x1.0p-53; }
double Rng::uniform(double lo, double hi) { return lo + (hi - lo) * uniform(); }

int64_t Rng::below(int64_t n) {
  const int64_t v = int64_t(uniform() * double(n));
  return std::min(v, n - 1);
}

double Rng::normal() {
  if (has_spare_) {
    has_spare_ = false;
    return spare_;
  }
  const double u1 = 1.0 - uniform();  // (0, 1]
  const double u2 = uniform();
  const double radius = std::sqrt(-2.0 * det_log(u1));
  double s, c;
  det_sincos(kTwoPi * u2, &s, &c);
  spare_ = radius * s;
  has_spare_ = true;
  return radius * c;
}

double det_log(double x) {
  int e = 0;
  double m = std::frexp(x, &e);  // exact: x = m * 2^e, m in [0.5, 1)
  if (m < 0.70710678118654752) {
    m *= 2.0;
    e -= 1;
  }
  // log(m) = 2 atanh(s), s = (m - 1) / (m + 1), |s| < 0.18: the odd series converges fast.
  const double s = (m - 1.0) / (m + 1.0), s2 = s * s;
  double term = s, sum = 0.0;
  for (int k = 1; k <= 21; k += 2) {
    sum += term / double(k);
    term *= s2;
  }
  return 2.0 * sum + double(e) * kLn2;
}

void det_sincos(double x, double* s, double* c) {
  const double r = x - std::nearbyint(x / kTwoPi) * kTwoPi;  // [-pi, pi]
  const double quadrant = std::nearbyint(r / kHalfPi);
  const double y = r - quadrant * kHalfPi;                   // [-pi/4, pi/4]
  const double y2 = y * y;
  const double sn =
      y * (1 - y2 / 6 * (1 - y2 / 20 * (1 - y2 / 42 * (1 - y2 / 72 * (1 - y2 / 110 * (1 - y2 / 156))))));
  const double cs =
      1 - y2 / 2 * (1 - y2 / 12 * (1 - y2 / 30 * (1 - y2 / 56 * (1 - y2 / 90 * (1 - y2 / 132)))));
  switch (int(quadrant) & 3) {
    case 0: *s = sn; *c = cs; break;
    case 1: *s = cs; *c = -sn; break;
    case 2: *s = -sn; *c = -cs; break;
    default: *s = -cs; *c = sn; break;
  }
}

double det_exp2(double x) {
  const double n = std::floor(x);
  const double t = (x - n) * kLn2;  // [0, ln 2)
  double term = 1.0, sum = 1.0;
  for (int k = 1; k <= 18; ++k) {
    term *= t / double(k);
    sum += term;
  }
  return std::ldexp(sum, int(n));
}

// ---------------------------------------------------------------- the model
namespace {

constexpr int kContent = 96;     // dims 0..95: sinks, topics, content
constexpr int kPairs = 16;       // dims 96..127: rope-like rotating pairs
constexpr int kSinks = 4;        // positions 0..3
constexpr int kTopics = 4;
constexpr int kSharedTargets = 3;

// Component strengths (score scale: key and query content are N(0,1) per dim, so the random
// part of one head score has a standard deviation of about sqrt(96) ~ 10).
constexpr float kSinkKey = 16.0f, kSinkQuery = 4.0f;  // sink score ~ 64 * head's sink coefficient
constexpr float kTopicKey = 1.5f, kTopicQuery = 1.5f;  // up to ~ +-9 * head's topic coefficient
constexpr float kRopeKey = 1.5f, kRopeQuery = 1.5f;    // ~ 36 * head's rope coefficient at p = newest
constexpr float kRopeNoise = 0.2f;
// Keys share a mean direction that queries also carry: head scores sit on a positive offset,
// as in real models, so the top-k threshold is dense in relative terms and bf16 rounding on the
// sparse path reorders a few candidates near it.
constexpr float kMeanKey = 4.0f, kMeanQuery = 4.0f;

enum Tag : uint64_t { kWorld = 1, kRequest, kKey, kHead, kRow, kRowLayer, kQuery, kWeight, kPages };

struct World {
  float sink_dir[kContent];
  float mean_dir[kContent];
  float key_gain[4];
  double rope_freq[kPairs];
  double rope_phase[kPairs];
};

struct Topic {
  float u[kContent], v[kContent];
  double freq, phase;
};

struct RequestModel {
  KeyStyle style = KeyStyle::realistic;
  Topic topics[kTopics];
};

struct HeadParams {
  float sink, mean, rope, topic, target[kSharedTargets + 1], gain[4], weight;
};

void unit_vector(Rng& rng, float* x, int n) {
  double norm2 = 0.0;
  for (int i = 0; i < n; ++i) {
    x[i] = float(rng.normal());
    norm2 += double(x[i]) * x[i];
  }
  const float inv = float(1.0 / std::sqrt(norm2));
  for (int i = 0; i < n; ++i) x[i] *= inv;
}

World make_world(uint64_t seed) {
  World w;
  Rng rng(stream_key(seed, kWorld));
  unit_vector(rng, w.sink_dir, kContent);
  unit_vector(rng, w.mean_dir, kContent);
  for (float& g : w.key_gain) g = float(det_exp2(rng.uniform(-1.5, 1.5)));
  for (int j = 0; j < kPairs; ++j) {
    const double period = det_exp2(3.0 + 13.0 * j / (kPairs - 1));  // 8 .. 65536 positions
    w.rope_freq[j] = kTwoPi / period;
    w.rope_phase[j] = rng.uniform(0.0, kTwoPi);
  }
  return w;
}

RequestModel make_request(uint64_t seed, int b, KeyStyle style) {
  RequestModel m;
  m.style = style;
  Rng rng(stream_key(seed, kRequest, uint64_t(b)));
  for (Topic& t : m.topics) {
    unit_vector(rng, t.u, kContent);
    unit_vector(rng, t.v, kContent);
    const double period = det_exp2(rng.uniform(8.2, 14.9));  // ~300 .. ~30000 positions
    t.freq = kTwoPi / period;
    t.phase = rng.uniform(0.0, kTwoPi);
  }
  return m;
}

void add_topic(const RequestModel& m, int64_t p, float scale, float* x) {
  for (const Topic& t : m.topics) {
    double s, c;
    det_sincos(double(p) * t.freq + t.phase, &s, &c);
    const float cu = scale * float(c), sv = scale * float(s);
    for (int d = 0; d < kContent; ++d) x[d] += cu * t.u[d] + sv * t.v[d];
  }
}

// Position whose key vector position p reuses: itself, or for repeated keys one of four
// non-sink positions (so every block of 8 holds the same four vectors).
int64_t key_source(const RequestModel& m, int64_t p) {
  return m.style == KeyStyle::repeated ? kSinks + p % 4 : p;
}

// The content (noise) part of the key at position p (already mapped by key_source); queries
// that retrieve p carry it too. Leaves rng ready for the rope noise of the same key.
void key_content(uint64_t seed, int b, int64_t p, Rng* rng_out, float* x) {
  Rng rng(stream_key(seed, kKey, uint64_t(b), uint64_t(p)));
  for (int d = 0; d < kContent; ++d) x[d] = float(rng.normal());
  if (rng_out) *rng_out = rng;
}

void key_vector(const World& w, const RequestModel& m, uint64_t seed, int b, int64_t pos, float* k) {
  const int64_t p = key_source(m, pos);
  Rng rng(0);
  key_content(seed, b, p, &rng, k);
  add_topic(m, p, kTopicKey, k);
  for (int d = 0; d < kContent; ++d) k[d] += kMeanKey * w.mean_dir[d];
  if (p < kSinks)
    for (int d = 0; d < kContent; ++d) k[d] += kSinkKey * w.sink_dir[d];
  for (int j = 0; j < kPairs; ++j) {
    double s, c;
    det_sincos(double(p) * w.rope_freq[j] + w.rope_phase[j], &s, &c);
    k[kContent + 2 * j] = kRopeKey * float(c) + kRopeNoise * float(rng.normal());
    k[kContent + 2 * j + 1] = kRopeKey * float(s) + kRopeNoise * float(rng.normal());
  }
  for (int d = 0; d < kHeadDim; ++d) k[d] *= w.key_gain[d / 32];
}

// The extreme styles move group exponents: shifts added to the ue8m0 scale bytes after
// quantization, so values stay exact in the format (scaling the floats instead would meet the
// quantizer's floor, which turns tiny groups into zeros).
struct Shifts {
  int g[4] = {0, 0, 0, 0};
  void group(int i, int e) { g[i] += e; }
  void all(int e) {
    for (int& x : g) x += e;
  }
};

void apply_shifts(const Shifts& sh, uint8_t* scales4) {
  for (int i = 0; i < kScaleGroups; ++i) scales4[i] = uint8_t(std::clamp(int(scales4[i]) + sh.g[i], 1, 254));
}

// The wide and magnitudes key styles at position pos (sinks stay realistic).
Shifts key_shifts(KeyStyle style, int64_t pos) {
  Shifts sh;
  if (pos < kSinks) return sh;
  const int64_t c = pos % 13;
  if (style == KeyStyle::wide) {
    if (c == 3) sh.group(0, 12);  // group 0 twelve binades up
    if (c == 7) sh.group(3, -6);  // group 3 six binades down
  } else if (style == KeyStyle::magnitudes) {
    if (c == 5) sh.all(40);   // huge
    if (c == 9) sh.all(-60);  // tiny: with a tiny query row, subnormal scores
  }
  return sh;
}

// QueryStyle::extreme for head h of row r: group 3 far below groups 0-2 on every row (the wgmma
// route's one in-place multiply), group 0 far above the others on some rows (its multiplies
// before groups 1-2), group 3 far above groups 0-2 on some rows (rows the wgmma route does not
// admit), and whole rows moved by 2^30 or 2^-70 (huge scores; tiny ones that meet tiny keys in
// subnormals).
Shifts query_shifts(int r, int h) {
  Shifts sh;
  if (h % 8 == 1) sh.group(3, -6);
  if (h % 8 == 2 && r % 3 == 1) sh.group(3, 6);
  if (h % 8 == 3 && r % 3 == 2) sh.group(0, 6);
  if (r % 4 == 1) sh.all(30);
  if (r % 4 == 3) sh.all(-70);
  return sh;
}

HeadParams make_head(uint64_t seed, int layer, int h) {
  HeadParams hp;
  Rng rng(stream_key(seed, kHead, uint64_t(layer), uint64_t(h)));
  hp.sink = float(rng.uniform(0.3, 1.2));
  hp.rope = float(rng.uniform(0.0, 1.2));
  hp.mean = float(rng.uniform(0.5, 1.5));
  hp.topic = float(rng.uniform(0.2, 1.0));
  for (int i = 0; i < kSharedTargets; ++i)
    hp.target[i] = rng.uniform() < 0.5 ? float(rng.uniform(0.1, 0.5)) : 0.0f;
  hp.target[kSharedTargets] = float(rng.uniform(0.1, 0.5));  // the layer's own target
  for (float& g : hp.gain) g = float(det_exp2(rng.uniform(-1.5, 1.5)));
  // Real index weights are mostly positive with a few negative heads.
  hp.weight = rng.uniform() < 0.15 ? -float(rng.uniform(0.05, 0.3)) : float(rng.uniform(0.25, 1.0));
  return hp;
}

// What one row looks for, shared by every layer: its newest position's topic and rotation, the
// content of a few earlier positions it retrieves, and its overall magnitude.
struct RowIntent {
  int64_t newest = 0;
  bool any = false;  // L > 0
  float topic[kContent];
  float rope_cos[kPairs], rope_sin[kPairs];
  float targets[kSharedTargets + 1][kContent];  // last slot: the current layer's own target
  float scale = 1.0f;
};

void make_intent(const World& w, const RequestModel& m, uint64_t seed, int b, int row, int64_t L,
                 RowIntent* it) {
  it->any = L > 0;
  it->newest = L > 0 ? L - 1 : 0;
  std::fill(it->topic, it->topic + kContent, 0.0f);
  add_topic(m, it->newest, kTopicQuery, it->topic);
  for (int j = 0; j < kPairs; ++j) {
    double s, c;
    det_sincos(double(it->newest) * w.rope_freq[j] + w.rope_phase[j], &s, &c);
    it->rope_cos[j] = float(c);
    it->rope_sin[j] = float(s);
  }
  Rng rng(stream_key(seed, kRow, uint64_t(row)));
  it->scale = float(det_exp2(rng.uniform(-0.5, 0.5)));
  for (int i = 0; i < kSharedTargets; ++i) {
    if (it->any) key_content(seed, b, key_source(m, rng.below(L)), nullptr, it->targets[i]);
    else std::fill(it->targets[i], it->targets[i] + kContent, 0.0f);
  }
}

void set_layer_target(const RequestModel& m, uint64_t seed, int layer, int b, int row, int64_t L,
                      RowIntent* it) {
  float* x = it->targets[kSharedTargets];
  if (!it->any) {
    std::fill(x, x + kContent, 0.0f);
    return;
  }
  Rng rng(stream_key(seed, kRowLayer, uint64_t(layer), uint64_t(row)));
  key_content(seed, b, key_source(m, rng.below(L)), nullptr, x);
}

void query_vector(const World& w, const HeadParams& hp, const RowIntent& it, uint64_t seed, int layer,
                  int row, int h, float* q) {
  Rng rng(stream_key(seed, kQuery, uint64_t(layer), uint64_t(row), uint64_t(h)));
  for (int d = 0; d < kContent; ++d) {
    float x = float(rng.normal()) + hp.sink * kSinkQuery * w.sink_dir[d] +
              hp.mean * kMeanQuery * w.mean_dir[d] + hp.topic * it.topic[d];
    for (int i = 0; i <= kSharedTargets; ++i) x += hp.target[i] * it.targets[i][d];
    q[d] = x;
  }
  const float amp = hp.rope * kRopeQuery;
  for (int j = 0; j < kPairs; ++j) {
    q[kContent + 2 * j] = amp * it.rope_cos[j] + kRopeNoise * float(rng.normal());
    q[kContent + 2 * j + 1] = amp * it.rope_sin[j] + kRopeNoise * float(rng.normal());
  }
  for (int d = 0; d < kHeadDim; ++d) q[d] *= hp.gain[d / 32] * it.scale;
}

float row_weight(const HeadParams& hp, Rng& rng) {
  const float raw = hp.weight * float(1.0 + 0.2 * rng.normal());
  return ref::bf16_to_float(ref::bf16_rne(raw)) / 64.0f;  // bf16-exact, as production stores them
}

// ---------------------------------------------------------------- assembling the batch
int64_t pages_of(int32_t lc, int page_size) { return (int64_t(lc) + page_size - 1) / page_size; }

void fill_layout(const BatchSpec& spec, Batch& batch) {
  batch.topk = spec.topk;
  batch.page_size = spec.page_size;
  batch.compress_ratio = spec.compress_ratio;
  batch.source_layer = spec.source_layer;
  batch.origin = "synthetic";
  batch.description = spec.description;
  for (const RequestSpec& r : spec.requests) {
    batch.num_rows.push_back(int32_t(r.lengths.size()));
    batch.compressed_len.push_back(r.lc);
    if (spec.with_tails) batch.tail_rows.push_back(r.tail);
    batch.compress_len.insert(batch.compress_len.end(), r.lengths.begin(), r.lengths.end());
  }
}

// Page tables: logical pages numbered request by request, mapped to pool pages either one to
// one (identity) or through a seeded permutation (pages scattered as in a busy pool). The pool
// always has at least one page so its dataset is never empty.
void fill_page_tables(const BatchSpec& spec, Batch& batch) {
  int64_t total = 0, width = 1;
  for (const RequestSpec& r : spec.requests) {
    total += pages_of(r.lc, spec.page_size);
    width = std::max(width, pages_of(r.lc, spec.page_size));
  }
  batch.pages = std::max<int64_t>(total, 1);
  std::vector<int32_t> physical(size_t(batch.pages));
  for (int64_t i = 0; i < batch.pages; ++i) physical[size_t(i)] = int32_t(i);
  if (spec.shuffle_pages) {
    Rng rng(stream_key(spec.seed, kPages));
    for (int64_t i = batch.pages - 1; i > 0; --i) std::swap(physical[size_t(i)], physical[size_t(rng.below(i + 1))]);
  }
  batch.table_width = int(width);
  batch.page_table.assign(spec.requests.size() * size_t(width), -1);
  int64_t logical = 0;
  for (size_t b = 0; b < spec.requests.size(); ++b)
    for (int64_t j = 0; j < pages_of(spec.requests[b].lc, spec.page_size); ++j)
      batch.page_table[b * size_t(width) + size_t(j)] = physical[size_t(logical++)];
}

void fill_pool(const BatchSpec& spec, const World& w, Batch& batch) {
  const int P = spec.page_size;
  batch.pool.assign(size_t(batch.pages) * size_t(P) * kSlotBytes, 0);
  // Unused slots: zero payload with a valid scale byte (2^0), so no byte is ever 0 or 255 there.
  for (int64_t page = 0; page < batch.pages; ++page) {
    uint8_t* scales = batch.pool.data() + size_t(page) * P * kSlotBytes + size_t(P) * kPackedDim;
    std::fill(scales, scales + size_t(P) * kScaleGroups, uint8_t(127));
  }
  for (size_t b = 0; b < spec.requests.size(); ++b) {
    const RequestModel m = make_request(spec.seed, int(b), spec.requests[b].keys);
    const int64_t lc = spec.requests[b].lc;
#pragma omp parallel for schedule(static)
    for (int64_t p = 0; p < lc; ++p) {
      float k[kHeadDim];
      key_vector(w, m, spec.seed, int(b), p, k);
      const int64_t page = batch.page_table[b * size_t(batch.table_width) + size_t(p / P)];
      uint8_t* base = batch.pool.data() + size_t(page) * P * kSlotBytes;
      uint8_t* scales = base + size_t(P) * kPackedDim + (p % P) * kScaleGroups;
      ref::quantize_vector_e2m1(k, base + (p % P) * kPackedDim, scales);
      apply_shifts(key_shifts(m.style, p), scales);
    }
  }
}

void fill_layers(const BatchSpec& spec, const World& w, Batch& batch) {
  const int R = batch.rows();
  std::vector<std::vector<HeadParams>> heads(spec.layers.size());
  for (size_t li = 0; li < spec.layers.size(); ++li) {
    Layer layer;
    layer.id = spec.layers[li].id;
    layer.role = spec.layers[li].role;
    layer.q.assign(size_t(R) * kHeads * kPackedDim, 0);
    layer.q_scale.assign(size_t(R) * kHeads * kScaleGroups, 0);
    layer.weights.assign(size_t(R) * kHeads, 0.0f);
    batch.layers.push_back(std::move(layer));
    for (int h = 0; h < kHeads; ++h) heads[li].push_back(make_head(spec.seed, spec.layers[li].id, h));
  }
  std::vector<RequestModel> models;
  std::vector<int> row_request;
  for (size_t b = 0; b < spec.requests.size(); ++b) {
    models.push_back(make_request(spec.seed, int(b), spec.requests[b].keys));
    row_request.insert(row_request.end(), spec.requests[b].lengths.size(), int(b));
  }
#pragma omp parallel for schedule(dynamic, 16)
  for (int r = 0; r < R; ++r) {
    const int b = row_request[size_t(r)];
    const int64_t L = batch.compress_len[size_t(r)];
    RowIntent it;
    make_intent(w, models[size_t(b)], spec.seed, b, r, L, &it);
    for (size_t li = 0; li < spec.layers.size(); ++li) {
      Layer& layer = batch.layers[li];
      set_layer_target(models[size_t(b)], spec.seed, layer.id, b, r, L, &it);
      Rng wrng(stream_key(spec.seed, kWeight, uint64_t(layer.id), uint64_t(r)));
      for (int h = 0; h < kHeads; ++h) {
        float q[kHeadDim];
        query_vector(w, heads[li][size_t(h)], it, spec.seed, layer.id, r, h, q);
        const size_t cell = size_t(r) * kHeads + size_t(h);
        ref::quantize_vector_e2m1(q, layer.q.data() + cell * kPackedDim, layer.q_scale.data() + cell * kScaleGroups);
        if (spec.requests[size_t(b)].queries == QueryStyle::extreme)
          apply_shifts(query_shifts(r, h), layer.q_scale.data() + cell * kScaleGroups);
        layer.weights[cell] = row_weight(heads[li][size_t(h)], wrng);
      }
    }
  }
}

}  // namespace

Batch build_batch(const BatchSpec& spec) {
  Batch batch;
  fill_layout(spec, batch);
  fill_page_tables(spec, batch);
  const World w = make_world(spec.seed);
  fill_pool(spec, w, batch);
  fill_layers(spec, w, batch);
  batch.finalize();
  return batch;
}

}  // namespace dsa::gen
