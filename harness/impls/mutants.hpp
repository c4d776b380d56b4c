#pragma once
// Planted defects: sparse-path implementations that each carry one realistic bug, built from the
// reference's own scoring and selection pieces so that everything but the bug is right. They
// prove the harness catches what it exists to catch: `replay --impl mutant:NAME` must fail
// (exit 1) on the bundled fixtures, while mutant:control (the same pipeline without a bug)
// passes, so a detection is the bug's and not the pipeline's. Not run by default; listed by
// `replay --list-impl`.
#include <string>
#include <vector>

#include "core/implementation.hpp"

namespace dsa {

struct MutantInfo {
  std::string name;         // without the "mutant:" prefix
  std::string description;  // the bug, as a kernel author would make it
};

const std::vector<MutantInfo>& mutants();

// `name` without the prefix; InputError naming --impl for an unknown mutant.
ImplementationPtr make_mutant(const std::string& name);

}  // namespace dsa
