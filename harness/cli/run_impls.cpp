#include "harness/cli/run_impls.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>

#include "core/errors.hpp"
#include "harness/impls/registry.hpp"

namespace dsa::cli {

ImplResults run_implementations(const Batch& batch, const std::vector<std::string>& names, const RunOptions& options) {
  std::vector<ImplementationPtr> impls;
  ImplResults out;
  for (const std::string& name : names) {
    impls.push_back(make_implementation(name, batch));
    const Support support = impls.back()->supported();
    if (!support.ok) throw EnvironmentError(name + " cannot run on this machine: " + support.reason);
    out.devices.push_back(impls.back()->device());
  }
  for (size_t i = 0; i < impls.size(); ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    out.results.push_back(impls[i]->run(batch, options));
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    out.results.back().name = names[i];
    const long done = long(std::count(out.results.back().rows_done.begin(), out.results.back().rows_done.end(), uint8_t(1)));
    std::printf("%-20s %6ld rows  %8.2f s  %9.1f rows/s\n", names[i].c_str(), done, wall,
                wall > 0 ? double(done) / wall : 0.0);
  }
  return out;
}

}  // namespace dsa::cli
