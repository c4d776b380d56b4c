#pragma once
// The PyTorch peer of `dsa-harness bench --peer torch`: bench/torch_mask_path.py, run as a child
// process (python3 on PATH) on the same batch file, timed with torch.cuda events. Its stages come
// back as a run "torch-mask" whose figures the report sets beside our kernels.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/bench/bench_figures.hpp"
#include "reports/report_model.hpp"

namespace dsa {

struct TorchPeerOptions {
  std::string python = "python3";
  std::string script;  // default: bench/torch_mask_path.py of the source tree
  int samples = 20;
};

// Runs the script on `batch_file` and reads its JSON (written to `json_path`). A failed or
// missing peer is a run with status not_run and the reason (the tail of its stderr), never an
// exception: the rest of the bench stands.
// `rows`: the rows our paths computed (empty: all), passed on as --rows i,j,k.
ImplRun run_torch_peer(const TorchPeerOptions& options, const std::string& batch_file, const std::vector<int>& rows,
                       const std::string& batch_id, const std::string& json_path);

// The run from the script's JSON: {"device", "peak_bytes", "stages": [{"stage", "layer",
// "samples", "median_ms", "min_ms", "max_ms"}]}. Throws InputError naming `file` and the key.
ImplRun torch_run_from_json(const nlohmann::json& json, const std::string& batch_id, const std::string& file);

std::string default_torch_script();

}  // namespace dsa
