// The compiled half of the Python package dsa_harness (imported as dsa_harness._core).
#include "python/src/bindings.hpp"

#include <sstream>

namespace dsa::py_bind {

std::string shape_text(const std::vector<py::ssize_t>& shape) {
  std::ostringstream out;
  out << "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) out << ", ";
    if (shape[i] < 0) out << "*";
    else out << shape[i];
  }
  out << "]";
  return out.str();
}

}  // namespace dsa::py_bind

PYBIND11_MODULE(_core, m) {
  m.doc() = "dsa-harness bindings: batches, implementations, comparisons (see docs/python.md)";
  m.attr("version") = DSA_VERSION;
  dsa::py_bind::bind_errors(m);
  dsa::py_bind::bind_batch(m);
  dsa::py_bind::bind_results(m);
  dsa::py_bind::bind_run(m);
  dsa::py_bind::bind_compare(m);
  dsa::py_bind::bind_replay(m);
  dsa::py_bind::bind_capture(m);
}
