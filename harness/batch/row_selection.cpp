#include "harness/batch/row_selection.hpp"

#include <algorithm>
#include <cctype>
#include <numeric>

#include "core/errors.hpp"
#include "core/random.hpp"

namespace dsa {
namespace {

// Uniform in [0, n) by the multiply-shift method (bias below 2^-32 for n < 2^32).
uint64_t below(uint64_t& state, uint64_t n) {
  return uint64_t((unsigned __int128)splitmix64_next(state) * n >> 64);
}

bool all_digits(const std::string& s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c) != 0; });
}

long long parse_count(const std::string& spec, const std::string& item) {
  if (!all_digits(item) || item.size() > 12)
    throw InputError("--rows", spec, "expected all, a row count N, or a list of rows i,j,k (got '" + item + "')");
  return std::stoll(item);
}

}  // namespace

std::vector<int> draw_rows(const Batch& batch, int n, uint64_t seed) {
  const int rows = batch.rows();
  std::vector<int> order(static_cast<size_t>(rows));
  std::iota(order.begin(), order.end(), 0);
  const int take = std::clamp(n, 0, rows);
  uint64_t state = seed;
  for (int i = 0; i < take; ++i)  // partial Fisher-Yates: the first `take` entries are the draw
    std::swap(order[size_t(i)], order[size_t(i) + size_t(below(state, uint64_t(rows - i)))]);
  order.resize(size_t(take));
  if (rows > 0) {
    const auto& len = batch.compress_len;
    order.push_back(int(std::min_element(len.begin(), len.end()) - len.begin()));
    order.push_back(int(std::max_element(len.begin(), len.end()) - len.begin()));
  }
  std::sort(order.begin(), order.end());
  order.erase(std::unique(order.begin(), order.end()), order.end());
  return order;
}

std::vector<int> select_rows(const Batch& batch, const std::string& spec, uint64_t seed) {
  // An empty spec is a mistake (an unset variable in a script), never "all".
  if (spec.empty()) throw InputError("--rows", "\"\"", "is empty; say all, N or a list i,j,k");
  if (spec == "all") return {};
  if (spec.find(',') == std::string::npos) {
    const long long n = parse_count(spec, spec);
    if (n >= batch.rows()) return {};
    return draw_rows(batch, int(n), seed);
  }
  std::vector<int> rows;
  size_t start = 0;
  while (start < spec.size()) {
    const size_t comma = std::min(spec.find(',', start), spec.size());
    const std::string item = spec.substr(start, comma - start);
    start = comma + 1;
    if (item.empty() && start >= spec.size()) break;  // "i," selects one row
    const long long r = parse_count(spec, item);
    if (r >= batch.rows())
      throw InputError("--rows", spec, "row " + item + " is outside [0, " + std::to_string(batch.rows()) + ")");
    rows.push_back(int(r));
  }
  if (rows.empty()) throw InputError("--rows", spec, "no rows listed");
  std::sort(rows.begin(), rows.end());
  rows.erase(std::unique(rows.begin(), rows.end()), rows.end());
  return rows;
}

}  // namespace dsa
