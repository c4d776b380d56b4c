#pragma once
// recorded:NAME — an implementation whose "run" returns the outputs recorded in the batch file
// under /outputs/NAME (what an engine captured), so recorded outputs go through the same
// comparison as anything computed here.
#include <string>

#include "core/batch.hpp"
#include "core/implementation.hpp"

namespace dsa {

// `group` is NAME (without the "recorded:" prefix). Throws InputError naming the batch file and
// /outputs/NAME when the batch holds no such group.
ImplementationPtr make_recorded(const std::string& group, const Batch& batch);

// One line saying where a recorded group comes from, from its attributes: "recorded outputs
// /outputs/gpu-sparse of gpu-sparse on NVIDIA H200 (...) by dsa-harness 0.1.0 (commit ...) at
// 2026-12-01T05:00:00Z" (the parts whose attribute is empty are left out). Reports show it.
std::string recorded_provenance(const std::string& group, const Results& recorded);

}  // namespace dsa
