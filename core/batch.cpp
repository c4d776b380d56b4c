#include "core/batch.hpp"

#include <algorithm>

namespace dsa {

const char* role_name(Role role) {
  switch (role) {
    case Role::source: return "source";
    case Role::consumer: return "consumer";
    case Role::plain: return "plain";
  }
  return "?";
}

Role parse_role(const std::string& name, bool* ok) {
  *ok = true;
  if (name == "source") return Role::source;
  if (name == "consumer") return Role::consumer;
  if (name == "plain") return Role::plain;
  *ok = false;
  return Role::plain;
}

void Batch::finalize() {
  const int q = requests();
  row_request.assign(size_t(rows()), 0);
  request_first_row.assign(size_t(q), 0);
  request_start.assign(size_t(q), 0);
  tail_first.assign(size_t(q), 0);
  int row = 0;
  int64_t start = 0, tails = 0;
  for (int b = 0; b < q; ++b) {
    request_first_row[size_t(b)] = row;
    request_start[size_t(b)] = start;
    tail_first[size_t(b)] = int32_t(tails);
    for (int i = 0; i < num_rows[size_t(b)] && row < rows(); ++i) row_request[size_t(row++)] = b;
    start += compressed_len[size_t(b)];
    if (!tail_rows.empty()) tails += tail_rows[size_t(b)];
  }
  total_tail_rows = tails;
  std::sort(layers.begin(), layers.end(), [](const Layer& a, const Layer& b) { return a.id < b.id; });
}

int Batch::max_len() const {
  return compress_len.empty() ? 0 : *std::max_element(compress_len.begin(), compress_len.end());
}

const Layer* Batch::layer(int id) const {
  for (const Layer& l : layers)
    if (l.id == id) return &l;
  return nullptr;
}

const Layer* Batch::source() const {
  for (const Layer& l : layers)
    if (l.role == Role::source) return &l;
  return nullptr;
}

std::vector<const Layer*> Batch::layers_with(Role role) const {
  std::vector<const Layer*> out;
  for (const Layer& l : layers)
    if (l.role == role) out.push_back(&l);
  return out;
}

int64_t Batch::tail_index(int r) const {
  if (tail_rows.empty()) return -1;
  const int b = row_request[size_t(r)];
  const int first_tail_row = request_first_row[size_t(b)] + num_rows[size_t(b)] - tail_rows[size_t(b)];
  if (r < first_tail_row) return -1;
  return tail_first[size_t(b)] + (r - first_tail_row);
}

}  // namespace dsa
