#pragma once
// The registry: maps an implementation name to a factory and to the path whose reference it is
// compared with. Names: reference-sparse, reference-mask, reference-exact, gpu-sparse, gpu-mask,
// recorded:NAME (outputs recorded in the batch file), mutant:NAME (planted defects, sparse path),
// plugin:PATH.so (a shared library implementing include/dsa_harness/plugin.h; mask path when its
// file name contains "mask", else sparse).
#include <functional>
#include <string>
#include <vector>

#include "core/implementation.hpp"
#include "core/path.hpp"

namespace dsa {

struct RegistryEntry {
  std::string name;
  PathKind path;
  std::string description;
};

// Every name this build offers (recorded:NAME is a pattern and not listed here).
const std::vector<RegistryEntry>& registry();
// The path of a name; recorded:NAME takes the path from its name when it contains "mask" or
// "sparse" and is otherwise treated as sparse. Throws InputError for an unknown name.
PathKind path_of(const std::string& name);
// Builds an implementation. `batch` is needed for recorded:NAME. Throws InputError when the
// name is unknown or the recorded group is missing.
ImplementationPtr make_implementation(const std::string& name, const Batch& batch);

// Implementations added at run time (the planted ones of the tests; later, plugins): until
// removed, the name is listed, runs by default and is built by make_implementation.
using ImplementationFactory = std::function<ImplementationPtr()>;
void add_implementation(const RegistryEntry& entry, ImplementationFactory make);
void remove_implementation(const std::string& name);

}  // namespace dsa
