#include "harness/impl_reference.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <exception>
#include <mutex>
#include <thread>

#include "harness/core/errors.hpp"
#include "reference/scores.hpp"
#include "reference/selection.hpp"

namespace dsa {

namespace {

using Clock = std::chrono::steady_clock;

// Runs fn(i) for i in [0, n) on every core. Each item writes only its own outputs, so the
// result does not depend on the thread count. The error of the smallest failing item wins.
template <class Fn>
void parallel_for(int64_t n, Fn fn) {
  const int threads = int(std::max(1u, std::min<unsigned>(std::thread::hardware_concurrency(), unsigned(std::max<int64_t>(n, 1)))));
  std::atomic<int64_t> next{0};
  std::mutex error_mutex;
  int64_t error_item = INT64_MAX;
  std::exception_ptr error;
  const auto work = [&] {
    for (int64_t i = next++; i < n; i = next++) {
      try {
        fn(i);
      } catch (...) {
        std::lock_guard<std::mutex> lock(error_mutex);
        if (i < error_item) { error_item = i; error = std::current_exception(); }
      }
    }
  };
  std::vector<std::thread> pool;
  for (int t = 1; t < threads; ++t) pool.emplace_back(work);
  work();
  for (std::thread& t : pool) t.join();
  if (error) std::rethrow_exception(error);
}

ref::KeyView keys_of(const Batch& batch, int request) {
  ref::KeyView keys;
  keys.pool = batch.pool.data();
  keys.page_size = batch.page_size;
  keys.table = batch.page_table.data() + size_t(request) * size_t(batch.table_width);
  return keys;
}

ref::QueryRow query_of(const Layer& layer, int r) { return {layer.q_row(r), layer.scale_row(r), layer.weight_row(r)}; }

std::string dataset_of(const Layer& layer) { return "/layers/" + std::to_string(layer.id) + "/q"; }

// Runs `fn`, turning a score overflow into the invalid-input error that names file, layer, row.
template <class Fn>
void guarded(const Batch& batch, const Layer& layer, int row, Fn fn) {
  try {
    fn();
  } catch (const ref::ScoreOverflow& e) {
    throw InputError(batch.path.empty() ? "<generated batch>" : batch.path, dataset_of(layer),
                     "row " + std::to_string(row) + ": the exact score of position " + std::to_string(e.position) +
                         ", head " + std::to_string(e.head) + " overflows fp32");
  }
}

KernelTiming host_timing(const std::string& kernel, const Layer& layer, double ms) {
  KernelTiming t;
  t.kernel = kernel;
  t.layer = std::to_string(layer.id);
  t.calls = 1;
  t.samples = 1;
  t.median_ms = t.min_ms = t.max_ms = ms;
  return t;
}

double ms_since(Clock::time_point start) { return std::chrono::duration<double, std::milli>(Clock::now() - start).count(); }

// Host time of one stage summed over the worker threads; reported divided by the thread count,
// i.e. the stage's share of the wall time when every core works.
struct StageClock {
  std::atomic<int64_t> ns{0};
  template <class Fn>
  auto time(Fn fn) {
    const auto start = Clock::now();
    struct Add {
      StageClock* self;
      Clock::time_point start;
      ~Add() { self->ns += std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - start).count(); }
    } add{this, start};
    return fn();
  }
  double wall_ms() const { return double(ns.load()) / 1e6 / std::max(1u, std::thread::hardware_concurrency()); }
};

class ReferenceImpl : public Implementation {
 public:
  explicit ReferenceImpl(PathKind path) : path_(path) {}
  std::string name() const override { return reference_for(path_); }

 protected:
  void begin(const Batch& batch, const RunOptions& options, Results& out) override {
    rows_.clear();
    if (options.rows.empty()) {
      for (int r = 0; r < batch.rows(); ++r) rows_.push_back(r);
    } else {
      for (int r : options.rows)
        if (r < 0 || r >= batch.rows())
          throw InputError("--rows", std::to_string(r), "row out of range [0, " + std::to_string(batch.rows()) + ")");
      rows_ = options.rows;
    }
    level_one_.assign(size_t(batch.rows()), ref::LevelOne());
    have_blocks_ = false;
    out.notes = "CPU reference, " + std::string(path_name(path_)) + " path, " +
                std::to_string(std::thread::hardware_concurrency()) + " threads";
  }

  void publish(const Batch& batch, const Layer& source, const RunOptions& options, Results& out) override {
    LayerResult& lr = start_layer(batch, source, options, out);
    out.blocks.assign(size_t(batch.rows()) * kTopkBlocks, kBlockPad);
    StageClock scores, topk, blocks;
    for_row_groups(batch, [&](const std::vector<int>& group) {
      if (path_ == PathKind::exact) {
        for (int r : group) publish_exact_row(batch, source, r, lr, out, scores, topk, blocks);
        return;
      }
      std::vector<std::vector<float>> dense = scores.time([&] { return dense_rows(batch, source, group); });
      for (size_t i = 0; i < group.size(); ++i) {
        const int r = group[i];
        const int64_t L = batch.compress_len[size_t(r)];
        topk.time([&] {
          ref::write_positions(ref::source_topk(dense[i].data(), L, batch.topk), batch.topk, position_row(lr, batch, r));
        });
        blocks.time([&] {
          level_one_[size_t(r)] = ref::level_one(dense[i].data(), L);
          ref::write_blocks(level_one_[size_t(r)], out.blocks.data() + size_t(r) * kTopkBlocks);
        });
        if (options.scores) lr.dense_scores[size_t(r)] = std::move(dense[i]);
      }
    });
    have_blocks_ = true;
    out.timings.push_back(host_timing(name() + (path_ == PathKind::exact ? "/exact_scores" : "/dense_scores"), source,
                                      scores.wall_ms()));
    out.timings.push_back(host_timing(name() + "/source_topk", source, topk.wall_ms()));
    out.timings.push_back(host_timing(name() + "/level_one", source, blocks.wall_ms()));
  }

  void select(const Batch& batch, const Layer& consumer, const RunOptions& options, Results& out) override {
    if (!have_blocks_)
      throw InputError(batch.path, dataset_of(consumer), "a consumer layer needs a source layer in the same file");
    LayerResult& lr = start_layer(batch, consumer, options, out);
    const auto start = Clock::now();
    parallel_for(int64_t(rows_.size()), [&](int64_t i) {
      const int r = rows_[size_t(i)];
      guarded(batch, consumer, r, [&] { select_row(batch, consumer, r, options, lr); });
    });
    out.timings.push_back(host_timing(name() + "/level_two", consumer, ms_since(start)));
    if (batch.total_tail_rows > 0) {
      // The tail table is the published table restricted to the tail rows: same blocks, same
      // valid_len, same scores, so the tail picks are the row's full-table picks.
      lr.tail_positions.assign(size_t(batch.total_tail_rows) * size_t(batch.topk), kPositionPad);
      for (int r : rows_) {
        const int64_t t = batch.tail_index(r);
        if (t < 0) continue;
        std::copy_n(position_row(lr, batch, r), batch.topk, lr.tail_positions.data() + size_t(t) * size_t(batch.topk));
      }
    }
  }

  void plain(const Batch& batch, const Layer& layer, const RunOptions& options, Results& out) override {
    LayerResult& lr = start_layer(batch, layer, options, out);
    const auto start = Clock::now();
    for_row_groups(batch, [&](const std::vector<int>& group) {
      if (path_ == PathKind::exact) {
        for (int r : group) {
          const int64_t L = batch.compress_len[size_t(r)];
          std::vector<double> exact(static_cast<size_t>(L));
          guarded(batch, layer, r, [&] {
            ref::exact_scores_row(query_of(layer, r), keys_of(batch, batch.row_request[size_t(r)]), L, exact.data());
          });
          ref::write_positions(ref::source_topk(exact.data(), L, batch.topk), batch.topk, position_row(lr, batch, r));
        }
        return;
      }
      std::vector<std::vector<float>> dense = dense_rows(batch, layer, group);
      for (size_t i = 0; i < group.size(); ++i) {
        const int r = group[i];
        ref::write_positions(ref::source_topk(dense[i].data(), batch.compress_len[size_t(r)], batch.topk), batch.topk,
                             position_row(lr, batch, r));
        if (options.scores) lr.dense_scores[size_t(r)] = std::move(dense[i]);
      }
    });
    out.timings.push_back(host_timing(name() + "/plain_topk", layer, ms_since(start)));
  }

 private:
  LayerResult& start_layer(const Batch& batch, const Layer& layer, const RunOptions& options, Results& out) {
    LayerResult& lr = out.layers[layer.id];
    lr.positions.assign(size_t(batch.rows()) * size_t(batch.topk), kPositionPad);
    const bool dense = options.scores && path_ != PathKind::exact;
    if (dense) lr.dense_scores.assign(size_t(batch.rows()), {});
    if (dense && path_ == PathKind::sparse && layer.role == Role::consumer) {
      lr.dense_scores.clear();
      lr.sparse_scores.assign(size_t(batch.rows()), {});
    }
    return lr;
  }

  static int32_t* position_row(LayerResult& lr, const Batch& batch, int r) {
    return lr.positions.data() + size_t(r) * size_t(batch.topk);
  }

  // Splits the computed rows into groups of rows of one request (they share the keys, so one
  // pass over the keys serves the group) and runs fn(group) for each group in parallel.
  template <class Fn>
  void for_row_groups(const Batch& batch, Fn fn) {
    const int threads = int(std::max(1u, std::thread::hardware_concurrency()));
    std::vector<std::vector<int>> groups;
    size_t i = 0;
    while (i < rows_.size()) {
      const int request = batch.row_request[size_t(rows_[i])];
      size_t j = i;
      while (j < rows_.size() && batch.row_request[size_t(rows_[j])] == request) ++j;
      // Enough groups to keep every core busy, at most kGroupRows rows each.
      const size_t count = j - i;
      const size_t size = std::max<size_t>(1, std::min<size_t>(kGroupRows, (count + threads - 1) / threads));
      for (size_t k = i; k < j; k += size)
        groups.emplace_back(rows_.begin() + long(k), rows_.begin() + long(std::min(j, k + size)));
      i = j;
    }
    parallel_for(int64_t(groups.size()), [&](int64_t g) { fn(groups[size_t(g)]); });
  }

  std::vector<std::vector<float>> dense_rows(const Batch& batch, const Layer& layer, const std::vector<int>& group) {
    std::vector<std::vector<float>> dense(group.size());
    std::vector<ref::QueryRow> queries;
    std::vector<int64_t> lens;
    std::vector<float*> outs;
    for (size_t i = 0; i < group.size(); ++i) {
      const int r = group[i];
      dense[i].resize(size_t(batch.compress_len[size_t(r)]));
      queries.push_back(query_of(layer, r));
      lens.push_back(batch.compress_len[size_t(r)]);
      outs.push_back(dense[i].data());
    }
    try {
      ref::dense_scores_rows(queries.data(), int(group.size()), keys_of(batch, batch.row_request[size_t(group[0])]),
                             lens.data(), outs.data());
    } catch (const ref::ScoreOverflow&) {
      // Find the first offending row of the group for the message.
      for (int r : group)
        guarded(batch, layer, r, [&] {
          std::vector<float> one(static_cast<size_t>(batch.compress_len[size_t(r)]));
          ref::dense_scores_row(query_of(layer, r), keys_of(batch, batch.row_request[size_t(r)]),
                                batch.compress_len[size_t(r)], one.data());
        });
      throw;
    }
    return dense;
  }

  void publish_exact_row(const Batch& batch, const Layer& source, int r, LayerResult& lr, Results& out,
                         StageClock& scores, StageClock& topk, StageClock& blocks) {
    const int64_t L = batch.compress_len[size_t(r)];
    std::vector<double> exact(static_cast<size_t>(L));
    scores.time([&] {
      guarded(batch, source, r, [&] {
        ref::exact_scores_row(query_of(source, r), keys_of(batch, batch.row_request[size_t(r)]), L, exact.data());
      });
    });
    topk.time([&] {
      ref::write_positions(ref::source_topk(exact.data(), L, batch.topk), batch.topk, position_row(lr, batch, r));
    });
    blocks.time([&] {
      level_one_[size_t(r)] = ref::level_one(exact.data(), L);
      ref::write_blocks(level_one_[size_t(r)], out.blocks.data() + size_t(r) * kTopkBlocks);
    });
  }

  void select_row(const Batch& batch, const Layer& consumer, int r, const RunOptions& options, LayerResult& lr) {
    const ref::LevelOne& l1 = level_one_[size_t(r)];
    const ref::QueryRow q = query_of(consumer, r);
    const ref::KeyView keys = keys_of(batch, batch.row_request[size_t(r)]);
    const std::vector<int32_t> candidates = ref::candidate_positions(l1);
    const int64_t n = l1.valid_len;
    std::vector<int32_t> picks;
    if (path_ == PathKind::sparse) {
      std::vector<uint16_t> sparse(static_cast<size_t>(n));
      ref::sparse_scores_at(q, keys, candidates.data(), n, sparse.data());
      picks = ref::level_two_sparse(l1, sparse.data(), batch.topk);
      if (options.scores) lr.sparse_scores[size_t(r)] = std::move(sparse);
    } else if (path_ == PathKind::mask) {
      std::vector<float> dense(static_cast<size_t>(n));
      if (options.scores) {
        // The record holds all L dense scores of the row; the candidates' are among them.
        const int64_t L = batch.compress_len[size_t(r)];
        std::vector<float> row(static_cast<size_t>(L));
        ref::dense_scores_row(q, keys, L, row.data());
        for (int64_t c = 0; c < n; ++c) dense[size_t(c)] = row[size_t(candidates[size_t(c)])];
        lr.dense_scores[size_t(r)] = std::move(row);
      } else {
        ref::dense_scores_at(q, keys, candidates.data(), n, dense.data());
      }
      picks = ref::level_two_mask(l1, dense.data(), batch.topk);
    } else {
      std::vector<double> exact(static_cast<size_t>(n));
      ref::exact_scores_at(q, keys, candidates.data(), n, exact.data());
      picks = ref::level_two_exact(l1, exact.data(), batch.topk);
    }
    ref::write_positions(picks, batch.topk, position_row(lr, batch, r));
  }

  static constexpr size_t kGroupRows = 8;
  PathKind path_;
  std::vector<int> rows_;
  std::vector<ref::LevelOne> level_one_;
  bool have_blocks_ = false;
};

}  // namespace

ImplementationPtr make_reference(PathKind path) { return ImplementationPtr(new ReferenceImpl(path)); }

}  // namespace dsa
