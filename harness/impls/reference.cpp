#include "harness/impls/reference.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <exception>
#include <map>
#include <mutex>

#include "core/errors.hpp"
#include "core/parallel.hpp"
#include "core/random.hpp"
#include "reference/scores.hpp"
#include "harness/impls/reference_views.hpp"
#include "reference/selection.hpp"

namespace dsa {

namespace {

using Clock = std::chrono::steady_clock;

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
  double wall_ms() const { return double(ns.load()) / 1e6 / cpu_threads(); }
};

// ---- results shared between reference-sparse and reference-mask ----
// Both production paths compute the same source layer (dense scores, own top-k, level one) and
// the same plain layers. The first of them to run on a batch stores these per-layer results
// here, keyed by a hash of everything they depend on; the second copies them instead of
// recomputing (the dense pass is most of the reference's time).

template <class T>
uint64_t hash_vector(const std::vector<T>& v, uint64_t seed) { return hash_bytes(v.data(), v.size() * sizeof(T), seed); }

// Everything a layer's source/plain result depends on: the layer's data on the computed rows,
// the rows' lengths and requests, the page tables, the pool, the sizes.
uint64_t layer_content_hash(const Batch& batch, const Layer& layer, const std::vector<int>& rows, bool scores) {
  uint64_t h = hash_vector(batch.pool, uint64_t(batch.page_size) * 31 + uint64_t(batch.topk));
  h = hash_vector(batch.page_table, h + uint64_t(batch.table_width));
  h = hash_vector(batch.compress_len, h);
  h = hash_vector(batch.row_request, h);
  h = hash_vector(rows, h + (scores ? 1 : 0) + uint64_t(layer.id) * 1000003ull);
  for (int r : rows) {
    h = hash_bytes(layer.q_row(r), size_t(kHeads) * kPackedDim, h);
    h = hash_bytes(layer.scale_row(r), size_t(kHeads) * kScaleGroups, h);
    h = hash_bytes(layer.weight_row(r), sizeof(float) * kHeads, h);
  }
  return h;
}

// One layer's results on the computed rows only (the rest is padding anyway).
struct SharedLayer {
  uint64_t key = 0;
  std::vector<int32_t> blocks;               // source only: [rows, 2048]
  std::vector<ref::LevelOne> level_one;      // source only: per computed row
  std::vector<int32_t> positions;            // [rows, topk]
  std::vector<std::vector<float>> dense_scores;  // per computed row, when scores were asked for
};

SharedLayer pack_shared(uint64_t key, const Batch& batch, const std::vector<int>& rows, const Results* out,
                        const std::vector<ref::LevelOne>* level_one, const LayerResult& lr) {
  SharedLayer e;
  e.key = key;
  const size_t k = size_t(batch.topk);
  for (int r : rows) {
    if (out) {
      const auto row = out->blocks.begin() + long(size_t(r) * kTopkBlocks);
      e.blocks.insert(e.blocks.end(), row, row + kTopkBlocks);
      e.level_one.push_back((*level_one)[size_t(r)]);
    }
    const auto pos = lr.positions.begin() + long(size_t(r) * k);
    e.positions.insert(e.positions.end(), pos, pos + long(k));
    if (!lr.dense_scores.empty()) e.dense_scores.push_back(lr.dense_scores[size_t(r)]);
  }
  return e;
}

void unpack_shared(SharedLayer& e, const Batch& batch, const std::vector<int>& rows, Results* out,
                   std::vector<ref::LevelOne>* level_one, LayerResult& lr, bool scores) {
  const size_t k = size_t(batch.topk);
  for (size_t i = 0; i < rows.size(); ++i) {
    const size_t r = size_t(rows[i]);
    if (out) {
      std::copy_n(e.blocks.begin() + long(i * kTopkBlocks), kTopkBlocks, out->blocks.begin() + long(r * kTopkBlocks));
      (*level_one)[r] = std::move(e.level_one[i]);
    }
    std::copy_n(e.positions.begin() + long(i * k), k, lr.positions.begin() + long(r * k));
    if (scores) lr.dense_scores[r] = std::move(e.dense_scores[i]);
  }
}

class SharedResults {
 public:
  static SharedResults& instance() {
    static SharedResults shared;
    return shared;
  }
  bool find(uint64_t key, SharedLayer* out) {
    std::lock_guard<std::mutex> lock(mutex_);
    for (const SharedLayer& e : entries_)
      if (e.key == key) { *out = e; return true; }
    return false;
  }
  void store(SharedLayer entry) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (entries_.size() >= kMaxEntries) entries_.erase(entries_.begin());
    entries_.push_back(std::move(entry));
  }

 private:
  static constexpr size_t kMaxEntries = 8;
  std::mutex mutex_;
  std::vector<SharedLayer> entries_;
};

// Scores make entries large: share only when they stay moderate.
bool shareable(const Batch& batch, const std::vector<int>& rows, bool scores) {
  if (!scores) return true;
  int64_t cells = 0;
  for (int r : rows) cells += batch.compress_len[size_t(r)];
  return cells <= (int64_t(1) << 26);
}

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
      std::sort(rows_.begin(), rows_.end());  // each row once: workers write per-row outputs
      rows_.erase(std::unique(rows_.begin(), rows_.end()), rows_.end());
    }
    level_one_.assign(size_t(batch.rows()), ref::LevelOne());
    have_blocks_ = false;
    stash_.clear();
    out.notes = "CPU reference, " + std::string(path_name(path_)) + " path, " +
                std::to_string(cpu_threads()) + " threads";
  }

  void publish(const Batch& batch, const Layer& source, const RunOptions& options, Results& out) override {
    LayerResult& lr = start_layer(batch, source, options, out);
    out.blocks.assign(size_t(batch.rows()) * kTopkBlocks, kBlockPad);
    const bool share = path_ != PathKind::exact && shareable(batch, rows_, options.scores);
    const auto shared_start = Clock::now();
    const uint64_t key = share ? layer_content_hash(batch, source, rows_, options.scores) : 0;
    SharedLayer hit;
    if (share && SharedResults::instance().find(key, &hit)) {
      unpack_shared(hit, batch, rows_, &out, &level_one_, lr, options.scores);
      have_blocks_ = true;
      out.timings.push_back(host_timing(name() + "/publish_shared", source, ms_since(shared_start)));
      note_shared(out);
      return;
    }
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
    if (share) SharedResults::instance().store(pack_shared(key, batch, rows_, &out, &level_one_, lr));
    out.timings.push_back(host_timing(name() + (path_ == PathKind::exact ? "/exact_scores" : "/dense_scores"), source,
                                      scores.wall_ms()));
    out.timings.push_back(host_timing(name() + "/source_topk", source, topk.wall_ms()));
    out.timings.push_back(host_timing(name() + "/level_one", source, blocks.wall_ms()));
  }

  void select(const Batch& batch, const Layer& consumer, const RunOptions& options, Results& out) override {
    if (!have_blocks_)
      throw InputError(batch.path, dataset_of(consumer), "a consumer layer needs a source layer in the same file");
    // All consumers of a row read the same candidates: the first select() scores every consumer
    // in one pass over the candidate keys, the later ones take their stashed results.
    if (!stash_.count(consumer.id)) select_all(batch, options, out);
    LayerResult& lr = out.layers[consumer.id];
    lr = std::move(stash_[consumer.id]);
    stash_.erase(consumer.id);
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
    const bool share = path_ != PathKind::exact && shareable(batch, rows_, options.scores);
    const uint64_t key = share ? layer_content_hash(batch, layer, rows_, options.scores) : 0;
    SharedLayer hit;
    if (share && SharedResults::instance().find(key, &hit)) {
      unpack_shared(hit, batch, rows_, nullptr, nullptr, lr, options.scores);
      out.timings.push_back(host_timing(name() + "/plain_shared", layer, ms_since(start)));
      note_shared(out);
      return;
    }
    for_row_groups(batch, [&](const std::vector<int>& group) {
      if (path_ == PathKind::exact) {
        for (int r : group) {
          const int64_t L = batch.compress_len[size_t(r)];
          std::vector<double> exact(static_cast<size_t>(L));
          guarded(batch, layer, r, [&] {
            ref::exact_scores_row(query_of(layer, r), keys_of(batch, r), L, exact.data());
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
    if (share) SharedResults::instance().store(pack_shared(key, batch, rows_, nullptr, nullptr, lr));
    out.timings.push_back(host_timing(name() + "/plain_topk", layer, ms_since(start)));
  }

 private:
  static void note_shared(Results& out) {
    const std::string note = "; source/plain layers shared with the other production reference run earlier";
    if (out.notes.find(note) == std::string::npos) out.notes += note;
  }

  LayerResult& start_layer(const Batch& batch, const Layer& layer, const RunOptions& options, Results& out) {
    LayerResult& lr = out.layers[layer.id];
    init_layer(batch, layer, options, lr);
    return lr;
  }

  void init_layer(const Batch& batch, const Layer& layer, const RunOptions& options, LayerResult& lr) {
    lr.positions.assign(size_t(batch.rows()) * size_t(batch.topk), kPositionPad);
    const bool dense = options.scores && path_ != PathKind::exact;
    if (dense) lr.dense_scores.assign(size_t(batch.rows()), {});
    if (dense && path_ == PathKind::sparse && layer.role == Role::consumer) {
      lr.dense_scores.clear();
      lr.sparse_scores.assign(size_t(batch.rows()), {});
    }
  }

  static int32_t* position_row(LayerResult& lr, const Batch& batch, int r) {
    return lr.positions.data() + size_t(r) * size_t(batch.topk);
  }

  // Splits the computed rows into groups of rows of one request (they share the keys, so one
  // pass over the keys serves the group) and runs fn(group) for each group in parallel.
  template <class Fn>
  void for_row_groups(const Batch& batch, Fn fn) {
    const int threads = cpu_threads();
    std::vector<std::vector<int>> groups;
    size_t i = 0;
    while (i < rows_.size()) {
      const int request = batch.row_request[size_t(rows_[i])];
      size_t j = i;
      while (j < rows_.size() && batch.row_request[size_t(rows_[j])] == request) ++j;
      // At most kGroupRows rows a group, and a multiple of the core count of equal groups so
      // that every core gets the same work.
      const size_t count = j - i;
      size_t groups_here = (count + kGroupRows - 1) / kGroupRows;
      groups_here = (groups_here + size_t(threads) - 1) / size_t(threads) * size_t(threads);
      const size_t size = std::max<size_t>(1, (count + groups_here - 1) / groups_here);
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
      ref::dense_scores_rows(queries.data(), int(group.size()), keys_of(batch, group[0]),
                             lens.data(), outs.data());
    } catch (const ref::ScoreOverflow&) {
      // Find the first offending row of the group for the message.
      for (int r : group)
        guarded(batch, layer, r, [&] {
          std::vector<float> one(static_cast<size_t>(batch.compress_len[size_t(r)]));
          ref::dense_scores_row(query_of(layer, r), keys_of(batch, r),
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
        ref::exact_scores_row(query_of(source, r), keys_of(batch, r), L, exact.data());
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

  void select_all(const Batch& batch, const RunOptions& options, Results& out) {
    const std::vector<const Layer*> consumers = batch.layers_with(Role::consumer);
    for (const Layer* c : consumers) init_layer(batch, *c, options, stash_[c->id]);
    const auto start = Clock::now();
    parallel_for(int64_t(rows_.size()), [&](int64_t i) {
      const int r = rows_[size_t(i)];
      try {
        select_row(batch, consumers, r, options);
      } catch (const ref::ScoreOverflow&) {
        // Name the consumer whose score overflowed: score each alone.
        for (const Layer* c : consumers)
          guarded(batch, *c, r, [&] { select_row(batch, {c}, r, options); });
        throw;
      }
    });
    KernelTiming t = host_timing(name() + "/level_two", *consumers.front(), ms_since(start));
    t.layer = "all";  // every consumer in one pass
    out.timings.push_back(t);
  }

  void select_row(const Batch& batch, const std::vector<const Layer*>& consumers, int r, const RunOptions& options) {
    const ref::LevelOne& l1 = level_one_[size_t(r)];
    const ref::KeyView keys = keys_of(batch, r);
    const std::vector<int32_t> candidates = ref::candidate_positions(l1);
    const int64_t n = l1.valid_len, L = batch.compress_len[size_t(r)];
    const int nc = int(consumers.size());
    std::vector<ref::QueryRow> queries;
    for (const Layer* c : consumers) queries.push_back(query_of(*c, r));
    std::vector<std::vector<int32_t>> picks(static_cast<size_t>(nc));
    if (path_ == PathKind::sparse) {
      std::vector<std::vector<uint16_t>> sparse(size_t(nc), std::vector<uint16_t>(static_cast<size_t>(n)));
      std::vector<uint16_t*> outs;
      for (auto& v : sparse) outs.push_back(v.data());
      ref::sparse_scores_at_multi(queries.data(), nc, keys, candidates.data(), n, outs.data());
      for (int i = 0; i < nc; ++i) {
        picks[size_t(i)] = ref::level_two_sparse(l1, sparse[size_t(i)].data(), batch.topk);
        if (options.scores) stash_.at(consumers[size_t(i)]->id).sparse_scores[size_t(r)] = std::move(sparse[size_t(i)]);
      }
    } else if (path_ == PathKind::mask) {
      std::vector<std::vector<float>> dense(size_t(nc), std::vector<float>(static_cast<size_t>(n)));
      if (options.scores) {
        // The record holds all L dense scores of the row; the candidates' are among them.
        std::vector<std::vector<float>> rows(size_t(nc), std::vector<float>(static_cast<size_t>(L)));
        std::vector<float*> outs;
        for (auto& v : rows) outs.push_back(v.data());
        const std::vector<int64_t> lens(size_t(nc), L);
        ref::dense_scores_rows(queries.data(), nc, keys, lens.data(), outs.data());
        for (int i = 0; i < nc; ++i) {
          for (int64_t c = 0; c < n; ++c) dense[size_t(i)][size_t(c)] = rows[size_t(i)][size_t(candidates[size_t(c)])];
          stash_.at(consumers[size_t(i)]->id).dense_scores[size_t(r)] = std::move(rows[size_t(i)]);
        }
      } else {
        std::vector<float*> outs;
        for (auto& v : dense) outs.push_back(v.data());
        ref::dense_scores_at_multi(queries.data(), nc, keys, candidates.data(), n, outs.data());
      }
      for (int i = 0; i < nc; ++i) picks[size_t(i)] = ref::level_two_mask(l1, dense[size_t(i)].data(), batch.topk);
    } else {
      std::vector<std::vector<double>> exact(size_t(nc), std::vector<double>(static_cast<size_t>(n)));
      std::vector<double*> outs;
      for (auto& v : exact) outs.push_back(v.data());
      ref::exact_scores_at_multi(queries.data(), nc, keys, candidates.data(), n, outs.data());
      for (int i = 0; i < nc; ++i) picks[size_t(i)] = ref::level_two_exact(l1, exact[size_t(i)].data(), batch.topk);
    }
    for (int i = 0; i < nc; ++i)
      ref::write_positions(picks[size_t(i)], batch.topk, position_row(stash_.at(consumers[size_t(i)]->id), batch, r));
  }

  static constexpr size_t kGroupRows = 8;
  PathKind path_;
  std::vector<int> rows_;
  std::vector<ref::LevelOne> level_one_;
  bool have_blocks_ = false;
  std::map<int, LayerResult> stash_;  // consumer results computed ahead of their select() call
};

}  // namespace

ImplementationPtr make_reference(PathKind path) { return ImplementationPtr(new ReferenceImpl(path)); }

}  // namespace dsa
