#include "reference/selection.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "reference/formats.hpp"

namespace dsa::ref {

namespace {

template <class T>
std::vector<int32_t> topk_generic(const T* score, const int32_t* ids, int64_t n, int k) {
  const auto id_of = [&](int64_t i) { return ids ? ids[i] : int32_t(i); };
  std::vector<int32_t> out;
  if (n <= 0 || k <= 0) return out;
  if (n <= k) {
    out.reserve(size_t(n));
    for (int64_t i = 0; i < n; ++i) out.push_back(id_of(i));
    std::sort(out.begin(), out.end());
    return out;
  }
  std::vector<int32_t> order(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) order[size_t(i)] = int32_t(i);
  // The reference order: larger score first, then smaller id.
  const auto better = [&](int32_t a, int32_t b) {
    if (score[a] != score[b]) return score[a] > score[b];
    return id_of(a) < id_of(b);
  };
  std::nth_element(order.begin(), order.begin() + (k - 1), order.end(), better);
  out.reserve(size_t(k));
  for (int i = 0; i < k; ++i) out.push_back(id_of(order[size_t(i)]));
  std::sort(out.begin(), out.end());
  return out;
}

template <class T>
std::vector<T> block_keys_generic(const T* scores, int64_t L) {
  const int64_t nblocks = block_count(L);
  std::vector<T> keys(size_t(nblocks), -std::numeric_limits<T>::infinity());
  for (int64_t p = 0; p < L; ++p) {
    T& key = keys[size_t(p / kBlockSize)];
    key = std::max(key, scores[p]);
  }
  if (nblocks > 0) keys.back() = std::numeric_limits<T>::infinity();  // the newest block is always kept
  return keys;
}

template <class T>
LevelOne level_one_generic(const T* scores, int64_t L) {
  LevelOne l1;
  const int64_t nblocks = block_count(L);
  if (nblocks <= kTopkBlocks) {
    for (int64_t b = 0; b < nblocks; ++b) l1.blocks.push_back(int32_t(b));
  } else {
    const std::vector<T> keys = block_keys_generic(scores, L);
    l1.blocks = topk_generic(keys.data(), nullptr, nblocks, kTopkBlocks);
  }
  l1.valid_len = valid_len_of(int64_t(l1.blocks.size()), L);
  return l1;
}

template <class T>
std::vector<int32_t> level_two_generic(const LevelOne& l1, const T* scores, int k) {
  const std::vector<int32_t> candidates = candidate_positions(l1);
  return topk_generic(scores, candidates.data(), l1.valid_len, k);
}

}  // namespace

std::vector<int32_t> topk_ids(const float* score, const int32_t* ids, int64_t n, int k) {
  return topk_generic(score, ids, n, k);
}
std::vector<int32_t> topk_ids(const double* score, const int32_t* ids, int64_t n, int k) {
  return topk_generic(score, ids, n, k);
}
std::vector<int32_t> topk_ids_bf16(const uint16_t* score, const int32_t* ids, int64_t n, int k) {
  std::vector<float> values(size_t(std::max<int64_t>(n, 0)));
  for (int64_t i = 0; i < n; ++i) values[size_t(i)] = bf16_to_float(score[i]);
  return topk_generic(values.data(), ids, n, k);
}

std::vector<int32_t> source_topk(const float* dense, int64_t L, int k) { return topk_generic(dense, nullptr, L, k); }
std::vector<int32_t> source_topk(const double* exact, int64_t L, int k) { return topk_generic(exact, nullptr, L, k); }

int64_t block_count(int64_t L) { return L <= 0 ? 0 : (L + kBlockSize - 1) / kBlockSize; }

std::vector<float> block_keys(const float* dense, int64_t L) { return block_keys_generic(dense, L); }
std::vector<double> block_keys(const double* exact, int64_t L) { return block_keys_generic(exact, L); }

LevelOne level_one(const float* dense, int64_t L) { return level_one_generic(dense, L); }
LevelOne level_one(const double* exact, int64_t L) { return level_one_generic(exact, L); }

int64_t valid_len_of(int64_t kept, int64_t L) {
  if (L <= 0 || kept <= 0) return 0;
  return kBlockSize * (kept - 1) + ((L - 1) % kBlockSize) + 1;
}

std::vector<int32_t> candidate_positions(const LevelOne& l1) {
  std::vector<int32_t> out(size_t(l1.valid_len));
  for (int64_t c = 0; c < l1.valid_len; ++c) out[size_t(c)] = candidate_position(l1, c);
  return out;
}

std::vector<int32_t> level_two_sparse(const LevelOne& l1, const uint16_t* sparse, int k) {
  const std::vector<int32_t> candidates = candidate_positions(l1);
  return topk_ids_bf16(sparse, candidates.data(), l1.valid_len, k);
}
std::vector<int32_t> level_two_mask(const LevelOne& l1, const float* dense, int k) {
  return level_two_generic(l1, dense, k);
}
std::vector<int32_t> level_two_exact(const LevelOne& l1, const double* exact, int k) {
  return level_two_generic(l1, exact, k);
}

void write_positions(const std::vector<int32_t>& picks, int k, int32_t* row) {
  std::vector<int32_t> sorted(picks);
  std::sort(sorted.begin(), sorted.end());
  for (int i = 0; i < k; ++i) row[i] = i < int(sorted.size()) ? sorted[size_t(i)] : kPositionPad;
}

void write_blocks(const LevelOne& l1, int32_t* row) {
  for (int i = 0; i < kTopkBlocks; ++i) row[i] = i < int(l1.blocks.size()) ? l1.blocks[size_t(i)] : kBlockPad;
}

}  // namespace dsa::ref
