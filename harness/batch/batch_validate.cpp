#include "harness/batch/batch_validate.hpp"

#include <algorithm>
#include <cmath>
#include <set>
#include <string>

#include "core/constants.hpp"
#include "core/errors.hpp"

namespace dsa {
namespace {

using std::to_string;

// Throws the one-line error of a broken rule; every check below names its dataset and rule.
[[noreturn]] void fail(const std::string& file, const std::string& dataset, const std::string& rule) {
  throw InputError(file, dataset, rule);
}

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

bool ue8m0_ok(uint8_t e) { return e >= 1 && e <= 254; }

void check_attributes(const Batch& b, const std::string& file) {
  if (b.format_version != 1)
    fail(file, "attribute format_version", to_string(b.format_version) + " is not supported (this reader knows 1)");
  if (b.topk != 512 && b.topk != 1024 && b.topk != 2048)
    fail(file, "attribute topk", to_string(b.topk) + " is not 512, 1024 or 2048");
  const int p = b.page_size;
  if (p < kBlockSize || p > 4096 || (p & (p - 1)) != 0)
    fail(file, "attribute page_size", to_string(p) + " is not a power of two in [8, 4096]");
  if (b.compress_ratio != 1 && b.compress_ratio != 2)
    fail(file, "attribute compress_ratio", to_string(b.compress_ratio) + " is not 1 or 2");
  if (b.origin != "synthetic" && b.origin != "captured")
    fail(file, "attribute origin", "'" + b.origin + "' is not 'synthetic' or 'captured'");
}

void check_requests(const Batch& b, const std::string& file) {
  const size_t q = b.num_rows.size();
  if (b.compressed_len.size() != q)
    fail(file, "/requests/compressed_len", "has " + to_string(b.compressed_len.size()) +
                                               " entries but /requests/num_rows has " + to_string(q));
  for (size_t i = 0; i < q; ++i) {
    if (b.num_rows[i] < 0) fail(file, "/requests/num_rows", "request " + to_string(i) + " has a negative row count");
    if (b.compressed_len[i] < 0)
      fail(file, "/requests/compressed_len", "request " + to_string(i) + " has a negative length");
  }
  if (b.table_width < 0 || size_t(b.table_width) * q != b.page_table.size())
    fail(file, "/requests/page_table", "holds " + to_string(b.page_table.size()) + " entries, not [" + to_string(q) +
                                           ", " + to_string(b.table_width) + "]");
  if (!b.tail_rows.empty()) {
    if (b.tail_rows.size() != q)
      fail(file, "/requests/tail_rows", "has " + to_string(b.tail_rows.size()) + " entries but there are " +
                                            to_string(q) + " requests");
    for (size_t i = 0; i < q; ++i)
      if (b.tail_rows[i] < 0 || b.tail_rows[i] > b.num_rows[i])
        fail(file, "/requests/tail_rows", "request " + to_string(i) + " has " + to_string(b.tail_rows[i]) +
                                              " tail rows, outside [0, num_rows = " + to_string(b.num_rows[i]) + "]");
  }
}

void check_page_tables(const Batch& b, const std::string& file) {
  for (size_t i = 0; i < b.num_rows.size(); ++i) {
    const int64_t need = ceil_div(b.compressed_len[i], b.page_size);
    if (need > b.table_width)
      fail(file, "/requests/page_table", "request " + to_string(i) + " needs " + to_string(need) + " pages for " +
                                             to_string(b.compressed_len[i]) + " positions but the table has " +
                                             to_string(b.table_width) + " columns");
    for (int64_t j = 0; j < need; ++j) {
      const int32_t page = b.page_table[i * size_t(b.table_width) + size_t(j)];
      if (page < 0 || page >= b.pages)
        fail(file, "/requests/page_table", "request " + to_string(i) + " page " + to_string(j) + " is " +
                                               to_string(page) + ", outside the pool's [0, " + to_string(b.pages) + ")");
    }
  }
}

void check_rows(const Batch& b, const std::string& file) {
  int64_t total = 0;
  for (int32_t n : b.num_rows) total += n;
  if (int64_t(b.compress_len.size()) != total)
    fail(file, "/rows/compress_len", "has " + to_string(b.compress_len.size()) +
                                         " rows but sum(/requests/num_rows) is " + to_string(total));
  size_t r = 0;
  for (size_t i = 0; i < b.num_rows.size(); ++i)
    for (int32_t k = 0; k < b.num_rows[i]; ++k, ++r) {
      const int32_t len = b.compress_len[r];
      if (len < 0 || len > b.compressed_len[i])
        fail(file, "/rows/compress_len", "row " + to_string(r) + " has L = " + to_string(len) +
                                             ", outside [0, lc = " + to_string(b.compressed_len[i]) + "] of request " +
                                             to_string(i));
    }
}

void check_pool(const Batch& b, const std::string& file) {
  const int64_t page_bytes = int64_t(b.page_size) * kSlotBytes;
  if (b.pages < 0 || int64_t(b.pool.size()) != b.pages * page_bytes)
    fail(file, "/index_k/pool", "holds " + to_string(b.pool.size()) + " bytes, not [" + to_string(b.pages) + ", " +
                                    to_string(page_bytes) + "]");
  for (size_t i = 0; i < b.num_rows.size(); ++i)
    for (int64_t pos = 0; pos < b.compressed_len[i]; ++pos) {
      const int64_t page = b.page_table[i * size_t(b.table_width) + size_t(pos / b.page_size)];
      const uint8_t* scale = b.pool.data() + page * page_bytes + int64_t(b.page_size) * kPackedDim +
                             (pos % b.page_size) * kScaleGroups;
      for (int g = 0; g < kScaleGroups; ++g)
        if (!ue8m0_ok(scale[g]))
          fail(file, "/index_k/pool", "ue8m0 scale byte " + to_string(scale[g]) + " (not in 1..254) at request " +
                                          to_string(i) + " position " + to_string(pos) + " (page " + to_string(page) +
                                          ")");
    }
}

void check_layer_data(const Layer& l, size_t rows, const std::string& file) {
  const std::string g = "/layers/" + to_string(l.id);
  if (l.q.size() != rows * kHeads * kPackedDim)
    fail(file, g + "/q", "holds " + to_string(l.q.size()) + " bytes, not [" + to_string(rows) + ", 32, 64]");
  if (l.q_scale.size() != rows * kHeads * kScaleGroups)
    fail(file, g + "/q_scale", "holds " + to_string(l.q_scale.size()) + " bytes, not [" + to_string(rows) + ", 32, 4]");
  if (l.weights.size() != rows * kHeads)
    fail(file, g + "/weights", "holds " + to_string(l.weights.size()) + " values, not [" + to_string(rows) + ", 32]");
  for (size_t i = 0; i < l.q_scale.size(); ++i)
    if (!ue8m0_ok(l.q_scale[i]))
      fail(file, g + "/q_scale", "ue8m0 byte " + to_string(l.q_scale[i]) + " (not in 1..254) at row " +
                                     to_string(i / (kHeads * kScaleGroups)) + " head " +
                                     to_string(i / kScaleGroups % kHeads));
  for (size_t i = 0; i < l.weights.size(); ++i)
    if (!std::isfinite(l.weights[i]))
      fail(file, g + "/weights", "row " + to_string(i / kHeads) + " head " + to_string(i % kHeads) +
                                     " is not finite");
}

void check_layers(const Batch& b, const std::string& file) {
  std::set<int> ids;
  const Layer* source = nullptr;
  bool has_consumer = false;
  for (const Layer& l : b.layers) {
    const std::string g = "/layers/" + to_string(l.id);
    if (l.id < 0) fail(file, g, "layer id is negative");
    if (!ids.insert(l.id).second) fail(file, g, "layer id appears twice");
    if (l.role != Role::source && l.role != Role::consumer && l.role != Role::plain)
      fail(file, g + " attribute role", "unknown role");
    if (l.role == Role::source) {
      if (source) fail(file, g + " attribute role", "a second source layer (layer " + to_string(source->id) + " is one)");
      source = &l;
    }
    has_consumer = has_consumer || l.role == Role::consumer;
    check_layer_data(l, b.compress_len.size(), file);
  }
  if (has_consumer && !source) fail(file, "/layers", "a consumer layer but no source layer");
  const int expected = source ? source->id : -1;
  if (b.source_layer != expected)
    fail(file, "attribute source_layer", to_string(b.source_layer) + " but the source layer is " +
                                             (source ? "/layers/" + to_string(expected) : std::string("absent (-1)")));
}

// Rows of each tail row (tail_positions row t -> global row), computed without finalize().
std::vector<int64_t> tail_row_map(const Batch& b) {
  std::vector<int64_t> out;
  if (b.tail_rows.empty()) return out;
  int64_t first = 0;
  for (size_t i = 0; i < b.num_rows.size(); ++i) {
    for (int64_t r = first + b.num_rows[i] - b.tail_rows[i]; r < first + b.num_rows[i]; ++r) out.push_back(r);
    first += b.num_rows[i];
  }
  return out;
}

// One row of positions: values in [-1, L), ascending and unique, -1 only after the last position.
void check_position_row(const int32_t* row, int k, int32_t len, const std::string& file, const std::string& ds,
                        const std::string& where) {
  bool padding = false;
  for (int j = 0; j < k; ++j) {
    const int32_t p = row[j];
    if (p < -1 || p >= len)
      fail(file, ds, where + " holds " + to_string(p) + ", outside [-1, L = " + to_string(len) + ")");
    if (p == kPositionPad) {
      padding = true;
    } else if (padding) {
      fail(file, ds, where + " has position " + to_string(p) + " after -1 padding");
    } else if (j > 0 && p <= row[j - 1]) {
      fail(file, ds, where + " is not strictly ascending at column " + to_string(j));
    }
  }
}

void check_block_row(const int32_t* row, int32_t len, const std::string& file, const std::string& ds, int64_t r) {
  const int64_t nblocks = (int64_t(len) + kBlockSize - 1) / kBlockSize;
  bool padding = false;
  for (int j = 0; j < kTopkBlocks; ++j) {
    const int32_t id = row[j];
    if (id == kBlockPad) {
      padding = true;
      continue;
    }
    if (padding) fail(file, ds, "row " + to_string(r) + " has block " + to_string(id) + " after INT32_MAX padding");
    if (id < 0 || id >= nblocks)
      fail(file, ds, "row " + to_string(r) + " holds block " + to_string(id) + ", outside [0, ceil(L/8) = " +
                         to_string(nblocks) + ")");
    if (j > 0 && id <= row[j - 1])
      fail(file, ds, "row " + to_string(r) + " is not strictly ascending at column " + to_string(j));
  }
}

void check_scores(const Batch& b, const Results& res, const LayerResult& lr, const std::string& g,
                  const std::string& file) {
  const size_t rows = b.compress_len.size();
  if (!lr.dense_scores.empty() && lr.dense_scores.size() != rows)
    fail(file, g + "/dense_scores", "has " + to_string(lr.dense_scores.size()) + " rows, not R = " + to_string(rows));
  if (!lr.sparse_scores.empty() && lr.sparse_scores.size() != rows)
    fail(file, g + "/sparse_scores", "has " + to_string(lr.sparse_scores.size()) + " rows, not R = " + to_string(rows));
  for (size_t r = 0; r < lr.dense_scores.size(); ++r) {
    const size_t n = lr.dense_scores[r].size();
    const size_t want = res.rows_done[r] ? size_t(b.compress_len[r]) : 0;
    if (n != want)
      fail(file, g + "/dense_scores", "row " + to_string(r) + " has " + to_string(n) + " scores, not " +
                                          to_string(want) + (res.rows_done[r] ? " (L of a done row)" : " (row not done)"));
  }
  for (size_t r = 0; r < lr.sparse_scores.size(); ++r) {
    const size_t n = lr.sparse_scores[r].size();
    if (!res.rows_done[r] && n != 0)
      fail(file, g + "/sparse_scores", "row " + to_string(r) + " has scores but rows_done is 0");
    if (n > size_t(kCandidateWidth))
      fail(file, g + "/sparse_scores", "row " + to_string(r) + " has " + to_string(n) + " scores, more than 16384");
  }
}

void check_layer_result(const Batch& b, const Results& res, const std::string& name, int id, const LayerResult& lr,
                        const std::string& file) {
  const std::string g = "/outputs/" + name + "/" + to_string(id);
  const Layer* layer = nullptr;
  for (const Layer& l : b.layers)
    if (l.id == id) layer = &l;
  if (!layer) fail(file, g, "layer " + to_string(id) + " is not in the batch");
  const size_t rows = b.compress_len.size(), k = size_t(b.topk);
  if (!lr.positions.empty()) {
    if (lr.positions.size() != rows * k)
      fail(file, g + "/positions", "holds " + to_string(lr.positions.size()) + " values, not [" + to_string(rows) +
                                       ", " + to_string(k) + "]");
    for (size_t r = 0; r < rows; ++r)
      check_position_row(&lr.positions[r * k], int(k), b.compress_len[r], file, g + "/positions", "row " + to_string(r));
  }
  if (!lr.tail_positions.empty()) {
    if (layer->role != Role::consumer) fail(file, g + "/tail_positions", "only consumer layers have tail picks");
    const std::vector<int64_t> tails = tail_row_map(b);
    if (lr.tail_positions.size() != tails.size() * k)
      fail(file, g + "/tail_positions", "holds " + to_string(lr.tail_positions.size()) + " values, not [sum(tail_rows) = " +
                                            to_string(tails.size()) + ", " + to_string(k) + "]");
    for (size_t t = 0; t < tails.size(); ++t)
      check_position_row(&lr.tail_positions[t * k], int(k), b.compress_len[size_t(tails[t])], file,
                         g + "/tail_positions", "tail row " + to_string(t) + " (row " + to_string(tails[t]) + ")");
  }
  check_scores(b, res, lr, g, file);
}

// `name` is the group the results live in: the map key in Batch::outputs, else Results::name.
void check_results(const Batch& b, const Results& res, const std::string& name, const std::string& file) {
  const std::string g = "/outputs/" + name;
  if (name.empty() || name.find('/') != std::string::npos || name == "." || name == "..")
    fail(file, g, "output name must be non-empty and hold no '/'");
  const size_t rows = b.compress_len.size();
  if (res.rows_done.size() != rows)
    fail(file, g + "/rows_done", "has " + to_string(res.rows_done.size()) + " rows, not R = " + to_string(rows));
  for (size_t r = 0; r < rows; ++r)
    if (res.rows_done[r] > 1) fail(file, g + "/rows_done", "row " + to_string(r) + " is " + to_string(res.rows_done[r]) + ", not 0 or 1");
  if (!res.blocks.empty()) {
    if (res.blocks.size() != rows * kTopkBlocks)
      fail(file, g + "/blocks", "holds " + to_string(res.blocks.size()) + " values, not [" + to_string(rows) + ", 2048]");
    for (size_t r = 0; r < rows; ++r) check_block_row(&res.blocks[r * kTopkBlocks], b.compress_len[r], file, g + "/blocks", int64_t(r));
  }
  for (const auto& [id, lr] : res.layers) check_layer_result(b, res, name, id, lr, file);
}

}  // namespace

int valid_len_of(int len) {
  if (len <= 0) return 0;
  const int kept = std::min(kTopkBlocks, (len + kBlockSize - 1) / kBlockSize);
  return kBlockSize * (kept - 1) + (len - 1) % kBlockSize + 1;
}

void validate_results(const Batch& b, const Results& res, const std::string& file) {
  check_results(b, res, res.name, file);
}

void validate_batch(const Batch& b, const std::string& file) {
  check_attributes(b, file);
  check_requests(b, file);
  check_page_tables(b, file);
  check_rows(b, file);
  check_pool(b, file);
  check_layers(b, file);
  for (const auto& [name, res] : b.outputs) check_results(b, res, name, file);
}

}  // namespace dsa
