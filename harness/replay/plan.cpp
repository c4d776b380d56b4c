#include "harness/replay/plan.hpp"

#include <algorithm>

#include "core/batch.hpp"
#include "harness/impls/mutants.hpp"
#include "harness/impls/registry.hpp"

namespace dsa {

namespace {

bool is_reference(const std::string& name) { return name.rfind("reference-", 0) == 0; }

// The references first (others are compared with them), then the rest in the order given.
std::vector<std::string> run_order(std::vector<std::string> names) {
  std::stable_sort(names.begin(), names.end(), [](const std::string& a, const std::string& b) {
    return is_reference(a) && !is_reference(b);
  });
  names.erase(std::unique(names.begin(), names.end()), names.end());
  return names;
}

}  // namespace

std::vector<Against> comparisons_for(const std::string& impl, const std::vector<std::string>& runnable) {
  const PathKind path = path_of(impl);
  std::vector<Against> out;
  const std::string own = reference_for(path);
  if (impl != own) out.push_back({own, Rule::own_path});
  if (path == PathKind::sparse) {
    const bool gpu_mask = impl.rfind("gpu-", 0) == 0 &&
                          std::find(runnable.begin(), runnable.end(), "gpu-mask") != runnable.end();
    out.push_back({gpu_mask ? "gpu-mask" : reference_for(PathKind::mask), Rule::public_test});
  }
  if (path != PathKind::exact) out.push_back({reference_for(PathKind::exact), Rule::quality});
  return out;
}

std::vector<std::string> target_names(const std::vector<std::string>& impls) {
  if (!impls.empty()) {
    for (const std::string& name : impls) path_of(name);  // unknown names fail before any work
    return run_order(impls);
  }
  std::vector<std::string> names;
  for (const RegistryEntry& e : registry()) names.push_back(e.name);
  return run_order(names);
}

std::vector<std::string> batch_targets(const std::vector<std::string>& targets, const std::vector<std::string>& impls,
                                       const Batch& batch) {
  std::vector<std::string> names = targets;
  if (impls.empty())
    for (const auto& [group, results] : batch.outputs) names.push_back("recorded:" + group);
  return names;
}

std::vector<ImplAvailability> list_implementations() {
  std::vector<ImplAvailability> out;
  const Batch empty;
  for (const RegistryEntry& e : registry()) {
    ImplAvailability a{e.name, e.description, ""};
    try {
      const Support s = make_implementation(e.name, empty)->supported();
      if (!s.ok) a.reason = s.reason;
    } catch (const std::exception& ex) {
      a.reason = ex.what();
    }
    out.push_back(a);
  }
  out.push_back({"recorded:NAME", "outputs recorded in the batch file under /outputs/NAME", ""});
  out.push_back({"plugin:PATH.so", "a shared library implementing include/dsa_harness/plugin.h, run in a child process", ""});
  for (const MutantInfo& m : mutants()) out.push_back({"mutant:" + m.name, "planted defect: " + m.description, ""});
  return out;
}

}  // namespace dsa
