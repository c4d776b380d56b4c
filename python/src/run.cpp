// run(): one registered implementation on a batch (all rows or some), as the CLI's `run` does.
#include "harness/batch/row_selection.hpp"
#include "harness/impls/registry.hpp"
#include "python/src/bindings.hpp"

namespace dsa::py_bind {
namespace {

// rows: "all", "N" (N drawn rows plus the shortest and longest) or "i,j,k", as `--rows` takes it.
py::dict run(const Batch& batch, const std::string& impl, const std::string& rows, uint64_t seed, bool scores) {
  RunOptions options;
  options.rows = select_rows(batch, rows, seed);
  options.scores = scores;
  ImplementationPtr implementation = make_implementation(impl, batch);
  const Support support = implementation->supported();
  if (!support.ok) throw EnvironmentError(impl + " cannot run on this machine: " + support.reason);
  Results results;
  {
    py::gil_scoped_release release;
    results = implementation->run(batch, options);
  }
  results.name = impl;
  return results_to_dict(batch, results);
}

std::vector<std::string> names() {
  std::vector<std::string> out;
  for (const RegistryEntry& e : registry()) out.push_back(e.name);
  return out;
}

}  // namespace

void bind_run(py::module_& m) {
  m.def("run", &run, py::arg("batch"), py::arg("impl"), py::arg("rows"), py::arg("seed"), py::arg("scores"));
  m.def("implementations", &names);
}

}  // namespace dsa::py_bind
