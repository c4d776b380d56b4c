// compare(): outputs against a reference's, judged by the rule the two paths call for -- the same
// compare_results() behind the CLI's `compare` and the replay reports.
#include "core/rules.hpp"
#include "harness/compare/compare.hpp"
#include "harness/compare/metrics.hpp"
#include "python/src/bindings.hpp"

namespace dsa::py_bind {
namespace {

// A registry name gives its path; any other name is read like recorded:NAME (as the CLI does).
PathKind path_for(const std::string& name) {
  try {
    return path_of(name);
  } catch (const InputError&) {
    return path_of("recorded:" + name);
  }
}

py::dict layer_dict(const LayerComparison& l) {
  py::dict out;
  out["layer"] = l.layer;
  out["role"] = l.role;
  out["verdict"] = disposition_name(l.disposition);
  out["failed_metric"] = l.failed_metric;
  py::dict records;
  for (const Record& r : l.records) records[py::str(r.name)] = r.value;
  out["records"] = records;
  py::list mismatches;
  for (const Mismatch& m : l.mismatches) mismatches.append(mismatch_text(l.layer, m));
  out["mismatches"] = mismatches;
  return out;
}

py::dict compare(const Batch& batch, const py::dict& outputs, const py::dict& against, double tolerance) {
  const Results a = results_from_dict(batch, outputs, "outputs");
  const Results b = results_from_dict(batch, against, "against");
  CompareOptions options;
  options.tolerance = tolerance;
  Comparison c;
  {
    py::gil_scoped_release release;
    c = compare_results(batch, a, path_for(a.name), b, path_for(b.name), options);
  }
  py::dict out;
  out["impl"] = c.impl;
  out["against"] = c.against;
  out["rule"] = rule_name(c.rule);
  out["verdict"] = disposition_name(c.disposition);
  out["rows"] = metrics::compared_rows(a, b).size();
  py::list layers;
  for (const LayerComparison& l : c.layers) layers.append(layer_dict(l));
  out["layers"] = layers;
  return out;
}

}  // namespace

void bind_compare(py::module_& m) {
  m.def("compare", &compare, py::arg("batch"), py::arg("outputs"), py::arg("against"), py::arg("tolerance"));
  m.attr("default_tolerance") = rules::kFloorTolerance;
}

}  // namespace dsa::py_bind
