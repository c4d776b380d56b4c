#pragma once
// The CI regression gate: reads two reports (baseline and current) and nothing else.
// Correctness: thresholds on the current run (validity 100 %, no floor violation, no incorrect
// case) and agreement not below the baseline's by more than a margin. Latency: each kernel's
// median against the spread (min..max of samples) of both runs: slower beyond both spreads is a
// regression; a higher median inside the noise is "inconclusive", never "slower"; a lower one
// inside the noise is not a regression, and not called "faster" either. Kernels timed with a single sample (the CPU
// references' stage timings) have no spread and are not judged.
#include <string>
#include <vector>

#include "reports/report_model.hpp"

namespace dsa {

struct GateConfig {
  double validity_min = rules::kValidityMinimum;  // validity records of ranked rules must reach this
  double max_floor_violations = 0;    // floor.violating_rows allowed per comparison
  double agreement_margin = 0.002;    // agreement.mean/min may drop this much below the baseline
  double min_effect = 0.03;           // median changes below this share are "no change"
  double min_abs_ms = 0.0005;         // ... and below this many ms (CUDA event resolution)
  bool allow_different_gpu = false;
};

// Reads a JSON object with the fields above (all optional). Throws InputError naming the file
// and the key for unknown keys or wrong types.
GateConfig read_gate_config(const std::string& path);

enum class GateKind { ok, correctness, regression, inconclusive, environment };
const char* gate_kind_name(GateKind kind);

struct GateFinding {
  GateKind kind = GateKind::ok;
  std::string subject;  // case ID or "impl kernel @layer [batch]"
  std::string detail;
  std::string rerun;    // the command that reruns the current run's case behind it ("" when none)
};

struct GateResult {
  int exit_code = 0;  // 4 environment > 1 correctness > 2 regression > 3 inconclusive > 0
  std::vector<GateFinding> findings;  // every judgement made, problems first
  int kernels_compared = 0, cases_compared = 0;
};

GateResult run_gate(const Report& baseline, const Report& current, const GateConfig& config);

// Readable lines: one per finding that is not ok (and its rerun command), then a summary line.
std::string gate_text(const GateResult& result);

}  // namespace dsa
