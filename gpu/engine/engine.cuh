#pragma once
// The two CUDA implementations share one engine: the source publishes (dense logits, its own
// top-k, block amax, block top-2048 with the ascending write), each consumer selects on the
// published table and on the tail table, plain layers take their own top-k. The mode decides
// the consumers' path: paged sparse bf16 logits + small top-k (gpu-sparse) or dense fp32 logits
// ranked inside the published blocks (gpu-mask). On gpu-sparse the source runs a chunk of rows
// at a time (publish_chunked), so its [rows x context] fp32 scores never exist whole; a batch of
// few rows (a decode step) selects at the source in one launch (publish_once), so that a
// captured step runs three kernels a layer.
//
// Steps (issue 12): a step is one run over a batch. The engine's device buffers form a workspace
// sized from the batch (rows, lengths, layers); with keep_workspace a second step of the same
// shape reuses it and allocates nothing. Every launch of a step goes to one stream (stream_), the
// results are copied to the host at the end of the step (end()), and capture() records a step
// into a CUDA graph that replay() launches.
#include <cuda_runtime.h>

#include <array>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "gpu/common/device_buffer.cuh"
#include "gpu/common/timing.cuh"
#include "gpu/dense_logits/dense_wgmma.cuh"
#include "core/implementation.hpp"
#include "core/path.hpp"

namespace dsa::gpu {

// Why this process cannot run the kernels (no device, no image for its architecture), or "".
std::string unsupported_reason();

class GpuEngine : public Implementation {
 public:
  explicit GpuEngine(PathKind path) : path_(path) {}
  ~GpuEngine() override;
  std::string name() const override { return path_ == PathKind::sparse ? "gpu-sparse" : "gpu-mask"; }
  std::string device() const override;
  Support supported() const override;

  // Keep the workspace after a run (default: the large buffers are freed at the end of a run, so
  // the next implementation of a replay has the memory).
  void set_keep_workspace(bool keep) { keep_workspace_ = keep; }
  // Poison every output before its kernel and count unwritten slots after it (default on). Each
  // check synchronises and allocates; off, a step is its kernels and copies alone.
  void set_checks(bool on) { checks_ = on; }

  // Records one step of `batch` into a CUDA graph. A plain run() of the same batch on this engine
  // must come first: it sizes the workspace and fixes the step's plan (the dense kernels' row
  // tiles and the sparse route order, built on the host from that run's query prep). Returns the
  // run's record: its steps count the launches captured per layer; it holds no outputs.
  // Not with options.timing or options.scores.
  Results capture(const Batch& batch, const RunOptions& options);
  // A plain run (the plan), then capture(): the captured step's launches per protocol step. Keeps
  // the workspace from then on.
  std::vector<StepRecord> captured_steps(const Batch& batch, const RunOptions& options) override;
  // Uploads `batch`'s inputs into the workspace, launches the captured graph and returns the
  // step's outputs. `batch` must have the captured batch's shape. With other values than the
  // captured batch's, the plan may no longer hold (a row the plan puts on the split or wgmma route
  // that its query prep no longer admits): replay() then throws std::runtime_error, as its outputs
  // would be wrong; a plain run and a new capture re-plan.
  Results replay(const Batch& batch, const RunOptions& options);

 protected:
  void begin(const Batch& batch, const RunOptions& options, Results& out) override;
  void publish(const Batch& batch, const Layer& source, const RunOptions& options, Results& out) override;
  void select(const Batch& batch, const Layer& consumer, const RunOptions& options, Results& out) override;
  void plain(const Batch& batch, const Layer& layer, const RunOptions& options, Results& out) override;
  void end(const Batch& batch, const RunOptions& options, Results& out) override;

 private:
  // One layer's inputs, plan and outputs, at fixed addresses for the whole workspace's life.
  struct LayerSlot {
    DeviceBuffer<uint8_t> q, q_scale;
    DeviceBuffer<float> weights;  // [nsel][32]
    // The dense kernels' row tiles (build_dense_tiles): the wgmma route's, [nwtiles][4], and the
    // portable kernel's over the list tile_rows.
    DeviceBuffer<int32_t> wtile_rows, tile_rows, tile_first, tile_count;
    int nwtiles = 0, ntiles = 0;
    // No tile spans two row chunks (chunk_rows_): chunk c's tiles are [wtile_chunk[c],
    // wtile_chunk[c + 1]) and [tile_chunk[c], tile_chunk[c + 1]).
    std::vector<int32_t> wtile_chunk, tile_chunk;
    // Chunk c's rows on the portable kernel: tile_rows[rest_chunk[c], rest_chunk[c + 1]).
    std::vector<int32_t> rest_chunk;
    // gpu-sparse consumers: table rows by route (upload_route_order), n_split on the split route.
    DeviceBuffer<int32_t> route_order;
    int n_split = 0;
    // The routes the layer's query prep admits each row to: row_split [nsel] (the sparse split
    // route), row_wgmma [nsel] (the dense wgmma route); plan_split and plan_wgmma are the copies the
    // plan above was built from (empty where the layer has no such plan). replay() checks them.
    DeviceBuffer<int32_t> row_split, row_wgmma;
    std::vector<int32_t> plan_split, plan_wgmma;
    // [table rows][k]: own top-k (source, plain), or the consumer's picks on the full table then
    // on the tail table.
    DeviceBuffer<int32_t> picks;
  };

  std::vector<int64_t> shape_of(const Batch& batch, const std::vector<int32_t>& sel) const;
  void set_up(const Batch& batch, const RunOptions& options);
  void upload_inputs(const Batch& batch);
  void prepare_keys();
  void build_dense_tiles(LayerSlot& slot);
  void prep_query(const Layer& layer, bool dense);
  // Selected rows [first, first + count): row chunk `index` (build_dense_tiles).
  struct Chunk {
    int first, count, index;
  };
  Chunk chunk(int index) const;
  int chunks() const;
  // keys: the wgmma kernel also writes level one's block keys of its rows (keys_).
  void dense_logits(const Layer& layer, bool keys = false);
  void launch_dense(const Layer& layer, const Chunk& c, bool wgmma, bool portable, bool keys = false);
  DenseWgmmaArgs wgmma_args(const Layer& layer, const Chunk& c, bool keys) const;
  // The block keys of chunk c's rows that the dense wgmma kernel does not cover (keys_).
  void portable_amax(const Layer& layer, const Chunk& c);
  double amax_bytes(const Layer& layer, int64_t sum_blocks) const;
  void check_keys(const Chunk& c);
  void check_published(const LayerSlot& source, int k);
  void publish_chunked(const Batch& batch, const Layer& source);
  void publish_once(const Batch& batch, const Layer& source, const RunOptions& options, Results& out,
                    int64_t sum_blocks);
  // Where level one reports its k-th block keys from row `first` on: only at topk 2048, where the
  // own top-k's check reads them (launch_own_topk); below it, nowhere (no kth pass).
  uint32_t* level_kth(const Batch& batch, int first = 0) {
    return batch.topk >= kTopkBlocks ? level_kth_.get() + first : nullptr;
  }
  // Where level one writes the published keys of one launch's rows for the own top-k's narrowing
  // (launch_own_topk), or null where it does not narrow (set_up: topk 2048, rows past level one's
  // registers, DSA_OWN_NARROW=0).
  uint32_t* pick_keys() { return narrow_own_ ? pick_keys_.get() : nullptr; }
  template <class Amax, class BlockTopk, class Own, class Run>
  void time_chunked(const Layer& source, int n, int k, const Amax& amax, const BlockTopk& block_topk,
                    const Own& own, const Run& run);
  void own_topk(const Batch& batch, const Layer& layer);
  void upload_route_order(LayerSlot& slot);
  void check_plan(const Batch& batch);
  void select_sparse(const Batch& batch, const Layer& layer, const RunOptions& options, Results& out);
  void select_mask(const Batch& batch, const Layer& layer, const RunOptions& options, Results& out);
  void copy_dense_scores(const Batch& batch, const Layer& layer, Results& out);
  void collect(const Batch& batch, Results& out);
  void store_positions(const DeviceBuffer<int32_t>& picks, size_t first_row, const std::vector<int32_t>& rows_out,
                       int k, std::vector<int32_t>& dst);
  void check_written(int64_t unwritten, const std::string& kernel);
  void poison(void* data, int byte, size_t bytes);
  void time(const std::string& kernel, const Layer* layer, double flops, double bytes,
            const std::function<void()>& launch);
  std::string kernel_name(const std::string& kernel) const { return name() + "/" + kernel; }
  void drop_graph();

  PathKind path_;
  bool timing_ = false;
  std::unique_ptr<KernelTimer> timer_;
  std::vector<KernelTiming>* timings_ = nullptr;
  bool keep_workspace_ = false, checks_ = true;

  // The step's stream. The launchers launch on the default stream and dsa_gpu is compiled with
  // --default-stream=per-thread (CMakeLists.txt), so that is this thread's own stream: one
  // ordinary stream that a graph can capture (the legacy stream cannot be captured).
  cudaStream_t stream_ = cudaStreamPerThread;
  bool capturing_ = false;
  cudaGraphExec_t graph_ = nullptr;
  std::vector<int64_t> shape_;  // the workspace's batch shape (shape_of); empty: none yet
  bool planned_ = false;         // a plain run filled the plan for shape_

  // Selected rows (ascending global rows) and their per-row data.
  std::vector<int32_t> sel_;
  std::vector<int32_t> sel_len_host_;
  int max_len_ = 0;
  int64_t sum_len_ = 0;
  int64_t ld_dense_ = 8, ld_keys_ = 4;
  // The sparse path's source layer runs in chunks of chunk_rows_ selected rows (publish_chunked)
  // when chunked_: dense_ and keys_ then hold one chunk's rows, not every selected row's.
  int chunk_rows_ = 1;
  bool chunked_ = false;
  // Few rows (a decode step): the source's wide keys, level one, the tail copy and the own top-k
  // run in one launch (publish_once, gpu/topk/source_select.cuh).
  bool select_once_ = false;
  DeviceBuffer<int32_t> sel_rows_, sel_len_, sel_req_;
  DeviceBuffer<int64_t> sel_kcol_;
  std::vector<int32_t> sel_req_host_;
  bool use_wgmma_ = false;
  bool uniform_plan_ = true;  // one multiplier a row on the dense wgmma route (DSA_DENSE_PER_HEAD=1: off)

  // Keys: the pool, page tables and the flattened int8 operands.
  DeviceBuffer<uint8_t> pool_;
  DeviceBuffer<int32_t> table_, req_len_;
  DeviceBuffer<int64_t> req_start_;
  int64_t ncols_ = 0;
  int max_lc_ = 0, nreq_ = 0, page_size_ = 0, table_width_ = 0;
  DeviceBuffer<int8_t> ks_, kr_;
  // ks_ / kscale_ re-laid per block of 8 positions (launch_key_blocks), for gpu-sparse's
  // consumer layers and the dense wgmma kernel; req_blk_ [nreq] the block of each request's
  // position 0.
  bool key_records() const { return path_ == PathKind::sparse || use_wgmma_; }
  DeviceBuffer<int8_t> kbfrag_, kdfrag_;  // the mma.sync kernels' records, the wgmma kernels'
  // Each record layout and whether this path reads it, in KeyRecordOut's order: the mma.sync
  // records (gpu-sparse), the pair order (the dense and the sparse wgmma kernel).
  std::array<std::pair<DeviceBuffer<int8_t>*, bool>, 2> record_layouts() {
    return {{{&kbfrag_, path_ == PathKind::sparse},
             {&kdfrag_, use_wgmma_ || (path_ == PathKind::sparse && use_sparse_wgmma_)}}};
  }
  DeviceBuffer<float> kbscale_;
  DeviceBuffer<int64_t> req_blk_;
  bool use_sparse_wgmma_ = false;
  int64_t sparse_rows_ = 0, sparse_wgmma_rows_ = 0;  // table rows of this step's consumer layers (notes)
  DeviceBuffer<uint32_t> kexp_;
  DeviceBuffer<float> kscale_;
  DeviceBuffer<int2> req_fexp_;
  DeviceBuffer<int32_t> wide_count_, wide_list_;  // the dense wgmma route's wide keys (wide_keys.cuh)

  // The current layer's query operands (one layer at a time, in stream order).
  DeviceBuffer<int8_t> qs_, qr_, qsplit_;
  DeviceBuffer<int2> qmul_;
  DeviceBuffer<int8_t> qdouble_;  // the split route's doubled-group heads (launch_query_prep)
  // Whether a row of the given row_split takes the split rows' kernel: rows with a doubled group
  // only when that kernel is the wgmma one.
  bool takes_split(int32_t row_split) const { return row_split == 1 || (use_sparse_wgmma_ && row_split >= 2); }
  DeviceBuffer<int8_t> qw_;  // the wgmma form (gpu/prep)
  DeviceBuffer<int32_t> qw_mul_, qw_shift_;
  DeviceBuffer<float> qw_weight_;
  DeviceBuffer<uint32_t> qexp_;
  DeviceBuffer<float> qscale_;
  DeviceBuffer<int32_t> row_fast_;
  std::map<int, LayerSlot> slots_;  // by layer id

  // The tables. Table rows 0..nsel-1 are the selected rows (the published table); rows nsel.. are
  // the tail table, the selected rows that are tail rows, whose published rows the source copies
  // in (gather_rows, or publish_once's selection itself). One launch serves both tables.
  std::vector<int32_t> tail_sel_;     // selected-row index of each tail-table row
  std::vector<int32_t> tail_index_;   // index into tail_positions
  std::vector<int32_t> table_rows_host_, valid_len_host_;
  int64_t sum_valid_ = 0, sum_valid_table_ = 0;  // over the selected rows, over both tables
  DeviceBuffer<int32_t> table_rows_, tail_rows_, blocks_, valid_len_;
  DeviceBuffer<int32_t> tail_of_;  // [nsel] each selected row's tail-table row, -1 for none
  DeviceBuffer<float> dense_, keys_;
  DeviceBuffer<uint16_t> sparse_;
  DeviceBuffer<int32_t> topk_list_;  // launch_own_topk's row list
  DeviceBuffer<uint32_t> level_kth_;  // level one's 2048-th block key of each selected row
  DeviceBuffer<uint32_t> pick_keys_;  // [rows of one level-one launch][2048] (pick_keys())
  bool narrow_own_ = false;
  // The source's dense kernel leaves the scores of blocks no own top-k reads unstored
  // (dense_wgmma.cuh, "Stores skipped"): its counts and bounds, [rows of dense_][kSkipWords].
  bool skip_stores_ = false;
  int skip_need_ = 0;
  int64_t skip_below_ = 0, skip_blocks_ = 0;  // check_keys' count of blocks below their bound, of all
  DeviceBuffer<uint32_t> skip_;
  bool published_ = false, own_via_blocks_ = false;
  std::string dense_notes_;
};

}  // namespace dsa::gpu
