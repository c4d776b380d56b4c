// The validator on in-memory batches: what it accepts (format edges, unused pool slots, table
// entries past the request's pages) and one error per rule, each naming its dataset.
#include <cmath>
#include <functional>
#include <set>

#include "harness/batch/batch_validate.hpp"
#include "core/errors.hpp"
#include "tests/catch.hpp"
#include "tests/harness/batch/small_batch.hpp"

using namespace dsa;

namespace {

std::string validation_error(const Batch& b) {
  try {
    validate_batch(b, "mem.h5");
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("validator: accepts the format's edges", "[batch_validate]") {
  const Batch base = test::small_batch(41);
  REQUIRE(validation_error(base).empty());

  SECTION("topk 1024 and 2048, page sizes 8 and 4096 (pool reshaped), ratio 2, captured") {
    for (int topk : {1024, 2048}) {
      Batch b = test::small_batch(41, false);
      b.topk = topk;
      REQUIRE(validation_error(b).empty());
    }
    Batch b = test::small_batch(41, false);
    b.compress_ratio = 2;
    b.origin = "captured";
    REQUIRE(validation_error(b).empty());
  }
  SECTION("unused pool slots and table entries past ceil(lc/P) may hold anything") {
    Batch b = base;
    // Request 0 (lc 40, P 16) uses slots 0..7 of its third page; slot 8 onwards is unused.
    const int64_t page = b.page_table[2];
    b.pool[size_t(page * 16 * 68 + 16 * 64 + 8 * 4)] = 0;
    b.pool[size_t(page * 16 * 68 + 16 * 64 + 15 * 4 + 3)] = 255;
    b.page_table[3] = 9999;  // past ceil(40/16) = 3 pages
    REQUIRE(validation_error(b).empty());
  }
  SECTION("only plain layers, no source") {
    Batch b = test::small_batch(41, false);
    b.layers.erase(b.layers.begin(), b.layers.begin() + 2);
    b.layers[0].role = Role::plain;
    b.source_layer = -1;
    REQUIRE(validation_error(b).empty());
  }
  SECTION("no rows and no requests") {
    Batch b;
    b.page_size = 64;
    REQUIRE(validation_error(b).empty());
  }
  SECTION("the output's map key names its group, whatever Results::name says") {
    Batch b = base;
    b.outputs["reference-sparse"].name = "other";
    REQUIRE(validation_error(b).empty());
    b.outputs["reference-sparse"].layers[24].positions[512 * 2] = 40;
    REQUIRE(validation_error(b).find("/outputs/reference-sparse/24/positions: row 2 holds 40") != std::string::npos);
  }
  SECTION("subnormal and zero weights are finite") {
    Batch b = base;
    b.layers[0].weights[0] = 1e-40f;
    b.layers[0].weights[1] = -0.0f;
    REQUIRE(validation_error(b).empty());
  }
}

TEST_CASE("validator: valid_len_of follows docs/semantics.md", "[batch_validate]") {
  REQUIRE(valid_len_of(0) == 0);
  REQUIRE(valid_len_of(1) == 1);
  REQUIRE(valid_len_of(13) == 13);
  REQUIRE(valid_len_of(16384) == 16384);
  REQUIRE(valid_len_of(16385) == 16377);  // 2048 kept blocks, the newest partial (1 position)
  REQUIRE(valid_len_of(16391) == 16383);
  REQUIRE(valid_len_of(16392) == 16384);
  REQUIRE(valid_len_of(262144) == 16384);
}

TEST_CASE("validator: one error per rule, naming the dataset", "[batch_validate]") {
  const Batch base = test::small_batch(42);
  const std::vector<std::pair<std::function<void(Batch&)>, std::string>> cases = {
      {[](Batch& b) { b.format_version = 3; }, "mem.h5: attribute format_version: 3 is not supported"},
      {[](Batch& b) { b.topk = 256; }, "mem.h5: attribute topk: 256 is not 512, 1024 or 2048"},
      {[](Batch& b) { b.page_size = 4; }, "mem.h5: attribute page_size: 4 is not a power of two in [8, 4096]"},
      {[](Batch& b) { b.page_size = 8192; }, "mem.h5: attribute page_size: 8192 is not a power of two"},
      {[](Batch& b) { b.compress_ratio = 0; }, "mem.h5: attribute compress_ratio: 0 is not 1 or 2"},
      {[](Batch& b) { b.origin = ""; }, "mem.h5: attribute origin: '' is not"},
      {[](Batch& b) { b.compressed_len.pop_back(); }, "mem.h5: /requests/compressed_len: has 2 entries but /requests/num_rows has 3"},
      {[](Batch& b) { b.compressed_len[1] = -2; }, "/requests/compressed_len: request 1 has a negative length"},
      {[](Batch& b) { b.page_table.pop_back(); }, "/requests/page_table: holds 59 entries, not [3, 20]"},
      {[](Batch& b) { b.tail_rows.pop_back(); }, "/requests/tail_rows: has 2 entries but there are 3 requests"},
      {[](Batch& b) { b.tail_rows[2] = 5; }, "/requests/tail_rows: request 2 has 5 tail rows, outside [0, num_rows = 4]"},
      {[](Batch& b) { b.tail_rows[0] = -1; }, "/requests/tail_rows: request 0 has -1 tail rows"},
      {[](Batch& b) { b.compress_len.push_back(1); }, "/rows/compress_len: has 8 rows but sum(/requests/num_rows) is 7"},
      {[](Batch& b) { b.compress_len[0] = -1; }, "/rows/compress_len: row 0 has L = -1, outside [0, lc = 40] of request 0"},
      {[](Batch& b) { b.compress_len[6] = 301; }, "/rows/compress_len: row 6 has L = 301, outside [0, lc = 300] of request 2"},
      {[](Batch& b) { b.pool.resize(b.pool.size() - 1); }, "/index_k/pool: holds 28287 bytes, not [26, 1088]"},
      {[](Batch& b) { b.pages = 27; }, "/index_k/pool: holds 28288 bytes, not [27, 1088]"},
      {[](Batch& b) { b.page_table[0] = -3; }, "/requests/page_table: request 0 page 0 is -3"},
      {[](Batch& b) { b.layers[1].id = -4; }, "/layers/-4: layer id is negative"},
      {[](Batch& b) { b.layers[2].id = 24; }, "/layers/24: layer id appears twice"},
      {[](Batch& b) { b.layers[2].role = static_cast<Role>(7); }, "/layers/28 attribute role: unknown role"},
      {[](Batch& b) { b.layers[1].q.pop_back(); }, "/layers/24/q: holds 14335 bytes, not [7, 32, 64]"},
      {[](Batch& b) { b.layers[1].q_scale.push_back(1); }, "/layers/24/q_scale: holds 897 bytes, not [7, 32, 4]"},
      {[](Batch& b) { b.layers[0].weights.clear(); }, "/layers/20/weights: holds 0 values, not [7, 32]"},
      {[](Batch& b) { b.layers[0].weights[40] = -INFINITY; }, "/layers/20/weights: row 1 head 8 is not finite"},
      {[](Batch& b) { b.layers[2].q_scale[0] = 0; }, "/layers/28/q_scale: ue8m0 byte 0 (not in 1..254) at row 0 head 0"},
      {[](Batch& b) { b.source_layer = 28; }, "attribute source_layer: 28 but the source layer is /layers/20"},
      {[](Batch& b) {
         b.layers.erase(b.layers.begin());
         b.source_layer = -1;
       }, "/layers: a consumer layer but no source layer"},
      {[](Batch& b) {
         b.layers.erase(b.layers.begin() + 1, b.layers.end());
         b.layers[0].role = Role::plain;
       }, "attribute source_layer: 20 but the source layer is absent (-1)"},
      {[](Batch& b) {
         Results r = b.outputs.begin()->second;
         r.name = "bad/name";
         b.outputs["bad/name"] = r;
       }, "/outputs/bad/name: output name must be non-empty and hold no '/'"},
      {[](Batch& b) { b.outputs.begin()->second.rows_done.pop_back(); }, "/outputs/reference-sparse/rows_done: has 6 rows, not R = 7"},
      {[](Batch& b) { b.outputs.begin()->second.blocks.resize(2048); }, "/outputs/reference-sparse/blocks: holds 2048 values, not [7, 2048]"},
      {[](Batch& b) { b.outputs.begin()->second.blocks[0] = 0; }, "/outputs/reference-sparse/blocks: row 0 holds block 0, outside [0, ceil(L/8) = 0)"},
      {[](Batch& b) { b.outputs.begin()->second.blocks[2 * 2048 + 1] = 0; }, "/outputs/reference-sparse/blocks: row 2 is not strictly ascending at column 1"},
      {[](Batch& b) { b.outputs.begin()->second.blocks[2 * 2048 + 7] = 3; }, "/outputs/reference-sparse/blocks: row 2 has block 3 after INT32_MAX padding"},
      {[](Batch& b) { b.outputs.begin()->second.blocks[2 * 2048 + 4] = -1; }, "row 2 holds block -1, outside [0, ceil(L/8) = 5)"},
      {[](Batch& b) { b.outputs.begin()->second.layers[20].positions.pop_back(); }, "/outputs/reference-sparse/20/positions: holds 3583 values, not [7, 512]"},
      {[](Batch& b) { b.outputs.begin()->second.layers[20].positions[512 * 2] = -2; }, "/outputs/reference-sparse/20/positions: row 2 holds -2, outside [-1, L = 40)"},
      {[](Batch& b) { b.outputs.begin()->second.layers[24].tail_positions.resize(512); }, "/outputs/reference-sparse/24/tail_positions: holds 512 values, not [sum(tail_rows) = 3, 512]"},
      {[](Batch& b) { b.outputs.begin()->second.layers[24].tail_positions[512 * 2] = 300; }, "tail_positions: tail row 2 (row 6) holds 300, outside [-1, L = 300)"},
      {[](Batch& b) { b.outputs.begin()->second.layers[20].tail_positions.assign(3 * 512, -1); }, "/outputs/reference-sparse/20/tail_positions: only consumer layers have tail picks"},
      {[](Batch& b) { b.outputs.begin()->second.layers[36].positions.assign(7 * 512, -1); }, "/outputs/reference-sparse/36: layer 36 is not in the batch"},
      {[](Batch& b) { b.outputs.begin()->second.rows_done[1] = 3; }, "/outputs/reference-sparse/rows_done: row 1 is 3, not 0 or 1"},
      {[](Batch& b) { b.outputs.begin()->second.layers[20].dense_scores.pop_back(); }, "/outputs/reference-sparse/20/dense_scores: has 6 rows, not R = 7"},
      {[](Batch& b) { b.outputs.begin()->second.layers[20].dense_scores[1] = {1.0f}; }, "/outputs/reference-sparse/20/dense_scores: row 1 has 1 scores, not 0 (row not done)"},
      {[](Batch& b) { b.outputs.begin()->second.layers[20].dense_scores[2].pop_back(); }, "dense_scores: row 2 has 39 scores, not 40 (L of a done row)"},
      {[](Batch& b) { b.outputs.begin()->second.layers[24].sparse_scores.push_back({}); }, "/outputs/reference-sparse/24/sparse_scores: has 8 rows, not R = 7"},
      {[](Batch& b) { b.outputs.begin()->second.layers[24].sparse_scores[4] = {1}; }, "/outputs/reference-sparse/24/sparse_scores: row 4 has scores but rows_done is 0"},
      {[](Batch& b) { b.outputs.begin()->second.layers[24].sparse_scores[6].resize(16385); }, "/outputs/reference-sparse/24/sparse_scores: row 6 has 16385 scores, more than 16384"},
  };
  std::set<std::string> seen;
  for (const auto& [edit, message] : cases) {
    Batch b = base;
    edit(b);
    const std::string error = validation_error(b);
    INFO("expected: " << message << "\nerror: " << error);
    REQUIRE(error.find(message) != std::string::npos);
    REQUIRE(seen.insert(error).second);
  }
}
