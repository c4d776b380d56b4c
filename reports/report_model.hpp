#pragma once
// The in-memory report of one replay (or of merged shards): environment, inputs, implementation
// runs with their kernel timings, and cases with their comparison records and verdicts.
// report.json is this model serialised (the contract, versioned by kSchemaVersion); every other
// printer (Markdown, JUnit, HTML) and the gate read only this model.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/records.hpp"
#include "core/rules.hpp"

namespace dsa {

constexpr int kReportSchemaVersion = 1;

// Device ceilings measured on the H200 (docs/performance.md), for the share of ceiling.
constexpr double kCeilingBytesPerSecond = 4.25e12;  // HBM copy, read + write counted
constexpr double kCeilingFlopsPerSecond = 1282e12;  // dense fp8 tensor rate (cuBLAS)

struct EnvironmentInfo {
  std::string gpu = "none";  // GPU model ("none" without a CUDA device)
  std::string gpu_detail;    // one line from gpu::describe_device()
  std::string driver, cuda, sm_clock;  // from nvidia-smi when present, else empty
  std::string host, os;
  std::string version = DSA_VERSION;
  std::string commit;
  std::string started_at;    // UTC timestamp (volatile)
  std::vector<int> devices;  // --devices as given (empty: the default device)
};

struct InputInfo {
  std::string path;
  std::string batch_id;  // content ID
  std::string origin;
  int requests = 0, rows = 0, topk = 0, max_len = 0, compress_ratio = 1;
  std::vector<int> layers;
};

// One kernel of one implementation on one batch, with what it achieved.
struct KernelFigure {
  std::string kernel, layer;
  int calls = 0, samples = 0;
  double median_ms = 0, min_ms = 0, max_ms = 0;
  double flops = 0, bytes = 0;
  double tflops = 0, gbps = 0;   // achieved at the median
  double floor_ms = 0;           // max(flops / fp8 ceiling, bytes / HBM ceiling)
  double ceiling_share = 0;      // floor_ms / median_ms: the share of the device ceiling reached
};

// One implementation run on one batch (the unit of work of replay).
struct ImplRun {
  std::string batch_id, impl, device;
  Disposition status = Disposition::passed;  // passed (ran), not_supported, not_run
  std::string reason;                        // why it did not run; recorded:NAME: where its outputs come from
  bool named = false;                        // named with --impl
  int repeats = 1;
  int deterministic = -1;                    // -1 not measured, 0 no, 1 bitwise identical
  int rows = 0;                              // rows computed
  double wall_s = 0;                         // volatile
  long long peak_device_bytes = -1;
  std::vector<KernelFigure> kernels;
};

// One comparison of a case (one rule against one reference, on the case's layer).
struct CaseComparison {
  Rule rule = Rule::own_path;
  std::string against;
  std::vector<LayerComparison> parts;  // the layer, and its tail table when there is one
};

// A position in the worst-rows drill-down, with its reference fp32 dense score and its margin
// against the k-th reference score: (score - kth) / |kth|.
struct ScoredPosition {
  int position = -1;
  double score = 0, margin = 0;
};

// One of the worst rows of a case (lowest agreement, then lowest floor margin).
struct WorstRow {
  int row = -1, length = 0;
  double agreement = 1, floor_margin = 0;
  double kth_score = 0;                    // the reference's k-th dense score of the row
  std::vector<ScoredPosition> around_kth;  // reference ranks k-3 .. k+3
  std::vector<ScoredPosition> missed, extra;
};

// A case: one implementation on one layer (or "blocks") of one batch, maybe on sampled rows.
struct CaseResult {
  std::string id;  // batch-id/impl/layer (rows travel in `rerun`)
  std::string batch_id, impl, layer, role, rows;  // rows: "" for all rows, else a list "0-3,17"
  std::string input;                              // the batch file, for the rerun command
  Disposition verdict = Disposition::passed;
  std::string failed_metric;  // "rule: metric" of the first failure
  std::string message;        // the first mismatch, DeepGEMM style
  std::string rerun;          // one command line that reruns exactly this case
  std::vector<CaseComparison> comparisons;
  std::vector<WorstRow> worst;  // drill-down, worst first
};

struct RunSettings {
  std::string rows = "all";
  unsigned long long seed = 0;
  int repeat = 1;
  double tolerance = rules::kFloorTolerance;
  int shard = 0, shards = 1;
};

struct Report {
  int schema_version = kReportSchemaVersion;
  EnvironmentInfo environment;
  RunSettings settings;
  std::vector<InputInfo> inputs;
  std::vector<ImplRun> runs;
  std::vector<CaseResult> cases;
  Disposition verdict = Disposition::passed;
  int exit_code = 0;
  std::vector<std::string> shards_merged;  // folders joined by `merge`
};

// Derived kernel figures from a timing: achieved rates, floor and share of ceiling.
KernelFigure kernel_figure(const std::string& kernel, const std::string& layer, int calls, int samples,
                           double median_ms, double min_ms, double max_ms, double flops, double bytes);

// The verdict of a case from its comparisons (incorrect beats inconclusive beats passed).
Disposition case_verdict(const std::vector<CaseComparison>& comparisons, std::string* failed_metric,
                         std::string* message);

// Sorts inputs, runs and cases into their canonical order and recomputes the overall verdict and
// exit code, so a report is a function of its contents (resume and merge rely on this).
void finalize_report(Report& report);

// Joins reports of shards of one run. Throws InputError on mismatched schema versions.
Report merge_reports(const std::vector<Report>& shards, const std::vector<std::string>& names);

nlohmann::json report_to_json(const Report& report);
// Throws InputError(file, key, rule) when the JSON is not a report of this schema.
Report report_from_json(const nlohmann::json& json, const std::string& file);
Report read_report(const std::string& path);  // reads and parses report.json

// Whether the JSON value n is an integer within [lo, hi], so a cast to the field's type is
// defined (the JSON library casts a float or a wider integer without a check). The readers below
// refuse a report or record whose integer fields fail it, naming the field.
bool json_integer_in(const nlohmann::json& n, long double lo, long double hi);

// JSON of the parts that the JSONL log stores one per line.
nlohmann::json impl_run_to_json(const ImplRun& run);
ImplRun impl_run_from_json(const nlohmann::json& json);
nlohmann::json case_to_json(const CaseResult& c);
CaseResult case_from_json(const nlohmann::json& json);

// Replaces the volatile fields (timestamps, durations, host, GPU model, commit, kernel timings; the CPU
// implementations' stage timings altogether) by fixed markers, for golden snapshots and for
// "equal to one whole run" checks.
nlohmann::json mask_volatile(nlohmann::json report_json);

}  // namespace dsa
