#pragma once
// The one adapter from a Batch to the CPU reference's views: the reference (reference/) knows
// nothing of Batch, so whoever scores rows of a batch with it (the reference implementation, the
// comparison's ranking scores, the replay's worst rows) takes the views from here.
#include "core/batch.hpp"
#include "reference/scores.hpp"

namespace dsa {

// The keys a batch row attends to: the shared pool through the page table of the row's request.
inline ref::KeyView keys_of(const Batch& batch, int row) {
  ref::KeyView keys;
  keys.pool = batch.pool.data();
  keys.page_size = batch.page_size;
  keys.table = batch.page_table.data() + size_t(batch.row_request[size_t(row)]) * size_t(batch.table_width);
  return keys;
}

// The packed query, scales and head weights of one row of a layer.
inline ref::QueryRow query_of(const Layer& layer, int row) {
  return {layer.q_row(row), layer.scale_row(row), layer.weight_row(row)};
}

}  // namespace dsa
