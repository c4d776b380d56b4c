#include "harness/batch/batch_io.hpp"

#include <algorithm>
#include <climits>
#include <cstdint>
#include <set>
#include <utility>

#include "harness/batch/batch_validate.hpp"
#include "harness/batch/content_id.hpp"
#include "core/constants.hpp"
#include "core/errors.hpp"
#include "core/memory_budget.hpp"
#include "harness/batch/h5_util.hpp"

namespace dsa {
namespace {

using h5::Elem;
using std::to_string;

constexpr const char* kFormat = "dsa-indexer-batch";
constexpr int64_t kScoreChunkBytes = 64 << 10;  // score datasets: unwritten rows cost nothing

std::string shape_text(const std::vector<int64_t>& dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? ", " : "") + to_string(dims[i]);
  return s + "]";
}

void expect_shape(const h5::Reader& in, const std::string& path, const std::vector<int64_t>& shape,
                  const std::vector<int64_t>& want, const std::string& meaning) {
  if (shape != want) in.fail(path, "shape " + shape_text(shape) + " is not " + shape_text(want) + " " + meaning);
}

Elem elem_of(const std::vector<int32_t>*) { return Elem::i32; }
Elem elem_of(const std::vector<uint8_t>*) { return Elem::u8; }
Elem elem_of(const std::vector<float>*) { return Elem::f32; }

// Reads a dataset whose shape must be `want`; checks dtype and shape before allocating anything.
template <class T>
void read_exact(const h5::Reader& in, const std::string& path, const std::vector<int64_t>& want,
                const std::string& meaning, std::vector<T>* out) {
  std::vector<int64_t> shape;
  in.open_dataset(path, elem_of(out), &shape);
  if (shape.size() == want.size()) expect_shape(in, path, shape, want, meaning);  // else read() names the rank
  in.read(path, int(want.size()), &shape, out);
}

// A decimal layer id ("20"); -1 when the name is not one.
int parse_layer_id(const std::string& name) {
  if (name.empty() || name.size() > 9 || !std::all_of(name.begin(), name.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return -1;
  if (name.size() > 1 && name[0] == '0') return -1;  // "020" would not round-trip
  return std::stoi(name);
}

int int_attr32(const h5::Reader& in, const std::string& name) {
  const int64_t v = in.int_attr("/", name);
  if (v < INT32_MIN || v > INT32_MAX) in.fail("attribute " + name, to_string(v) + " is out of range");
  return int(v);
}

// Score datasets are read row by row (rows done only, L entries each), bounded by the rows' L.
bool read_whole(const std::string& path) {
  auto ends = [&](const std::string& tail) {
    return path.size() >= tail.size() && path.compare(path.size() - tail.size(), tail.size(), tail) == 0;
  };
  return !ends("/dense_scores") && !ends("/sparse_scores");
}

// What reading this file would hold in memory, from the shapes alone: every dataset read whole,
// plus the lookups finalize() derives (16 bytes per request, 4 per row). Over the budget is an
// InputError naming the largest dataset, before a single byte is allocated or read.
void check_memory_budget(const h5::Reader& in) {
  uint64_t total = 0, largest = 0;
  std::string largest_path = "/";
  std::vector<int64_t> largest_dims;
  for (const h5::Reader::DatasetShape& d : in.dataset_shapes("/")) {
    if (!read_whole(d.path)) continue;
    uint64_t bytes = d.elem_bytes;
    for (int64_t n : d.dims) bytes = saturating_product(bytes, uint64_t(std::max<int64_t>(n, 0)));
    if (d.path == "/requests/num_rows") bytes = saturating_product(bytes, 5);
    if (d.path == "/rows/compress_len") bytes = saturating_product(bytes, 2);
    total = total > UINT64_MAX - bytes ? UINT64_MAX : total + bytes;
    if (bytes > largest) largest = bytes, largest_path = d.path, largest_dims = d.dims;
  }
  const uint64_t budget = memory_budget();
  if (total > budget)
    in.fail(largest_path, "shape " + shape_text(largest_dims) + ": reading the file needs " + bytes_text(total) +
                              ", over the memory budget of " + bytes_text(budget) +
                              " (raise it with DSA_MEMORY_BUDGET or --memory-budget)");
}

void read_attributes(const h5::Reader& in, Batch* b) {
  const std::string format = in.string_attr("/", "format");
  if (format != kFormat) in.fail("attribute format", "'" + format + "' is not '" + kFormat + "'");
  b->format_version = int_attr32(in, "format_version");
  if (b->format_version != 1)
    in.fail("attribute format_version", to_string(b->format_version) + " is not supported (this reader knows 1)");
  const struct { const char* name; int value; } fixed[] = {
      {"heads", kHeads}, {"head_dim", kHeadDim}, {"block_size", kBlockSize}, {"topk_blocks", kTopkBlocks}};
  for (const auto& f : fixed) {
    const int v = int_attr32(in, f.name);
    if (v != f.value) in.fail(std::string("attribute ") + f.name, to_string(v) + " is not " + to_string(f.value) + " (fixed in v1)");
  }
  b->topk = int_attr32(in, "topk");
  b->page_size = int_attr32(in, "page_size");
  b->compress_ratio = int_attr32(in, "compress_ratio");
  b->source_layer = int_attr32(in, "source_layer");
  b->origin = in.string_attr("/", "origin");
  b->description = in.has_attr("/", "description") ? in.string_attr("/", "description") : "";
}

void read_requests(const h5::Reader& in, Batch* b) {
  std::vector<int64_t> shape;
  in.read("/requests/num_rows", 1, &shape, &b->num_rows);
  const int64_t q = shape[0];
  read_exact(in, "/requests/compressed_len", {q}, "([Q] of /requests/num_rows)", &b->compressed_len);
  in.open_dataset("/requests/page_table", Elem::i32, &shape);  // shapes agree before anything is read
  if (shape.size() == 2 && shape[0] != q)
    in.fail("/requests/page_table", "shape " + shape_text(shape) + " does not have Q = " + to_string(q) + " rows");
  in.read("/requests/page_table", 2, &shape, &b->page_table);
  if (shape[1] > INT32_MAX) in.fail("/requests/page_table", "is too wide");
  b->table_width = int(shape[1]);
  b->tail_rows.clear();
  if (in.exists("/requests/tail_rows")) {
    read_exact(in, "/requests/tail_rows", {q}, "([Q] of /requests/num_rows)", &b->tail_rows);
  }
  // R = sum(num_rows), checked on the shape before /rows/compress_len is read: a file claiming
  // 10^9 rows under the memory budget would otherwise cost gigabytes before the validator says so.
  int64_t rows = 0;
  bool negative = false;
  for (int32_t n : b->num_rows) negative |= n < 0, rows += n;
  in.open_dataset("/rows/compress_len", Elem::i32, &shape);
  if (!negative && shape.size() == 1 && shape[0] != rows)
    in.fail("/rows/compress_len", "has " + to_string(shape[0]) + " rows but sum(/requests/num_rows) is " + to_string(rows));
  in.read("/rows/compress_len", 1, &shape, &b->compress_len);
  if (shape[0] > INT32_MAX) in.fail("/rows/compress_len", "has too many rows");
}

void read_pool(const h5::Reader& in, Batch* b) {
  std::vector<int64_t> shape;
  in.read("/index_k/pool", 2, &shape, &b->pool);
  b->pages = shape[0];
  const int p = b->page_size;
  const bool page_size_ok = p >= kBlockSize && p <= 4096 && (p & (p - 1)) == 0;  // else the validator names it
  if (page_size_ok && shape[1] != int64_t(p) * kSlotBytes)
    in.fail("/index_k/pool", "shape " + shape_text(shape) + " does not have P*68 = " + to_string(int64_t(p) * kSlotBytes) +
                                 " bytes per page (page_size " + to_string(p) + ")");
}

void read_layers(const h5::Reader& in, Batch* b) {
  const int64_t r = int64_t(b->compress_len.size());
  for (const std::string& name : in.children("/layers")) {
    const std::string g = "/layers/" + name;
    Layer l;
    l.id = parse_layer_id(name);
    if (l.id < 0) in.fail(g, "layer name is not a decimal integer id");
    if (!in.is_group(g)) in.fail(g, "is not a group");
    bool ok = false;
    const std::string role = in.string_attr(g, "role");
    l.role = parse_role(role, &ok);
    if (!ok) in.fail(g + " attribute role", "'" + role + "' is not source, consumer or plain");
    std::vector<int64_t> shape;
    read_exact(in, g + "/q", {r, kHeads, kPackedDim}, "([R, heads, head_dim/2])", &l.q);
    read_exact(in, g + "/q_scale", {r, kHeads, kScaleGroups}, "([R, heads, head_dim/32])", &l.q_scale);
    read_exact(in, g + "/weights", {r, kHeads}, "([R, heads])", &l.weights);
    b->layers.push_back(std::move(l));
  }
}

int64_t total_tail_rows(const Batch& b) {
  int64_t t = 0;
  for (int32_t n : b.tail_rows) t += n;
  return t;
}

// Reads the done rows of a score dataset: `width(L)` entries of each row with rows_done = 1.
template <class T>
void read_score_rows(const h5::Reader& in, const std::string& path, Elem elem, const Batch& b, const Results& res,
                     int64_t min_cols, int (*width)(int), std::vector<std::vector<T>>* out) {
  std::vector<int64_t> shape;
  h5::Handle ds = in.open_dataset(path, elem, &shape);
  const int64_t r = int64_t(b.compress_len.size());
  if (shape.size() != 2 || shape[0] != r || shape[1] < min_cols)
    in.fail(path, "shape " + shape_text(shape) + " is not [R = " + to_string(r) + ", W >= " + to_string(min_cols) + "]");
  out->assign(size_t(r), {});
  for (int64_t row = 0; row < r; ++row) {
    if (!res.rows_done[size_t(row)]) continue;
    std::vector<T>& v = (*out)[size_t(row)];
    v.resize(size_t(width(b.compress_len[size_t(row)])));
    in.read_row(ds, path, elem, row, int64_t(v.size()), v.data());
  }
}

int identity_len(int len) { return len; }

LayerResult read_layer_result(const h5::Reader& in, const std::string& g, const Batch& b, const Results& res) {
  LayerResult lr;
  const int64_t r = int64_t(b.compress_len.size()), k = b.topk;
  std::vector<int64_t> shape;
  if (in.exists(g + "/positions")) {
    read_exact(in, g + "/positions", {r, k}, "([R, topk])", &lr.positions);
  }
  if (in.exists(g + "/tail_positions")) {
    read_exact(in, g + "/tail_positions", {total_tail_rows(b), k}, "([sum(tail_rows), topk])", &lr.tail_positions);
  }
  if (in.exists(g + "/dense_scores"))
    read_score_rows(in, g + "/dense_scores", Elem::f32, b, res, std::max(1, b.max_len()), identity_len,
                    &lr.dense_scores);
  if (in.exists(g + "/sparse_scores"))
    read_score_rows(in, g + "/sparse_scores", Elem::u16, b, res, kCandidateWidth, valid_len_of, &lr.sparse_scores);
  return lr;
}

Results read_output(const h5::Reader& in, const std::string& name, const Batch& b) {
  const std::string g = "/outputs/" + name;
  if (!in.is_group(g)) in.fail(g, "is not a group");
  Results res;
  res.name = name;
  const std::pair<const char*, std::string*> attrs[] = {{"implementation", &res.implementation}, {"device", &res.device},
                                                        {"notes", &res.notes}, {"harness", &res.harness},
                                                        {"recorded_at", &res.recorded_at}};
  for (const auto& [attr, field] : attrs) *field = in.has_attr(g, attr) ? in.string_attr(g, attr) : "";
  const int64_t r = int64_t(b.compress_len.size());
  std::vector<int64_t> shape;
  read_exact(in, g + "/rows_done", {r}, "([R])", &res.rows_done);
  for (size_t i = 0; i < res.rows_done.size(); ++i)  // score reads below trust rows_done
    if (res.rows_done[i] > 1) in.fail(g + "/rows_done", "row " + to_string(i) + " is " + to_string(res.rows_done[i]) + ", not 0 or 1");
  if (in.exists(g + "/blocks")) {
    read_exact(in, g + "/blocks", {r, kTopkBlocks}, "([R, topk_blocks])", &res.blocks);
  }
  for (const std::string& child : in.children(g)) {
    if (child == "rows_done" || child == "blocks") continue;
    const int id = parse_layer_id(child);
    if (id < 0 || !in.is_group(g + "/" + child)) in.fail(g + "/" + child, "is not rows_done, blocks or a layer id group");
    res.layers[id] = read_layer_result(in, g + "/" + child, b, res);
  }
  return res;
}

std::map<std::string, Results> read_outputs(const h5::Reader& in, const Batch& b) {
  std::map<std::string, Results> out;
  if (!in.exists("/outputs")) return out;
  for (const std::string& name : in.children("/outputs")) {
    Results res = read_output(in, name, b);
    validate_results(b, res, in.file());
    out.emplace(name, std::move(res));
  }
  return out;
}

// ---------------------------------------------------------------- writing

template <class T>
void write_score_rows(h5::Writer& out, const std::string& path, Elem elem, int64_t cols,
                      const std::vector<std::vector<T>>& rows) {
  const int64_t row_bytes = cols * int64_t(sizeof(T));
  h5::Handle ds = out.row_dataset(path, elem, int64_t(rows.size()), cols, std::max<int64_t>(1, kScoreChunkBytes / row_bytes));
  for (size_t r = 0; r < rows.size(); ++r)
    if (!rows[r].empty()) out.write_row(ds, path, elem, int64_t(r), int64_t(rows[r].size()), rows[r].data());
}

// Packed fp4 q and the key pool deflate by only ~7-12%, while inflating a 190 MB chunk costs more
// than the rest of a sampled reference run. Small payloads (fixtures) stay deflated to keep the
// repository small; large ones are stored plain. A function of the size, so still deterministic.
bool deflate_payload(size_t bytes) { return bytes <= (size_t(8) << 20); }

// An int32 [R, cols] table of which only the rows done were computed: a sampled run writes just
// those rows (runs of consecutive rows at a time); the others read back as `fill` and cost nothing.
void write_done_rows(h5::Writer& out, const std::string& path, const std::vector<uint8_t>& rows_done, int64_t cols,
                     const std::vector<int32_t>& table, int32_t fill) {
  const int64_t rows = int64_t(rows_done.size());
  if (std::all_of(rows_done.begin(), rows_done.end(), [](uint8_t d) { return d != 0; })) {
    out.dataset(path, Elem::i32, {rows, cols}, table.data());
    return;
  }
  const int64_t chunk_rows = std::max<int64_t>(1, kScoreChunkBytes / (cols * int64_t(sizeof(int32_t))));
  h5::Handle ds = out.row_dataset(path, Elem::i32, rows, cols, chunk_rows, &fill);
  for (int64_t r = 0; r < rows;) {
    if (!rows_done[size_t(r)]) { ++r; continue; }
    int64_t end = r;
    while (end < rows && rows_done[size_t(end)]) ++end;
    out.write_rows(ds, path, Elem::i32, r, end - r, cols, table.data() + r * cols);
    r = end;
  }
}

// `name`: the group name (the map key of Batch::outputs, or Results::name in result files).
void write_output(h5::Writer& out, const Batch& b, const std::string& name, const Results& res) {
  const std::string g = "/outputs/" + name;
  const int64_t r = int64_t(b.compress_len.size()), k = b.topk;
  out.group(g);
  out.string_attr(g, "implementation", res.implementation);
  out.string_attr(g, "device", res.device);
  out.string_attr(g, "notes", res.notes);
  // Only `record` sets these; leaving them out keeps every other file byte-identical to before.
  if (!res.harness.empty()) out.string_attr(g, "harness", res.harness);
  if (!res.recorded_at.empty()) out.string_attr(g, "recorded_at", res.recorded_at);
  out.dataset(g + "/rows_done", Elem::u8, {r}, res.rows_done.data());
  if (!res.blocks.empty()) write_done_rows(out, g + "/blocks", res.rows_done, kTopkBlocks, res.blocks, kBlockPad);
  for (const auto& [id, lr] : res.layers) {
    const std::string lg = g + "/" + to_string(id);
    out.group(lg);
    if (!lr.positions.empty()) write_done_rows(out, lg + "/positions", res.rows_done, k, lr.positions, kPositionPad);
    if (!lr.tail_positions.empty())
      out.dataset(lg + "/tail_positions", Elem::i32, {int64_t(lr.tail_positions.size()) / k, k}, lr.tail_positions.data());
    if (!lr.dense_scores.empty())
      write_score_rows(out, lg + "/dense_scores", Elem::f32, std::max(1, b.max_len()), lr.dense_scores);
    if (!lr.sparse_scores.empty()) write_score_rows(out, lg + "/sparse_scores", Elem::u16, kCandidateWidth, lr.sparse_scores);
  }
}

void write_core(h5::Writer& out, const Batch& b) {
  out.string_attr("/", "format", kFormat);
  out.int_attr("/", "format_version", b.format_version);
  out.int_attr("/", "heads", kHeads);
  out.int_attr("/", "head_dim", kHeadDim);
  out.int_attr("/", "block_size", kBlockSize);
  out.int_attr("/", "topk_blocks", kTopkBlocks);
  out.int_attr("/", "topk", b.topk);
  out.int_attr("/", "page_size", b.page_size);
  out.int_attr("/", "compress_ratio", b.compress_ratio);
  out.int_attr("/", "source_layer", b.source_layer);
  out.string_attr("/", "origin", b.origin);
  out.string_attr("/", "description", b.description);
  const int64_t q = b.requests(), r = b.rows();
  out.group("/requests");
  out.dataset("/requests/num_rows", Elem::i32, {q}, b.num_rows.data());
  out.dataset("/requests/compressed_len", Elem::i32, {q}, b.compressed_len.data());
  out.dataset("/requests/page_table", Elem::i32, {q, b.table_width}, b.page_table.data());
  if (!b.tail_rows.empty()) out.dataset("/requests/tail_rows", Elem::i32, {q}, b.tail_rows.data());
  out.group("/rows");
  out.dataset("/rows/compress_len", Elem::i32, {r}, b.compress_len.data());
  out.group("/index_k");
  out.dataset("/index_k/pool", Elem::u8, {b.pages, int64_t(b.page_size) * kSlotBytes}, b.pool.data(), deflate_payload(b.pool.size()));
  out.group("/layers");
  std::vector<const Layer*> layers;
  for (const Layer& l : b.layers) layers.push_back(&l);
  std::sort(layers.begin(), layers.end(), [](const Layer* x, const Layer* y) { return x->id < y->id; });
  for (const Layer* l : layers) {
    const std::string g = "/layers/" + to_string(l->id);
    out.group(g);
    out.string_attr(g, "role", role_name(l->role));
    out.dataset(g + "/q", Elem::u8, {r, kHeads, kPackedDim}, l->q.data(), deflate_payload(l->q.size()));
    out.dataset(g + "/q_scale", Elem::u8, {r, kHeads, kScaleGroups}, l->q_scale.data());
    out.dataset(g + "/weights", Elem::f32, {r, kHeads}, l->weights.data());
  }
}

}  // namespace

Batch read_batch(const std::string& path) {
  h5::Reader in(path);
  Batch b;
  b.path = path;
  read_attributes(in, &b);
  check_memory_budget(in);
  read_requests(in, &b);
  read_pool(in, &b);
  read_layers(in, &b);
  validate_batch(b, path);  // before the outputs: reading them trusts R, L and the layers
  b.outputs = read_outputs(in, b);
  b.finalize();
  return b;
}

void write_batch(const std::string& path, const Batch& batch) {
  validate_batch(batch, path);
  h5::Writer out(path);
  write_core(out, batch);
  if (!batch.outputs.empty()) {
    out.group("/outputs");
    for (const auto& [name, res] : batch.outputs) write_output(out, batch, name, res);
  }
  out.commit();
}

void write_results(const std::string& path, const Batch& batch, const std::vector<Results>& results) {
  std::set<std::string> names;
  for (const Results& res : results) {
    validate_results(batch, res, path);
    if (!names.insert(res.name).second) throw InputError(path, "/outputs/" + res.name, "two result sets share this name");
  }
  h5::Writer out(path);
  out.string_attr("/", "batch", content_id(batch));
  out.group("/outputs");
  std::vector<const Results*> sorted;
  for (const Results& res : results) sorted.push_back(&res);
  std::sort(sorted.begin(), sorted.end(), [](const Results* x, const Results* y) { return x->name < y->name; });
  for (const Results* res : sorted) write_output(out, batch, res->name, *res);
  out.commit();
}

std::vector<Results> read_results(const std::string& path, const Batch& batch) {
  h5::Reader in(path);
  if (!in.has_attr("/", "batch")) in.fail("attribute batch", "is missing (not a result file?)");
  check_memory_budget(in);
  const std::string id = in.string_attr("/", "batch"), want = content_id(batch);
  if (id != want) in.fail("attribute batch", "is " + id + " but the batch's content ID is " + want);
  if (!in.exists("/outputs")) in.fail("/outputs", "group is missing");
  std::vector<Results> out;
  for (auto& entry : read_outputs(in, batch)) out.push_back(std::move(entry.second));
  return out;
}

}  // namespace dsa
