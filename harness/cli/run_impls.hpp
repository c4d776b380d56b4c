#pragma once
// What `run` and `record` share: build the named implementations, refuse at once when one cannot
// run here (before hours of work on the others), run each on the batch and print its rate.
#include <string>
#include <vector>

#include "core/batch.hpp"
#include "core/implementation.hpp"
#include "core/results.hpp"

namespace dsa::cli {

struct ImplResults {
  std::vector<Results> results;   // one per name, Results::name = the name given
  std::vector<std::string> devices;  // Implementation::device() of each ("cpu" for the references)
};

// Throws EnvironmentError naming the first implementation that cannot run on this machine.
ImplResults run_implementations(const Batch& batch, const std::vector<std::string>& names, const RunOptions& options);

}  // namespace dsa::cli
