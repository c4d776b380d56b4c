#pragma once
// gate.md: the gate's verdict as short Markdown, fit for a pull-request comment or a CI step
// summary: the verdict and what it means for a merge, every finding that is not ok (what
// regressed, by how much against the noise) and the command that reruns each failing case.
#include <string>

#include "harness/gate/gate.hpp"

namespace dsa {

std::string gate_markdown(const GateResult& result, const Report& baseline, const Report& current);

}  // namespace dsa
