#pragma once
// The child side of plugin:PATH: loads the library into this process (dlopen), checks its ABI
// version and table, and drives it through one batch in the engine's order. Run only inside
// `dsa-harness plugin-host` (a process of its own): a crash here ends that process alone.
#include <cstdio>
#include <string>

#include "core/batch.hpp"
#include "core/implementation.hpp"
#include "core/results.hpp"

namespace dsa {

// Throws PluginError naming `library` for: a library that does not load or exports no
// dsa_plugin_entry, another ABI version, a missing function, a call that reports an error, and
// malformed outputs (an entry of a wanted row left unwritten or out of range, bad timings).
// Before each call it writes "plugin-host: STEP" to `progress`, so a crash names its step.
Results run_plugin_here(const std::string& library, const Batch& batch, const RunOptions& options, std::FILE* progress);

}  // namespace dsa
