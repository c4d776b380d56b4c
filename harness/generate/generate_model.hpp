#pragma once
// The generator's data model (internal to harness/generate/ and its test): a portable RNG,
// the layout a preset decides (BatchSpec), and build_batch, which turns a layout into keys,
// queries and weights that score like production. See generate_model.cpp for the score model.
#include <cstdint>
#include <string>
#include <vector>

#include "core/batch.hpp"

namespace dsa::gen {

// ---- portable randomness: only integer ops, IEEE + - * / and sqrt, so every platform and
// compiler gives the same bits (the model's files are compiled with -ffp-contract=off); the
// integer mixing is core/random.hpp's splitmix64 ----
// Key of an independent stream: hash of the seed, a purpose tag and up to three indices.
uint64_t stream_key(uint64_t seed, uint64_t tag, uint64_t a = 0, uint64_t b = 0, uint64_t c = 0);

// xoshiro256** seeded from a stream key through splitmix64.
class Rng {
 public:
  explicit Rng(uint64_t key);
  uint64_t next();
  double uniform();                       // [0, 1)
  double uniform(double lo, double hi);   // [lo, hi)
  int64_t below(int64_t n);               // [0, n), n > 0
  double normal();                        // Box-Muller with our own log/sin/cos

 private:
  uint64_t s_[4];
  double spare_ = 0.0;
  bool has_spare_ = false;
};

// Deterministic elementary functions (double accuracy is not the point; identical bits are).
double det_log(double x);                       // x > 0
void det_sincos(double x, double* s, double* c);
double det_exp2(double x);                      // 2^x

// ---- the layout a preset decides ----
enum class KeyStyle {
  realistic,   // sinks + positional (rope-like) locality + topic drift + per-position content
  repeated,    // four distinct key vectors cycling with period 4: exact score ties everywhere
  wide,        // realistic, and some keys' group exponents span 6 to 12 binades (the GPU
               // kernels' generic route for keys)
  magnitudes   // realistic, and some keys scaled by 2^40 or 2^-60: huge and subnormal scores
};

// Queries: realistic (the model's), or extreme: per head and row, the group and row exponents
// that decide the GPU kernels' exact routes (QueryStyle::extreme in generate_model.cpp).
enum class QueryStyle { realistic, extreme };

struct RequestSpec {
  int32_t lc = 0;                 // compressed length at the newest row
  std::vector<int32_t> lengths;   // L of each row (<= lc)
  int32_t tail = 0;               // final rows that form the tail
  KeyStyle keys = KeyStyle::realistic;
  QueryStyle queries = QueryStyle::realistic;
};

struct LayerSpec {
  int id = 0;
  Role role = Role::plain;
};

struct BatchSpec {
  uint64_t seed = 0;
  int compress_ratio = 1;
  int source_layer = -1;
  int page_size = 128;
  int topk = 512;
  bool shuffle_pages = true;      // false: identity page table (running page counter)
  bool with_tails = false;        // write /requests/tail_rows
  std::string description;
  std::vector<RequestSpec> requests;
  std::vector<LayerSpec> layers;
};

// Builds the batch (finalize() called). Rows and positions are generated in parallel, each
// from its own stream, so the result does not depend on the thread count.
Batch build_batch(const BatchSpec& spec);

}  // namespace dsa::gen
