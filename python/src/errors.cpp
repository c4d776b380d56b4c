// The harness's errors as Python exceptions: bad input is a ValueError subclass whose message
// names the file (or array), the dataset and the rule, exactly as the CLI prints it.
#include "python/src/bindings.hpp"

namespace dsa::py_bind {

void bind_errors(py::module_& m) {
  py::register_exception<InputError>(m, "InputError", PyExc_ValueError);
  py::register_exception<EnvironmentError>(m, "EnvironmentError", PyExc_RuntimeError);
}

}  // namespace dsa::py_bind
