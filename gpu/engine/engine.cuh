#pragma once
// The two CUDA implementations share one engine: the source publishes (dense logits, its own
// top-k, block amax, block top-2048 with the ascending write), each consumer selects on the
// published table and on the tail table, plain layers take their own top-k. The mode decides
// the consumers' path: paged sparse bf16 logits + small top-k (gpu-sparse) or dense fp32 logits
// ranked inside the published blocks (gpu-mask).
#include <memory>
#include <string>
#include <vector>

#include "gpu/common/device_buffer.cuh"
#include "gpu/common/timing.cuh"
#include "core/implementation.hpp"
#include "core/path.hpp"

namespace dsa::gpu {

// Why this process cannot run the kernels (no device, no image for its architecture), or "".
std::string unsupported_reason();

class GpuEngine : public Implementation {
 public:
  explicit GpuEngine(PathKind path) : path_(path) {}
  std::string name() const override { return path_ == PathKind::sparse ? "gpu-sparse" : "gpu-mask"; }
  std::string device() const override;
  Support supported() const override;

 protected:
  void begin(const Batch& batch, const RunOptions& options, Results& out) override;
  void publish(const Batch& batch, const Layer& source, const RunOptions& options, Results& out) override;
  void select(const Batch& batch, const Layer& consumer, const RunOptions& options, Results& out) override;
  void plain(const Batch& batch, const Layer& layer, const RunOptions& options, Results& out) override;
  void end(const Batch& batch, const RunOptions& options, Results& out) override;

 private:
  void upload_keys(const Batch& batch);
  void upload_key_exponents(const Batch& batch);
  void build_dense_tiles();
  void prep_query(const Layer& layer, bool dense);
  void dense_logits(const Layer& layer);
  void own_topk(const Batch& batch, const Layer& layer, Results& out);
  int upload_route_order(const std::vector<int32_t>& rows_host);
  void select_sparse(const Batch& batch, const Layer& layer, const RunOptions& options, Results& out);
  void select_mask(const Batch& batch, const Layer& layer, const RunOptions& options, Results& out);
  void copy_dense_scores(const Batch& batch, const Layer& layer, Results& out);
  void store_positions(const DeviceBuffer<int32_t>& picks, const std::vector<int32_t>& rows_out, int k,
                       std::vector<int32_t>& dst);
  void time(const std::string& kernel, const Layer* layer, double flops, double bytes,
            const std::function<void()>& launch);
  std::string kernel_name(const std::string& kernel) const { return name() + "/" + kernel; }

  PathKind path_;
  bool timing_ = false;
  std::unique_ptr<KernelTimer> timer_;
  std::vector<KernelTiming>* timings_ = nullptr;

  // Selected rows (ascending global rows) and their per-row data.
  std::vector<int32_t> sel_;
  std::vector<int32_t> sel_len_host_;
  int max_len_ = 0;
  int64_t sum_len_ = 0;
  int64_t ld_dense_ = 8, ld_keys_ = 4;
  DeviceBuffer<int32_t> sel_rows_, sel_len_, sel_req_, identity_;
  DeviceBuffer<int64_t> sel_kcol_;
  std::vector<int32_t> sel_req_host_;
  // Dense logits tiles (build_dense_tiles): the wgmma route's, [nwtiles][4], and the portable
  // kernel's over the list tile_rows_.
  bool use_wgmma_ = false;
  DeviceBuffer<int32_t> wtile_rows_, tile_rows_, tile_first_, tile_count_;
  int nwtiles_ = 0, ntiles_ = 0;

  // Keys: the pool, page tables and the flattened int8 operands.
  DeviceBuffer<uint8_t> pool_;
  DeviceBuffer<int32_t> table_;
  int64_t ncols_ = 0;
  DeviceBuffer<int8_t> ks_, kr_;
  DeviceBuffer<int8_t> kfrag_;  // gpu-sparse: ks_ re-laid as per-lane mma fragments
  DeviceBuffer<uint32_t> kexp_;
  DeviceBuffer<float> kscale_;

  // The current layer's query operands.
  DeviceBuffer<uint8_t> q_, q_scale_;
  DeviceBuffer<int8_t> qs_, qr_, qsplit_;
  DeviceBuffer<int2> qmul_;
  DeviceBuffer<int32_t> row_split_;
  DeviceBuffer<int8_t> qw_;  // the wgmma form (gpu/prep)
  DeviceBuffer<int32_t> qw_mul_, qw_shift_, row_wgmma_;
  DeviceBuffer<float> qw_weight_;
  DeviceBuffer<int2> req_fexp_;
  std::vector<int32_t> row_wgmma_host_;
  std::vector<int32_t> row_split_host_;
  DeviceBuffer<int32_t> route_order_;  // gpu-sparse: table rows by route (upload_route_order)
  DeviceBuffer<uint32_t> qexp_;
  DeviceBuffer<float> qscale_, weights_;
  DeviceBuffer<int32_t> row_fast_;

  // Outputs and the published table.
  DeviceBuffer<float> dense_, keys_;
  DeviceBuffer<int32_t> picks_, blocks_, valid_len_;
  std::vector<int32_t> valid_len_host_;
  int64_t sum_valid_ = 0;
  DeviceBuffer<uint16_t> sparse_;
  bool published_ = false;
  DeviceBuffer<int32_t> topk_scratch_;
  std::string topk_notes_, dense_notes_;

  // Tail table: selected rows that are tail rows.
  std::vector<int32_t> tail_sel_;     // selected-row index of each
  std::vector<int32_t> tail_index_;   // index into tail_positions
  DeviceBuffer<int32_t> tail_rows_, tail_blocks_, tail_valid_, tail_picks_;
  DeviceBuffer<uint16_t> tail_sparse_;
};

}  // namespace dsa::gpu
