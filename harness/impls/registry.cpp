#include "harness/impls/registry.hpp"

#include <algorithm>
#include <map>

#include "gpu/gpu_implementations.hpp"
#include "core/errors.hpp"
#include "harness/impls/mutants.hpp"
#include "harness/impls/plugin.hpp"
#include "harness/impls/recorded.hpp"
#include "harness/impls/reference.hpp"

namespace dsa {

namespace {

std::vector<RegistryEntry>& entries() {
  static std::vector<RegistryEntry> all = {
      {"reference-sparse", PathKind::sparse, "CPU reference, block-table path (bf16 sparse scores)"},
      {"reference-mask", PathKind::mask, "CPU reference, mask path (fp32 dense scores)"},
      {"reference-exact", PathKind::exact, "CPU reference, fp64 ranking at every level"},
      {"gpu-sparse", PathKind::sparse, "CUDA block-table path"},
      {"gpu-mask", PathKind::mask, "CUDA mask path"},
  };
  return all;
}

std::map<std::string, ImplementationFactory>& added() {
  static std::map<std::string, ImplementationFactory> factories;
  return factories;
}

}  // namespace

const std::vector<RegistryEntry>& registry() { return entries(); }

void add_implementation(const RegistryEntry& entry, ImplementationFactory make) {
  remove_implementation(entry.name);
  entries().push_back(entry);
  added()[entry.name] = std::move(make);
}

void remove_implementation(const std::string& name) {
  if (!added().erase(name)) return;  // the built-in names stay
  auto& all = entries();
  all.erase(std::remove_if(all.begin(), all.end(), [&](const RegistryEntry& e) { return e.name == name; }), all.end());
}

PathKind path_of(const std::string& name) {
  for (const RegistryEntry& e : registry())
    if (e.name == name) return e.path;
  if (name.rfind("mutant:", 0) == 0) {
    make_mutant(name.substr(7));  // unknown mutants fail here, before any work
    return PathKind::sparse;
  }
  if (name.rfind("plugin:", 0) == 0) {
    if (name.size() == 7) throw InputError("--impl", name, "names no library (plugin:PATH.so)");
    // The library is loaded only in its child process, so its path comes from its file name.
    const std::string file = name.substr(name.find_last_of('/') == std::string::npos ? 7 : name.find_last_of('/') + 1);
    return file.find("mask") != std::string::npos ? PathKind::mask : PathKind::sparse;
  }
  if (name.rfind("recorded:", 0) == 0) {
    if (name.find("mask") != std::string::npos) return PathKind::mask;
    if (name.find("exact") != std::string::npos) return PathKind::exact;
    return PathKind::sparse;
  }
  throw InputError("--impl", name, "unknown implementation (see `dsa-harness replay --list-impl`)");
}

ImplementationPtr make_implementation(const std::string& name, const Batch& batch) {
  if (name == "reference-sparse") return make_reference(PathKind::sparse);
  if (name == "reference-mask") return make_reference(PathKind::mask);
  if (name == "reference-exact") return make_reference(PathKind::exact);
  if (name == "gpu-sparse") return gpu::make_gpu_sparse();
  if (name == "gpu-mask") return gpu::make_gpu_mask();
  if (name.rfind("recorded:", 0) == 0) return make_recorded(name.substr(9), batch);
  if (name.rfind("plugin:", 0) == 0) return make_plugin(name.substr(7));
  if (auto it = added().find(name); it != added().end()) return it->second();
  if (name.rfind("mutant:", 0) == 0) return make_mutant(name.substr(7));
  throw InputError("--impl", name, "unknown implementation (see `dsa-harness replay --list-impl`)");
}

}  // namespace dsa
