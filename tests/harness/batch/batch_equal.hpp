#pragma once
// Field-by-field equality of two batches' inputs (attributes, requests, rows, pool, layers),
// shared by the batch I/O round trips and the generator's determinism tests.
#include "core/batch.hpp"
#include "tests/catch.hpp"

namespace dsa::test {

inline void require_same_inputs(const Batch& a, const Batch& b) {
  REQUIRE(a.format_version == b.format_version);
  REQUIRE(a.topk == b.topk);
  REQUIRE(a.page_size == b.page_size);
  REQUIRE(a.compress_ratio == b.compress_ratio);
  REQUIRE(a.source_layer == b.source_layer);
  REQUIRE(a.origin == b.origin);
  REQUIRE(a.description == b.description);
  REQUIRE(a.num_rows == b.num_rows);
  REQUIRE(a.compressed_len == b.compressed_len);
  REQUIRE(a.table_width == b.table_width);
  REQUIRE(a.page_table == b.page_table);
  REQUIRE(a.tail_rows == b.tail_rows);
  REQUIRE(a.compress_len == b.compress_len);
  REQUIRE(a.pages == b.pages);
  REQUIRE(a.pool == b.pool);
  REQUIRE(a.layers.size() == b.layers.size());
  for (size_t i = 0; i < a.layers.size(); ++i) {
    REQUIRE(a.layers[i].id == b.layers[i].id);
    REQUIRE(a.layers[i].role == b.layers[i].role);
    REQUIRE(a.layers[i].q == b.layers[i].q);
    REQUIRE(a.layers[i].q_scale == b.layers[i].q_scale);
    REQUIRE(a.layers[i].weights == b.layers[i].weights);
  }
}

}  // namespace dsa::test
