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

}  // namespace dsa
