// Presets of the synthetic batch generator: each turns GenerateOptions into a layout (requests,
// row lengths, layers, tails, page order) and hands it to the data model (generate_model.cpp).
#include "harness/generate/generate.hpp"

#include <algorithm>
#include <functional>
#include <set>
#include <sstream>

#include "core/errors.hpp"
#include "core/memory_budget.hpp"
#include "harness/generate/generate_model.hpp"

namespace dsa {

namespace {

using gen::BatchSpec;
using gen::KeyStyle;
using gen::QueryStyle;
using gen::LayerSpec;
using gen::RequestSpec;

// Bumped whenever the data model changes what a preset and seed produce.
constexpr int kModelVersion = 1;
constexpr int kSource = 20;
const std::vector<int> kConsumers4 = {24, 28, 32, 36};

[[noreturn]] void bad_option(const GenerateOptions& o, const std::string& option, const std::string& rule) {
  throw InputError("generate --preset " + o.preset, option, rule);
}

void reject(const GenerateOptions& o, bool given, const std::string& option) {
  if (given) bad_option(o, option, "does not apply to this preset (its layout is constructed case by case)");
}

// Presets whose layout is built case by case take no size overrides.
void reject_size_overrides(const GenerateOptions& o) {
  reject(o, o.requests != -1, "--requests");
  reject(o, o.rows_per_request != -1, "--rows-per-request");
  reject(o, o.context != -1, "--context");
}

// Upper bounds of the size options: far beyond any real prefill chunk, well below what would
// overflow an int32 position or make the layout itself (one length per row) a memory hazard.
int option_max(const std::string& option) {
  if (option == "--requests") return 1 << 16;
  if (option == "--rows-per-request") return 1 << 20;
  return 1 << 24;  // --context
}
constexpr int64_t kMaxTotalRows = int64_t(1) << 24;

int positive_or(const GenerateOptions& o, int value, int fallback, const std::string& option, int min_value) {
  if (value == -1) return fallback;
  if (value < min_value || value > option_max(option))
    bad_option(o, option, "must be in [" + std::to_string(min_value) + ", " + std::to_string(option_max(option)) +
                              "] (got " + std::to_string(value) + ")");
  return value;
}

void check_total_rows(const GenerateOptions& o, int requests, int rows_per_request) {
  if (int64_t(requests) * rows_per_request > kMaxTotalRows)
    bad_option(o, o.requests != -1 ? "--requests" : "--rows-per-request",
               std::to_string(requests) + " requests of " + std::to_string(rows_per_request) + " rows exceed " +
                   std::to_string(kMaxTotalRows) + " rows in all");
}

// Bytes the batch will hold in memory (and about as many on disk): queries per row and layer,
// key pool pages per request. Checked against the memory budget before anything is generated.
uint64_t projected_bytes(const BatchSpec& spec) {
  constexpr uint64_t kRowLayerBytes = uint64_t(kHeads) * (kPackedDim + kScaleGroups + sizeof(float));
  uint64_t rows = 0, pages = 0;
  for (const RequestSpec& r : spec.requests) {
    rows += r.lengths.size();
    pages += uint64_t(r.lc) / uint64_t(spec.page_size) + 1;
  }
  return rows * spec.layers.size() * kRowLayerBytes + pages * uint64_t(spec.page_size) * kSlotBytes;
}

// Layers of a ratio-1 preset: the source 20 plus consumers. --layers must name 20.
std::vector<LayerSpec> ratio1_layers(const GenerateOptions& o, const std::vector<int>& consumers) {
  std::vector<int> ids = o.layers;
  if (ids.empty()) {
    ids = consumers;
    ids.push_back(kSource);
  }
  std::set<int> unique(ids.begin(), ids.end());
  if (unique.size() != ids.size()) bad_option(o, "--layers", "lists a layer id twice");
  if (!unique.count(kSource)) bad_option(o, "--layers", "must include the source layer 20 in a ratio-1 preset");
  std::vector<LayerSpec> layers;
  for (int id : unique) {
    if (id < 0) bad_option(o, "--layers", "layer ids must be >= 0 (got " + std::to_string(id) + ")");
    layers.push_back({id, id == kSource ? Role::source : Role::consumer});
  }
  return layers;
}

std::vector<LayerSpec> plain_layers(const GenerateOptions& o, std::vector<int> ids) {
  if (!o.layers.empty()) ids = o.layers;
  std::set<int> unique(ids.begin(), ids.end());
  if (unique.size() != ids.size()) bad_option(o, "--layers", "lists a layer id twice");
  std::vector<LayerSpec> layers;
  for (int id : unique) {
    if (id < 0) bad_option(o, "--layers", "layer ids must be >= 0 (got " + std::to_string(id) + ")");
    layers.push_back({id, Role::plain});
  }
  return layers;
}

std::string describe(const GenerateOptions& o, const BatchSpec& spec) {
  std::ostringstream s;
  s << "preset=" << o.preset << " seed=" << o.seed << " requests=" << spec.requests.size();
  int rows = 0, lc_max = 0;
  for (const RequestSpec& r : spec.requests) {
    rows += int(r.lengths.size());
    lc_max = std::max(lc_max, int(r.lc));
  }
  s << " rows=" << rows << " context=" << lc_max << " layers=";
  for (size_t i = 0; i < spec.layers.size(); ++i) s << (i ? "," : "") << spec.layers[i].id;
  s << " model=" << kModelVersion;
  return s.str();
}

BatchSpec base_spec(const GenerateOptions& o, int ratio) {
  BatchSpec spec;
  spec.seed = o.seed;
  spec.compress_ratio = ratio;
  return spec;
}

// ---- smoke: a couple of requests, few rows; request 0 is long enough (> 16384 positions) for
// level one to drop blocks. Rows of a request are spread below its lc so both regimes appear.
BatchSpec smoke(const GenerateOptions& o) {
  const int requests = positive_or(o, o.requests, 2, "--requests", 1);
  const int rows = positive_or(o, o.rows_per_request, 6, "--rows-per-request", 1);
  const int context = positive_or(o, o.context, 18000, "--context", 1);
  check_total_rows(o, requests, rows);
  BatchSpec spec = base_spec(o, 1);
  spec.source_layer = kSource;
  spec.with_tails = true;
  for (int b = 0; b < requests; ++b) {
    RequestSpec r;
    r.lc = std::max(1, context / (1 + 11 * b));
    const int step = std::max(1, r.lc / (4 * rows));
    for (int i = 0; i < rows; ++i) r.lengths.push_back(std::max(0, r.lc - (rows - 1 - i) * step));
    r.tail = std::min(2, rows);
    spec.requests.push_back(r);
  }
  spec.layers = ratio1_layers(o, {24, 28});
  return spec;
}

// ---- edge: every edge case of docs/semantics.md, each in a request built for it.
BatchSpec edge(const GenerateOptions& o) {
  reject_size_overrides(o);
  BatchSpec spec = base_spec(o, 1);
  spec.source_layer = kSource;
  spec.with_tails = true;
  auto add = [&](int32_t lc, std::vector<int32_t> lengths, int32_t tail, KeyStyle keys) {
    RequestSpec r;
    r.lc = lc;
    r.lengths = std::move(lengths);
    r.tail = tail;
    r.keys = keys;
    spec.requests.push_back(r);
  };
  // 0: the level-one boundary with realistic keys: 16384 positions (2048 blocks, all kept),
  //    16385 (2049 blocks: one dropped), partial newest blocks, 512 < L <= 16384.
  add(16385, {513, 4096, 12001, 16383, 16384, 16385}, 3, KeyStyle::realistic);
  // 1: four key vectors cycling: every full block has the same key (2049 of them tie for the
  //    2047 free places at L >= 16393) and the 512th position score is shared by many positions.
  add(16400, {600, 1000, 16393, 16400}, 0, KeyStyle::repeated);
  // 2: short rows: L = 0, L < 512 (partial and full newest blocks), L = 512, L = 513.
  add(700, {0, 1, 7, 8, 100, 511, 512, 513, 700}, 2, KeyStyle::realistic);
  // 3: compressed length 0: its rows see nothing.
  add(0, {0, 0}, 1, KeyStyle::realistic);
  // 4: a request with keys but no rows.
  add(300, {}, 0, KeyStyle::realistic);
  // 5: a mid-length request whose rows are consecutive, as in a prefill chunk.
  add(1500, {1497, 1498, 1499, 1500}, 1, KeyStyle::realistic);
  spec.layers = ratio1_layers(o, kConsumers4);
  return spec;
}

// ---- numerics: the data behind every exact route of the GPU kernels (docs/performance.md):
// query heads whose group exponents need the wgmma route's in-place multiplies or keep a row off
// that route, keys whose group exponents span too far for the folded form, huge scores and
// subnormal ones. Small enough for the CPU reference.
BatchSpec numerics(const GenerateOptions& o) {
  reject_size_overrides(o);
  BatchSpec spec = base_spec(o, 1);
  spec.source_layer = kSource;
  spec.with_tails = true;
  auto add = [&](int32_t lc, std::vector<int32_t> lengths, KeyStyle keys) {
    RequestSpec r;
    r.lc = lc;
    r.lengths = std::move(lengths);
    r.tail = 1;
    r.keys = keys;
    r.queries = QueryStyle::extreme;
    spec.requests.push_back(r);
  };
  // 0: wide keys, rows past 16384 positions (level one drops blocks).
  add(17000, {16390, 16700, 16999, 17000}, KeyStyle::wide);
  // 1: huge and tiny keys.
  add(3000, {700, 1500, 2300, 2998, 2999, 3000}, KeyStyle::magnitudes);
  // 2: realistic keys, every row class of the extreme queries.
  add(1200, {600, 800, 1000, 1100, 1150, 1190, 1199, 1200}, KeyStyle::realistic);
  spec.layers = ratio1_layers(o, {24, 28});
  return spec;
}

// ---- edge-r2: plain layers at compress ratio 2 with their own keys and page tables.
BatchSpec edge_r2(const GenerateOptions& o) {
  reject_size_overrides(o);
  BatchSpec spec = base_spec(o, 2);
  spec.source_layer = -1;
  spec.with_tails = false;
  auto add = [&](int32_t lc, std::vector<int32_t> lengths) {
    RequestSpec r;
    r.lc = lc;
    r.lengths = std::move(lengths);
    spec.requests.push_back(r);
  };
  add(0, {0});                                 // compressed length 0
  add(450, {0, 5, 200, 447, 450});             // every row has L <= 512: all positions
  add(4099, {511, 512, 513, 3000, 4097, 4099});  // L > 512: a real top-512
  spec.layers = plain_layers(o, {2, 8, 14});
  return spec;
}

// Row lengths of the public kernel test: int(numpy.linspace(ctx - rows + 1, ctx, rows)), then
// the first row at L = 0.
std::vector<int32_t> linspace_lengths(int ctx, int rows) {
  std::vector<int32_t> out;
  const double start = double(ctx - rows + 1), stop = double(ctx);
  const double step = rows > 1 ? (stop - start) / double(rows - 1) : 0.0;
  for (int i = 0; i < rows; ++i) out.push_back(int32_t(start + double(i) * step));
  if (rows > 1) out.back() = int32_t(stop);  // numpy sets the endpoint exactly
  if (!out.empty()) out.front() = 0;
  return out;
}

// ---- sglang-test: the public kernel test's cases, identity page table.
BatchSpec sglang_test(const GenerateOptions& o) {
  struct Case { int rows, ctx; };
  const std::vector<Case> cases = {{256, 40000}, {64, 3000}};
  const int requests = positive_or(o, o.requests, int(cases.size()), "--requests", 1);
  const int rows_override = positive_or(o, o.rows_per_request, -1, "--rows-per-request", 1);
  const int ctx_override = positive_or(o, o.context, -1, "--context", 1);
  check_total_rows(o, requests, std::max(rows_override, 256));
  BatchSpec spec = base_spec(o, 1);
  spec.source_layer = kSource;
  spec.shuffle_pages = false;
  for (int b = 0; b < requests; ++b) {
    const Case c = cases[size_t(b) % cases.size()];
    const int rows = rows_override > 0 ? rows_override : c.rows;
    const int ctx = ctx_override > 0 ? ctx_override : c.ctx;
    if (rows > ctx)
      bad_option(o, rows_override > 0 ? "--rows-per-request" : "--context",
                 "rows per request (" + std::to_string(rows) + ") exceed the context (" + std::to_string(ctx) + ")");
    RequestSpec r;
    r.lc = ctx;
    r.lengths = linspace_lengths(ctx, rows);
    spec.requests.push_back(r);
  }
  spec.layers = ratio1_layers(o, kConsumers4);
  return spec;
}

// ---- chunk-256k: one causal prefill chunk: row i sees context - rows + 1 + i positions.
BatchSpec chunk_256k(const GenerateOptions& o) {
  const int requests = positive_or(o, o.requests, 1, "--requests", 1);
  const int context = positive_or(o, o.context, 262144, "--context", 1);
  const int rows = positive_or(o, o.rows_per_request, 16384, "--rows-per-request", 1);
  if (rows > context)
    bad_option(o, o.rows_per_request != -1 ? "--rows-per-request" : "--context",
               "rows per request (" + std::to_string(rows) + ") exceed the context (" + std::to_string(context) + ")");
  check_total_rows(o, requests, rows);
  BatchSpec spec = base_spec(o, 1);
  spec.source_layer = kSource;
  for (int b = 0; b < requests; ++b) {
    RequestSpec r;
    r.lc = context;
    for (int i = 0; i < rows; ++i) r.lengths.push_back(context - rows + 1 + i);
    spec.requests.push_back(r);
  }
  spec.layers = ratio1_layers(o, kConsumers4);
  return spec;
}

// ---- decode: a decode step with multi-token prediction: 64 requests x 2 rows (the last two
// tokens of each), ragged contexts between half and all of --context (default 131072). Both rows
// of a request are its tail rows.
BatchSpec decode(const GenerateOptions& o) {
  const int requests = positive_or(o, o.requests, 64, "--requests", 1);
  const int rows = positive_or(o, o.rows_per_request, 2, "--rows-per-request", 1);
  const int context = positive_or(o, o.context, 131072, "--context", 2);
  if (rows > context / 2)
    bad_option(o, o.rows_per_request != -1 ? "--rows-per-request" : "--context",
               "rows per request (" + std::to_string(rows) + ") exceed half the context (" + std::to_string(context) + ")");
  check_total_rows(o, requests, rows);
  BatchSpec spec = base_spec(o, 1);
  spec.source_layer = kSource;
  spec.with_tails = true;
  for (int b = 0; b < requests; ++b) {
    RequestSpec r;
    // Ragged and fixed by the request index (a Weyl sequence over [context/2, context]).
    r.lc = context - int32_t((uint64_t(b) * 2654435761u) % uint64_t(context / 2 + 1));
    for (int i = 0; i < rows; ++i) r.lengths.push_back(r.lc - rows + 1 + i);
    r.tail = rows;
    spec.requests.push_back(r);
  }
  spec.layers = ratio1_layers(o, kConsumers4);
  return spec;
}

struct Preset {
  const char* name;
  std::function<BatchSpec(const GenerateOptions&)> build;
};

const std::vector<Preset>& presets() {
  static const std::vector<Preset> all = {
      {"smoke", smoke},   {"edge", edge}, {"edge-r2", edge_r2}, {"sglang-test", sglang_test}, {"chunk-256k", chunk_256k},
      {"decode", decode}, {"numerics", numerics}};
  return all;
}

}  // namespace

std::vector<std::string> preset_names() {
  std::vector<std::string> names;
  for (const Preset& p : presets()) names.push_back(p.name);
  return names;
}

Batch generate_batch(const GenerateOptions& options) {
  for (const Preset& p : presets()) {
    if (options.preset != p.name) continue;
    BatchSpec spec = p.build(options);
    const uint64_t bytes = projected_bytes(spec), budget = memory_budget();
    if (bytes > budget)
      bad_option(options, "--requests/--rows-per-request/--context",
                 "the batch would need " + bytes_text(bytes) + ", over the memory budget of " + bytes_text(budget) +
                     " (raise it with DSA_MEMORY_BUDGET or --memory-budget)");
    spec.description = describe(options, spec);
    return gen::build_batch(spec);
  }
  std::string known;
  for (const std::string& n : preset_names()) known += (known.empty() ? "" : ", ") + n;
  throw InputError("generate", "--preset", "unknown preset '" + options.preset + "' (known: " + known + ")");
}

}  // namespace dsa
