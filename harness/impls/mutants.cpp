#include "harness/impls/mutants.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/errors.hpp"
#include "reference/scores.hpp"
#include "reference/selection.hpp"

namespace dsa {

namespace {

enum class Bug {
  none,                    // the control: the pipeline below without a bug must pass
  page_index_off_by_one,   // position p read from the page of p + P (pos / P + 1)
  page_entry_off_by_one,   // page-table entry + 1: the neighbouring physical page
  request_start_missing,   // every request reads request 0's keys (its start offset not added)
  newest_not_forced,       // level one ranks the newest block by its score, not +inf
  tie_rule_reversed,       // equal scores: the larger position wins
  position_past_end,       // the last pick is L (a loop bound of <= L)
  consumer_fp32,           // consumers ranked by fp32 dense scores on the sparse path
  blocks_unsorted,         // kept blocks written in rank order, not ascending
  duplicate_pick,          // the second pick repeats the first
  partial_block_dropped,   // the newest, partial block's positions are not candidates
  nan_selected,            // a NaN score (a bad key scale) sorts above every number
  slot_unwritten,          // the middle output slot keeps its initial pad
  tail_unwritten,          // the tail table's picks are never written
};

struct MutantEntry {
  Bug bug;
  MutantInfo info;
};

const std::vector<MutantEntry>& mutant_entries() {
  static const std::vector<MutantEntry> all = {
      {Bug::none, {"control", "no defect: the mutants' own pipeline, which must pass"}},
      {Bug::page_index_off_by_one, {"page-index-off-by-one", "position p read from the page of p + P"}},
      {Bug::page_entry_off_by_one, {"page-entry-off-by-one", "page-table entry + 1 (the neighbouring page)"}},
      {Bug::request_start_missing, {"request-start-missing", "every request reads request 0's keys"}},
      {Bug::newest_not_forced, {"newest-not-forced", "level one does not force the newest block to +inf"}},
      {Bug::tie_rule_reversed, {"tie-rule-reversed", "equal scores pick the larger position"}},
      {Bug::position_past_end, {"position-past-end", "the last pick is position L"}},
      {Bug::consumer_fp32, {"consumer-fp32", "consumers ranked by fp32 instead of bf16 sparse scores"}},
      {Bug::blocks_unsorted, {"blocks-unsorted", "kept blocks left in rank order"}},
      {Bug::duplicate_pick, {"duplicate-pick", "the second pick repeats the first"}},
      {Bug::partial_block_dropped, {"partial-block-dropped", "the partial newest block's positions are dropped"}},
      {Bug::nan_selected, {"nan-selected", "a NaN score is selected before every number"}},
      {Bug::slot_unwritten, {"slot-unwritten", "the middle output slot is never written"}},
      {Bug::tail_unwritten, {"tail-unwritten", "the tail table's picks are never written"}},
  };
  return all;
}

// Equal scores: larger position first, the reverse of the reference rule. Ids are mirrored so
// that the reference's "smaller id" picks the larger position.
template <class T, class Topk>
std::vector<int32_t> reversed_ties(const T* score, const std::vector<int32_t>& pos, int k, Topk topk) {
  std::vector<int32_t> mirrored(pos.size());
  for (size_t i = 0; i < pos.size(); ++i) mirrored[i] = std::numeric_limits<int32_t>::max() - pos[i];
  std::vector<int32_t> picks = topk(score, mirrored.data(), int64_t(pos.size()), k);
  for (int32_t& p : picks) p = std::numeric_limits<int32_t>::max() - p;
  std::sort(picks.begin(), picks.end());
  return picks;
}

std::vector<int32_t> iota_positions(int64_t n) {
  std::vector<int32_t> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[size_t(i)] = int32_t(i);
  return v;
}

class Mutant : public Implementation {
 public:
  Mutant(Bug bug, std::string name) : bug_(bug), name_(std::move(name)) {}
  std::string name() const override { return "mutant:" + name_; }

 protected:
  void begin(const Batch& batch, const RunOptions& options, Results& out) override {
    rows_ = options.rows;
    if (rows_.empty()) rows_ = iota_positions(batch.rows());
    level_one_.assign(size_t(batch.rows()), ref::LevelOne());
    table_ = mutated_table(batch);
    out.notes = "planted defect: " + name_;
  }

  void publish(const Batch& batch, const Layer& source, const RunOptions&, Results& out) override {
    LayerResult& lr = out.layers[source.id];
    lr.positions.assign(size_t(batch.rows()) * size_t(batch.topk), kPositionPad);
    out.blocks.assign(size_t(batch.rows()) * kTopkBlocks, kBlockPad);
    for (int r : rows_) {
      const std::vector<float> dense = dense_row(batch, source, r);
      write(source_picks(dense, batch.topk), batch, lr, r);
      level_one_[size_t(r)] = level_one(dense);
      int32_t* row = out.blocks.data() + size_t(r) * kTopkBlocks;
      ref::write_blocks(level_one_[size_t(r)], row);
      if (bug_ == Bug::blocks_unsorted) std::reverse(row, row + level_one_[size_t(r)].blocks.size());
    }
  }

  void select(const Batch& batch, const Layer& consumer, const RunOptions&, Results& out) override {
    LayerResult& lr = out.layers[consumer.id];
    lr.positions.assign(size_t(batch.rows()) * size_t(batch.topk), kPositionPad);
    for (int r : rows_) write(consumer_picks(batch, consumer, r), batch, lr, r);
    if (batch.total_tail_rows == 0) return;
    lr.tail_positions.assign(size_t(batch.total_tail_rows) * size_t(batch.topk), kPositionPad);
    if (bug_ == Bug::tail_unwritten) return;
    for (int r : rows_) {
      const int64_t t = batch.tail_index(r);
      if (t >= 0)
        std::copy_n(lr.positions.data() + size_t(r) * size_t(batch.topk), batch.topk,
                    lr.tail_positions.data() + size_t(t) * size_t(batch.topk));
    }
  }

  void plain(const Batch& batch, const Layer& layer, const RunOptions&, Results& out) override {
    LayerResult& lr = out.layers[layer.id];
    lr.positions.assign(size_t(batch.rows()) * size_t(batch.topk), kPositionPad);
    for (int r : rows_) write(source_picks(dense_row(batch, layer, r), batch.topk), batch, lr, r);
  }

 private:
  // The page tables as the buggy kernel sees them.
  std::vector<int32_t> mutated_table(const Batch& b) const {
    std::vector<int32_t> t = b.page_table;
    const size_t w = size_t(b.table_width);
    for (int q = 0; q < b.requests(); ++q) {
      int32_t* row = t.data() + size_t(q) * w;
      const int32_t* first = b.page_table.data();
      for (size_t j = 0; j < w; ++j) {
        if (row[j] < 0) continue;
        if (bug_ == Bug::page_entry_off_by_one) row[j] = int32_t((row[j] + 1) % std::max<int64_t>(b.pages, 1));
        if (bug_ == Bug::page_index_off_by_one && j + 1 < w && row[j + 1] >= 0) row[j] = row[j + 1];
        if (bug_ == Bug::request_start_missing && first[j] >= 0) row[j] = first[j];
      }
    }
    return t;
  }

  ref::KeyView keys(const Batch& b, int r) const {
    ref::KeyView k;
    k.pool = b.pool.data();
    k.page_size = b.page_size;
    k.table = table_.data() + size_t(b.row_request[size_t(r)]) * size_t(b.table_width);
    return k;
  }

  static ref::QueryRow query(const Layer& l, int r) { return {l.q_row(r), l.scale_row(r), l.weight_row(r)}; }

  std::vector<float> dense_row(const Batch& b, const Layer& l, int r) const {
    std::vector<float> dense(static_cast<size_t>(b.compress_len[size_t(r)]));
    ref::dense_scores_row(query(l, r), keys(b, r), int64_t(dense.size()), dense.data());
    if (bug_ == Bug::nan_selected && dense.size() > size_t(b.topk)) {
      // The lowest score becomes NaN, which a select over raw bits orders above every number:
      // +inf stands in for it so the reference's top-k (which assumes no NaN) ranks it first.
      *std::min_element(dense.begin(), dense.end()) = std::numeric_limits<float>::infinity();
    }
    return dense;
  }

  std::vector<int32_t> source_picks(const std::vector<float>& dense, int k) const {
    const int64_t L = int64_t(dense.size());
    if (bug_ == Bug::tie_rule_reversed && L > k)
      return reversed_ties(dense.data(), iota_positions(L), k,
                           [](const float* s, const int32_t* ids, int64_t n, int kk) { return ref::topk_ids(s, ids, n, kk); });
    return ref::source_topk(dense.data(), L, k);
  }

  ref::LevelOne level_one(const std::vector<float>& dense) const {
    const int64_t L = int64_t(dense.size());
    if (bug_ != Bug::newest_not_forced || ref::block_count(L) <= kTopkBlocks) return ref::level_one(dense.data(), L);
    std::vector<float> key = ref::block_keys(dense.data(), L);
    float newest = -std::numeric_limits<float>::infinity();
    for (int64_t p = (ref::block_count(L) - 1) * kBlockSize; p < L; ++p) newest = std::max(newest, dense[size_t(p)]);
    key.back() = newest;  // the bug: ranked like any other block
    ref::LevelOne l1;
    l1.blocks = ref::topk_ids(key.data(), nullptr, int64_t(key.size()), kTopkBlocks);
    l1.valid_len = ref::valid_len_of(int64_t(l1.blocks.size()), L);
    return l1;
  }

  std::vector<int32_t> consumer_picks(const Batch& b, const Layer& consumer, int r) const {
    ref::LevelOne l1 = level_one_[size_t(r)];
    const int64_t L = b.compress_len[size_t(r)];
    if (bug_ == Bug::partial_block_dropped && L % kBlockSize != 0 && l1.valid_len > 0)
      l1.valid_len -= L % kBlockSize;  // the newest block is kept last, so its columns are the last
    const std::vector<int32_t> cand = ref::candidate_positions(l1);
    const int64_t n = int64_t(cand.size());
    const ref::QueryRow q = query(consumer, r);
    const ref::KeyView k = keys(b, r);
    if (bug_ == Bug::consumer_fp32) {
      std::vector<float> dense(static_cast<size_t>(n));
      float* out = dense.data();
      ref::dense_scores_at_multi(&q, 1, k, cand.data(), n, &out);
      return ref::level_two_mask(l1, dense.data(), b.topk);
    }
    std::vector<uint16_t> sparse(static_cast<size_t>(n));
    uint16_t* out = sparse.data();
    ref::sparse_scores_at_multi(&q, 1, k, cand.data(), n, &out);
    if (bug_ == Bug::tie_rule_reversed && n > b.topk)
      return reversed_ties(sparse.data(), cand, b.topk, [](const uint16_t* s, const int32_t* ids, int64_t nn, int kk) {
        return ref::topk_ids_bf16(s, ids, nn, kk);
      });
    std::vector<int32_t> picks = ref::level_two_sparse(l1, sparse.data(), b.topk);
    if (bug_ == Bug::position_past_end && !picks.empty()) {
      if (int(picks.size()) == b.topk) picks.back() = int32_t(L);
      else picks.push_back(int32_t(L));
    }
    if (bug_ == Bug::duplicate_pick && picks.size() >= 2) picks[1] = picks[0];
    return picks;
  }

  void write(const std::vector<int32_t>& picks, const Batch& b, LayerResult& lr, int r) const {
    int32_t* row = lr.positions.data() + size_t(r) * size_t(b.topk);
    ref::write_positions(picks, b.topk, row);
    if (bug_ == Bug::duplicate_pick && picks.size() >= 2) row[1] = row[0];  // write_positions may dedupe
    if (bug_ == Bug::slot_unwritten && int(picks.size()) > b.topk / 2) row[b.topk / 2] = kPositionPad;
  }

  Bug bug_;
  std::string name_;
  std::vector<int> rows_;
  std::vector<ref::LevelOne> level_one_;
  std::vector<int32_t> table_;
};

}  // namespace

const std::vector<MutantInfo>& mutants() {
  static const std::vector<MutantInfo> all = [] {
    std::vector<MutantInfo> v;
    for (const MutantEntry& e : mutant_entries()) v.push_back(e.info);
    return v;
  }();
  return all;
}

ImplementationPtr make_mutant(const std::string& name) {
  for (const MutantEntry& e : mutant_entries())
    if (e.info.name == name) return ImplementationPtr(new Mutant(e.bug, name));
  throw InputError("--impl", "mutant:" + name, "unknown mutant (see `dsa-harness replay --list-impl`)");
}

}  // namespace dsa
