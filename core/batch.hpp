#pragma once
// The in-memory batch: plain arrays laid out exactly like the HDF5 datasets of batch format v1
// (docs/batch-format.md), plus derived per-row lookups. Nothing here touches HDF5.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/constants.hpp"
#include "core/results.hpp"

namespace dsa {

enum class Role { source, consumer, plain };
const char* role_name(Role role);
Role parse_role(const std::string& name, bool* ok);

struct Layer {
  int id = 0;
  Role role = Role::plain;
  std::vector<uint8_t> q;        // [R, H, D/2] packed e2m1, low nibble = even element
  std::vector<uint8_t> q_scale;  // [R, H, D/32] ue8m0 exponents
  std::vector<float> weights;    // [R, H]

  const uint8_t* q_row(int r) const { return q.data() + size_t(r) * kHeads * kPackedDim; }
  const uint8_t* scale_row(int r) const { return q_scale.data() + size_t(r) * kHeads * kScaleGroups; }
  const float* weight_row(int r) const { return weights.data() + size_t(r) * kHeads; }
};

struct Batch {
  std::string path;  // where it was read from (for messages); empty for generated batches

  // Root attributes.
  int format_version = 1;
  int topk = 512;
  int page_size = 128;
  int compress_ratio = 1;
  int source_layer = -1;
  std::string origin = "synthetic";
  std::string description;

  // /requests
  std::vector<int32_t> num_rows;        // [Q]
  std::vector<int32_t> compressed_len;  // [Q] lc
  std::vector<int32_t> page_table;      // [Q, table_width]; -1 past ceil(lc / P)
  int table_width = 0;
  std::vector<int32_t> tail_rows;       // [Q] or empty when the file has none

  // /rows
  std::vector<int32_t> compress_len;    // [R] L

  // /index_k
  std::vector<uint8_t> pool;            // [pages, P * 68]
  int64_t pages = 0;

  std::vector<Layer> layers;            // ascending layer id
  std::map<std::string, Results> outputs;  // recorded outputs by name

  // Derived lookups: call finalize() after filling the fields above.
  std::vector<int32_t> row_request;     // [R] request of each row
  std::vector<int32_t> request_first_row;  // [Q]
  std::vector<int64_t> request_start;   // [Q] flattened-K column of position 0
  std::vector<int32_t> tail_first;      // [Q] index into tail_positions of the request's first tail row
  int64_t total_tail_rows = 0;
  void finalize();

  int requests() const { return int(num_rows.size()); }
  int rows() const { return int(compress_len.size()); }
  int max_len() const;  // max L over rows (0 when no rows)
  const Layer* layer(int id) const;
  const Layer* source() const;
  std::vector<const Layer*> layers_with(Role role) const;

  // Pool slot bytes of compressed position `pos` of request `b` (64 payload bytes, 4 scales).
  int64_t slot_of(int b, int64_t pos) const {
    return int64_t(page_table[size_t(b) * table_width + pos / page_size]) * page_size + pos % page_size;
  }
  const uint8_t* key_payload(int b, int64_t pos) const {
    int64_t slot = slot_of(b, pos);
    return pool.data() + (slot / page_size) * int64_t(page_size) * kSlotBytes + (slot % page_size) * kPackedDim;
  }
  const uint8_t* key_scale(int b, int64_t pos) const {
    int64_t slot = slot_of(b, pos);
    return pool.data() + (slot / page_size) * int64_t(page_size) * kSlotBytes +
           int64_t(page_size) * kPackedDim + (slot % page_size) * kScaleGroups;
  }
  // Tail row index (into tail_positions) of global row r, or -1 when r is not a tail row.
  int64_t tail_index(int r) const;
};

}  // namespace dsa
