#pragma once
// Shared pieces of the _core module: the bind_* functions (one per bound concept, one file each)
// and the numpy <-> std::vector copies they all use. The math stays in the C++ libraries.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <string>
#include <vector>

#include "core/batch.hpp"
#include "core/errors.hpp"
#include "core/results.hpp"

namespace dsa::py_bind {

namespace py = pybind11;

void bind_errors(py::module_& m);
void bind_batch(py::module_& m);
void bind_results(py::module_& m);
void bind_run(py::module_& m);
void bind_compare(py::module_& m);
void bind_replay(py::module_& m);
void bind_capture(py::module_& m);

// Every dataset of a batch as numpy arrays (copies), keyed like Batch.from_arrays' arguments.
py::dict batch_arrays(const Batch& batch);

// Results <-> the plain dict the Python side wraps in dsa_harness.Outputs (results.cpp).
py::dict results_to_dict(const Batch& batch, const Results& results);
Results results_from_dict(const Batch& batch, const py::dict& outputs, const std::string& source);

std::string shape_text(const std::vector<py::ssize_t>& shape);

// A numpy array of exactly dtype T and of `shape` (-1: any extent), copied in C order.
// Anything else is an InputError naming `source`, `dataset` and the rule broken.
template <class T>
std::vector<T> copy_array(py::handle object, const std::string& source, const std::string& dataset,
                          const std::vector<py::ssize_t>& shape, std::vector<py::ssize_t>* actual = nullptr) {
  if (!py::isinstance<py::array>(object))
    throw InputError(source, dataset, "is not a numpy array (got " + std::string(py::str(py::type::of(object))) + ")");
  py::array any = py::reinterpret_borrow<py::array>(object);
  if (!any.dtype().is(py::dtype::of<T>()))
    throw InputError(source, dataset, "dtype " + std::string(py::str(any.dtype())) + " is not " +
                                          std::string(py::str(py::dtype::of<T>())));
  std::vector<py::ssize_t> got(any.shape(), any.shape() + any.ndim());
  bool fits = got.size() == shape.size();
  for (size_t i = 0; fits && i < shape.size(); ++i) fits = shape[i] < 0 || shape[i] == got[i];
  if (!fits) throw InputError(source, dataset, "shape " + shape_text(got) + " is not " + shape_text(shape));
  auto dense = py::array_t<T, py::array::c_style | py::array::forcecast>::ensure(any);
  if (actual) *actual = got;
  return std::vector<T>(dense.data(), dense.data() + dense.size());
}

// A new numpy array holding a copy of `values` with `shape`.
template <class T>
py::array_t<T> new_array(const std::vector<T>& values, const std::vector<py::ssize_t>& shape) {
  py::array_t<T> out(shape);
  std::copy(values.begin(), values.end(), out.mutable_data());
  return out;
}

}  // namespace dsa::py_bind
