#pragma once
// The three CPU reference implementations (reference-sparse, reference-mask, reference-exact)
// as dsa::Implementation objects. They compute rows in parallel; a sampled run equals the full
// run on those rows.
#include "core/implementation.hpp"
#include "core/path.hpp"

namespace dsa {

// PathKind::sparse -> "reference-sparse", mask -> "reference-mask", exact -> "reference-exact".
ImplementationPtr make_reference(PathKind path);

}  // namespace dsa
