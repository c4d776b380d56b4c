#pragma once
// The figures of `dsa-harness bench`, as pure functions from measurements to report records: the
// measured ceilings as a run of their own ("ceilings"), each kernel's floor and share of those
// ceilings, and the per-layer host steps (wall time and kernel launches) of a GPU path.
#include <string>
#include <vector>

#include "core/results.hpp"
#include "reports/report_model.hpp"

namespace dsa {

// The implementation name under which a bench report stores the device's ceilings (batch_id
// "device"), and the one of the PyTorch peer.
inline const char* const kCeilingsImpl = "ceilings";
inline const char* const kCeilingsBatch = "device";
inline const char* const kTorchPeerImpl = "torch-mask";

// Ceilings in units per second; 0 where not measured.
struct Ceilings {
  double hbm_bytes = 0, l2_bytes = 0, int8_ops = 0, fp8_flops = 0;
  // The tensor ceiling a kernel is judged against: the int8 wgmma loop (the exact route's floor),
  // else the fp8 loop, else the datasheet-era constant of reports/report_model.hpp.
  double tensor() const;
  double memory() const;  // HBM copy, else the constant
};

// The ceilings run of a report: one figure per ceiling measured (share 1 by definition), and the
// ones this device cannot measure listed in `reason`.
ImplRun ceilings_run(const std::vector<KernelTiming>& timings, const std::vector<std::string>& not_supported,
                     const std::string& device);
// Reads the ceilings back from a report's ceilings run (zeros when the report has none).
Ceilings ceilings_of(const Report& report);

// A kernel's figure with its floor and share taken from the ceilings measured in the same run.
KernelFigure bench_figure(const KernelTiming& timing, const Ceilings& ceilings);

// One figure per protocol step (layer, "begin", "end") of a path from several untimed runs:
// kernel "<impl>/step", median/min/max of the step's wall time, calls = its kernel launches
// (the same in every run, else the largest).
std::vector<KernelFigure> step_figures(const std::string& impl, const std::vector<std::vector<StepRecord>>& runs);

}  // namespace dsa
