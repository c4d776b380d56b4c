// capture(): an engine's own results attached to a batch as recorded outputs (/outputs/NAME), so
// the file it writes replays them with `--impl recorded:NAME`. Checked by the same validator as a
// batch file's recorded outputs: what the writer accepts, every reader accepts.
#include <memory>

#include "harness/batch/batch_validate.hpp"
#include "python/src/bindings.hpp"

namespace dsa::py_bind {
namespace {

const char* kCapture = "capture";

void check_group_name(const std::string& name) {
  if (name.empty() || name.find('/') != std::string::npos || name.find(':') != std::string::npos)
    throw InputError(kCapture, "/outputs/" + name, "an output name must be non-empty, without '/' or ':'");
}

// A copy of `batch` holding `outputs` (dicts as Outputs._to_dict() makes them) as recorded outputs.
std::shared_ptr<Batch> with_outputs(const Batch& batch, const py::list& outputs) {
  auto out = std::make_shared<Batch>(batch);
  for (py::handle item : outputs) {
    Results results = results_from_dict(batch, item.cast<py::dict>(), kCapture);
    check_group_name(results.name);
    if (out->outputs.count(results.name))
      throw InputError(kCapture, "/outputs/" + results.name, "recorded twice");
    validate_results(batch, results, kCapture);
    out->outputs[results.name] = std::move(results);
  }
  return out;
}

}  // namespace

void bind_capture(py::module_& m) { m.def("with_outputs", &with_outputs); }

}  // namespace dsa::py_bind
