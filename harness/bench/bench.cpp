#include "harness/bench/bench.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>

#include "core/errors.hpp"
#include "gpu/ceilings/ceilings.hpp"
#include "gpu/gpu_implementations.hpp"
#include "harness/batch/batch_io.hpp"
#include "harness/batch/content_id.hpp"
#include "harness/batch/row_selection.hpp"
#include "harness/bench/bench_figures.hpp"
#include "harness/bench/bench_report.hpp"
#include "harness/bench/torch_peer.hpp"
#include "harness/generate/generate.hpp"
#include "harness/impls/registry.hpp"
#include "harness/replay/batch_run.hpp"
#include "harness/replay/environment.hpp"
#include "harness/replay/progress.hpp"

// Orchestration only: options -> ceilings -> batches -> paths (and peer) -> one report.
namespace dsa {

namespace fs = std::filesystem;

namespace {

constexpr int kMaxSamples = 1000;  // beyond this a typo, not a measurement
const char* const kPaths[] = {"gpu-sparse", "gpu-mask"};

struct BenchBatch {
  std::string path;  // the file, or where the generated batch is written for the peer ("" if not)
  std::string label; // what the report's input says it is
  Batch batch;
  std::vector<int> rows;  // rows to compute (empty: all)
};

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

// Every path must run here, or the bench measures nothing: refuse before any work.
void require_gpu() {
  const std::string why = gpu::unavailable_reason();
  if (!why.empty()) throw EnvironmentError("bench: needs a CUDA GPU the kernels were built for: " + why);
}

BenchBatch generated_batch(const BenchOptions& o, int context) {
  GenerateOptions g;
  g.preset = o.preset;
  g.seed = o.seed;
  g.context = context;
  g.rows_per_request = o.rows;
  BenchBatch b{"", "generated: --preset " + o.preset + " --context " + std::to_string(context) +
                       " --rows-per-request " + std::to_string(o.rows) + " --seed " + std::to_string(o.seed),
               generate_batch(g), {}};
  if (o.peer == "torch") {
    b.path = o.out_dir + "/batches/" + o.preset + "-" + std::to_string(context) + ".h5";
    fs::create_directories(o.out_dir + "/batches");
    write_batch(b.path, b.batch);
  }
  return b;
}

BenchBatch file_batch(const BenchOptions& o, const std::string& path) {
  BenchBatch b{path, path, read_batch(path), {}};
  if (o.rows > 0 && o.rows < b.batch.rows()) b.rows = select_rows(b.batch, std::to_string(o.rows), o.seed);
  return b;
}

// One GPU path on one batch: untimed runs for the steps, peak memory and launches, then a timed run.
ImplRun bench_path(const std::string& impl, const BenchBatch& b, const std::string& id, const BenchOptions& o,
                   const Ceilings& ceilings) {
  const auto start = std::chrono::steady_clock::now();
  ImplementationPtr p = make_implementation(impl, b.batch);
  const Support s = p->supported();
  if (!s.ok) throw EnvironmentError("bench: " + impl + " cannot run here: " + s.reason);
  ImplRun run;
  run.batch_id = id;
  run.impl = impl;
  run.device = p->device();
  run.named = true;
  run.rows = b.rows.empty() ? b.batch.rows() : int(b.rows.size());
  RunOptions plain;
  plain.rows = b.rows;
  std::vector<std::vector<StepRecord>> steps;
  for (int i = 0; i < o.step_runs; ++i) {
    const Results r = p->run(b.batch, plain);
    steps.push_back(r.steps);
    run.peak_device_bytes = std::max<long long>(run.peak_device_bytes, r.peak_device_bytes);
  }
  // The step as a serving engine replays it: a CUDA graph's launches per layer (issue 12: at most
  // three on a decode step), figures "<impl>/graph/step".
  try {
    std::vector<StepRecord> captured = p->captured_steps(b.batch, plain);
    for (StepRecord& s : captured) s.wall_ms = 0;  // recording a graph runs nothing: no time to judge
    if (!captured.empty())
      for (const KernelFigure& k : step_figures(impl + "/graph", {captured})) run.kernels.push_back(k);
  } catch (const std::exception& e) {  // the paths table then shows no captured launches
    std::fprintf(stderr, "bench: %s on %s: not captured as a CUDA graph: %s\n", impl.c_str(), id.c_str(), e.what());
  }
  RunOptions timed = plain;
  timed.timing = true;
  timed.timing_samples = o.samples;
  for (const KernelTiming& t : p->run(b.batch, timed).timings) run.kernels.push_back(bench_figure(t, ceilings));
  for (const KernelFigure& k : step_figures(impl, steps)) run.kernels.push_back(k);
  run.wall_s = seconds_since(start);
  return run;
}

BenchBatch bench_batch(const BenchOptions& o, size_t index) {
  return o.inputs.empty() ? generated_batch(o, o.contexts[index]) : file_batch(o, o.inputs[index]);
}

}  // namespace

void check_bench_options(const BenchOptions& o) {
  if (o.samples < 20 || o.samples > kMaxSamples)
    throw InputError("--repeat", std::to_string(o.samples),
                     "must be in [20, " + std::to_string(kMaxSamples) + "] (docs/performance.md: >= 20 samples)");
  if (o.rows < 0 || (o.inputs.empty() && o.rows == 0))
    throw InputError("--rows", std::to_string(o.rows), "must be >= 1 (0: all rows, only with batch files)");
  if (o.inputs.empty() && o.contexts.empty()) throw InputError("--contexts", "\"\"", "names no context length");
  for (int c : o.contexts)
    if (c < 1) throw InputError("--contexts", std::to_string(c), "must be >= 1");
  if (!o.peer.empty() && o.peer != "torch") throw InputError("--peer", o.peer, "must be torch (or left out)");
  if (o.step_runs < 2) throw InputError("bench", "step runs", "must be >= 2 (a spread for the gate)");
  if (o.out_dir.empty()) throw InputError("-o", "\"\"", "is empty; name a report folder");
  for (const std::string& f : o.inputs)
    if (!fs::is_regular_file(f)) throw InputError(f, "batch file", "does not exist or is not a file");
}

Report run_bench(const BenchOptions& o) {
  check_bench_options(o);
  require_gpu();
  fs::create_directories(o.out_dir);
  const size_t nbatches = o.inputs.empty() ? o.contexts.size() : o.inputs.size();
  const double per_batch = 2.0 + (o.peer.empty() ? 0 : 1);
  Progress progress(o.progress, 1 + per_batch * double(nbatches), Progress::is_terminal(o.progress));

  Report report;
  report.environment = describe_environment({});
  report.settings.rows = std::to_string(o.rows);
  report.settings.seed = o.seed;
  report.settings.repeat = o.samples;
  progress.begin("ceilings");
  const gpu::CeilingRun measured = gpu::measure_ceilings(o.samples);
  report.runs.push_back(ceilings_run(measured.timings, measured.not_supported, gpu::describe_device()));
  const Ceilings ceilings = ceilings_of(report);
  progress.advance(1, "ceilings");

  TorchPeerOptions peer{o.python, o.peer_script, o.samples};
  for (size_t i = 0; i < nbatches; ++i) {
    const BenchBatch b = bench_batch(o, i);
    const std::string id = content_id(b.batch);
    report.inputs.push_back(input_info(b.label, b.batch, id));
    for (const char* impl : kPaths) {
      progress.begin(id.substr(0, 8) + " " + impl);
      report.runs.push_back(bench_path(impl, b, id, o, ceilings));
      progress.advance(1, id.substr(0, 8) + " " + impl);
    }
    if (o.peer == "torch") {
      progress.begin(id.substr(0, 8) + " torch");
      report.runs.push_back(run_torch_peer(peer, b.path, b.rows, id, o.out_dir + "/torch-" + id + ".json"));
      progress.advance(1, id.substr(0, 8) + " torch");
    }
  }
  progress.finish();
  finalize_report(report);
  // A bench has no comparison cases: its verdict says the measurements ran (finalize_report
  // would call a report without cases inconclusive).
  report.verdict = Disposition::passed;
  report.exit_code = 0;
  write_bench_reports(report, o.out_dir);
  return report;
}

}  // namespace dsa
