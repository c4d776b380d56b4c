#pragma once
// The bytes a plugin host (child) sends its parent: one Results, timings included. Both sides
// are this build, so the format is private; the reader still checks every size against the batch,
// because the bytes come from a process that ran foreign code.
#include <string>

#include "core/batch.hpp"
#include "core/results.hpp"

namespace dsa {

std::string encode_results(const Results& results);
// Throws PluginError ("... truncated", "... holds N values, not M") naming `who`.
Results decode_results(const std::string& bytes, const Batch& batch, const std::string& who);

}  // namespace dsa
