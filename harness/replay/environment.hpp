#pragma once
// What a report records about where it ran: GPU model, driver, CUDA, SM clock (nvidia-smi when
// present, gpu::describe_device otherwise), host, OS, harness version and the git commit captured
// when the build was configured.
#include <string>
#include <vector>

#include "reports/report_model.hpp"

namespace dsa {

EnvironmentInfo describe_environment(const std::vector<int>& devices);

// The commit this binary was built from (12 hex digits, "unknown" outside a git checkout).
const char* build_commit();

// "dsa-harness 0.1.0 (commit 0123456789ab)": what --version prints.
std::string version_text();

// The host's processor, for outputs a CPU implementation recorded: "cpu: AMD EPYC 7B13 (2 threads)"
// from /proc/cpuinfo ("cpu: model unknown (N threads)" where it names none).
std::string describe_cpu();

// Current time as "2026-11-29T13:45:00Z".
std::string utc_timestamp();

// The fields of `nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm
// --format=csv,noheader` for one GPU line, and the "CUDA Version: X" of its banner.
struct SmiInfo {
  std::string name, driver, sm_clock, cuda;
};
SmiInfo parse_nvidia_smi(const std::string& query_line, const std::string& banner);

}  // namespace dsa
