// An example plugin (include/dsa_harness/plugin.h) that runs on any machine: this project's
// reference-sparse behind the plugin ABI. CI replays the fixtures with it
// (`dsa-harness replay fixtures --impl plugin:build/examples/plugin/libdsa_cpu_example.so`).
#include "examples/plugin/wrap_implementation.hpp"
#include "harness/impls/reference.hpp"

namespace {
dsa::ImplementationPtr make() { return dsa::make_reference(dsa::PathKind::sparse); }
using P = dsa_example::Plugin<make>;
const dsa_plugin_v1 kTable = {DSA_PLUGIN_ABI_VERSION, "cpu-example (reference-sparse)", "cpu", P::create, P::publish,
                              P::select, P::plain, P::timings, P::destroy};
}  // namespace

extern "C" __attribute__((visibility("default"))) const dsa_plugin_v1* dsa_plugin_entry(void) { return &kTable; }
