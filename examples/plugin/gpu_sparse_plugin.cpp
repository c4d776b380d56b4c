// An example plugin (include/dsa_harness/plugin.h) around this project's gpu-sparse, with its
// CUDA-event kernel timings: what a third party's CUDA library looks like to the harness. Built
// only with CUDA; tests/examples/plugin/test_gpu_sparse_plugin.sh runs it on the GPU box.
#include "examples/plugin/wrap_implementation.hpp"
#include "gpu/gpu_implementations.hpp"

namespace {
dsa::ImplementationPtr make() { return dsa::gpu::make_gpu_sparse(); }
using P = dsa_example::Plugin<make>;
const dsa_plugin_v1 kTable = {DSA_PLUGIN_ABI_VERSION, "gpu-sparse (plugin example)", "cuda", P::create, P::publish,
                              P::select, P::plain, P::timings, P::destroy};
}  // namespace

extern "C" __attribute__((visibility("default"))) const dsa_plugin_v1* dsa_plugin_entry(void) { return &kTable; }
