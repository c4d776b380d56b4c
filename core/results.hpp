#pragma once
// What one implementation produced for one batch: the same fields as the recorded-outputs
// group of docs/batch-format.md, so every pair of result sets is compared by one code path.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace dsa {

// One kernel's timing, measured with CUDA events (or a host clock for CPU stages).
struct KernelTiming {
  std::string kernel;     // the name CLI filters take, e.g. "gpu-sparse/sparse_logits"; "NAME.part" is a
                          // share of NAME (e.g. dense_logits.wgmma), never added to totals
  std::string layer;      // layer id or "all"
  int calls = 0;          // launches per run of the implementation
  int samples = 0;
  double median_ms = 0, min_ms = 0, max_ms = 0;
  double flops = 0;       // useful work of one sample (0 when not meaningful)
  double bytes = 0;       // fewest bytes one sample must move
};

// One protocol step of a run (begin, a layer's publish/select/plain, end): its wall time on the
// host (the GPU engine synchronises, so device time is inside) and the kernels it launched.
struct StepRecord {
  std::string step;      // "begin", "end" or the layer id
  double wall_ms = 0;
  int64_t launches = 0;
};

struct LayerResult {
  std::vector<int32_t> positions;       // [R, topk] ascending, -1 padding; empty when not run
  std::vector<int32_t> tail_positions;  // [sum(tail_rows), topk]; consumers with tails only
  // Scores, recorded only on request; per global row, empty for rows without scores.
  // dense_scores[r] has L entries (column j = position j); sparse_scores[r] has valid_len
  // entries (bf16 bits) in candidate-column order.
  std::vector<std::vector<float>> dense_scores;
  std::vector<std::vector<uint16_t>> sparse_scores;
};

struct Results {
  std::string name;            // registry name (group name under /outputs)
  std::string implementation;  // attribute `implementation`
  std::string device;          // attribute `device`
  std::string notes;           // attribute `notes`
  std::string harness;         // attribute `harness` (optional): the dsa-harness version and commit that recorded it
  std::string recorded_at;     // attribute `recorded_at` (optional): when, UTC, ISO 8601
  std::vector<uint8_t> rows_done;        // [R]
  std::vector<int32_t> blocks;           // [R, 2048] or empty
  std::map<int, LayerResult> layers;     // by layer id
  std::vector<KernelTiming> timings;     // not stored in HDF5; feeds the reports
  int64_t peak_device_bytes = -1;        // -1: not measured (CPU implementations)
  std::vector<StepRecord> steps;         // in protocol order; not stored in HDF5
};

}  // namespace dsa
