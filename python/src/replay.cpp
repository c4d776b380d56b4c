// replay() with Python implementations: each hook is registered under its name for the length of
// the call, so run_replay() runs, compares, times and reports it like any implementation.
#include <chrono>
#include <memory>

#include "harness/impls/registry.hpp"
#include "harness/replay/replay.hpp"
#include "python/src/bindings.hpp"

namespace dsa::py_bind {
namespace {

// A Python callable that may be copied and dropped on replay's threads: the GIL is taken first.
using Callable = std::shared_ptr<py::object>;
Callable hold(py::object fn) {
  return Callable(new py::object(std::move(fn)), [](py::object* o) {
    py::gil_scoped_acquire gil;
    delete o;
  });
}

// The hook's whole answer comes from one call in begin(): call(arrays, rows_done) -> the outputs
// dict (python/dsa_harness/replay.py adapts the user's function to it). Timed with a host clock.
class PythonHook : public Implementation {
 public:
  PythonHook(std::string name, Callable call) : name_(std::move(name)), call_(std::move(call)) {}
  std::string name() const override { return name_; }
  std::string device() const override { return "python"; }

 protected:
  void begin(const Batch& batch, const RunOptions& options, Results& out) override {
    py::gil_scoped_acquire gil;
    const auto start = std::chrono::steady_clock::now();
    py::object answer;
    try {
      answer = (*call_)(batch_arrays(batch), new_array(out.rows_done, {py::ssize_t(out.rows_done.size())}));
    } catch (py::error_already_set& e) {  // a plain C++ error on replay's side, naming the hook
      throw InputError("hook " + name_, batch.path, e.what());
    }
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    Results got = results_from_dict(batch, answer.cast<py::dict>(), "hook " + name_);
    out.blocks = std::move(got.blocks);
    out.layers = std::move(got.layers);
    if (options.timing) out.timings.push_back({name_ + "/call", "all", 1, 1, ms, ms, ms, 0, 0});
  }
  void publish(const Batch&, const Layer&, const RunOptions&, Results&) override {}
  void select(const Batch&, const Layer&, const RunOptions&, Results&) override {}
  void plain(const Batch&, const Layer&, const RunOptions&, Results&) override {}

 private:
  std::string name_;
  Callable call_;
};

// A hook may not shadow a built-in name: make_implementation would build the built-in one.
void check_name(const std::string& name) {
  bool taken = name.empty() || name.rfind("recorded:", 0) == 0;
  for (const RegistryEntry& e : registry()) taken = taken || e.name == name;
  if (taken) throw InputError("hooks", name, "is the name of an implementation the harness already has");
}

PathKind parse_path(const std::string& name, const std::string& path) {
  if (path == "sparse") return PathKind::sparse;
  if (path == "mask") return PathKind::mask;
  throw InputError("hooks", name, "path '" + path + "' is not sparse or mask");
}

// hooks: {name: (call, path)}. Returns the report's exit code; the reports are in out_dir.
int replay(const std::vector<std::string>& inputs, const py::dict& hooks, const std::vector<std::string>& impls,
           const std::string& rows, uint64_t seed, int repeat, double tolerance, const std::string& out_dir,
           bool quiet) {
  std::vector<std::string> registered;
  auto unregister_all = [&] {
    for (const std::string& name : registered) remove_implementation(name);
  };
  ReplayOptions o;
  o.inputs = inputs;
  o.impls = impls;
  o.rows = rows;
  o.seed = seed;
  o.repeat = repeat;
  o.tolerance = tolerance;
  o.out_dir = out_dir;
  o.progress = quiet ? nullptr : stderr;
  try {
    for (auto [key, value] : hooks) {
      const std::string name = key.cast<std::string>();
      const py::tuple t = value.cast<py::tuple>();
      Callable call = hold(py::reinterpret_borrow<py::object>(t[0]));
      check_name(name);
      add_implementation({name, parse_path(name, t[1].cast<std::string>()), "Python function (dsa_harness.replay)"},
                         [name, call] { return std::make_unique<PythonHook>(name, call); });
      registered.push_back(name);
    }
    Report report;
    {
      py::gil_scoped_release release;
      report = run_replay(o);
    }
    unregister_all();
    return report.exit_code;
  } catch (...) {
    unregister_all();
    throw;
  }
}

}  // namespace

void bind_replay(py::module_& m) {
  m.def("replay", &replay, py::arg("inputs"), py::arg("hooks"), py::arg("impls"), py::arg("rows"), py::arg("seed"),
        py::arg("repeat"), py::arg("tolerance"), py::arg("out_dir"), py::arg("quiet"));
}

}  // namespace dsa::py_bind
