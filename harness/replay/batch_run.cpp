#include "harness/replay/batch_run.hpp"

#include <algorithm>
#include <chrono>
#include <map>
#include <set>

#include "core/errors.hpp"
#include "harness/compare/compare.hpp"
#include "harness/impls/registry.hpp"
#include "harness/replay/cases.hpp"
#include "harness/replay/plan.hpp"

namespace dsa {

namespace {

// Scores are recorded (bitwise score fidelity) while the compared rows hold at most this many
// dense cells per layer; beyond it the comparison relies on picks and tie-aware exactness.
constexpr int64_t kScoreCellLimit = int64_t(1) << 24;

KernelFigure figure_of(const KernelTiming& t) {
  return kernel_figure(t.kernel, t.layer, t.calls, t.samples, t.median_ms, t.min_ms, t.max_ms, t.flops, t.bytes);
}

class BatchRun {
 public:
  BatchRun(const ReplayOptions& options, const std::string& path, const Batch& batch, const std::string& id,
           const std::vector<int>& rows, CaseLog& log, Progress& progress, double work)
      : opt_(options), path_(path), batch_(batch), id_(id), rows_(rows), log_(log), progress_(progress), work_(work),
        compare_cache_(batch) {
    run_options_.rows = rows;
    run_options_.scores = replay_compares_scores(batch, rows);
  }

  void run_all(const std::vector<std::string>& targets, const std::vector<bool>& named, const std::string& only_layer,
               Report& report) {
    std::vector<std::string> runnable;
    for (const std::string& t : targets)
      if (support_of(t).ok) runnable.push_back(t);
    for (size_t i = 0; i < targets.size(); ++i) {
      const std::string& impl = targets[i];
      if (log_.finished(id_, impl)) {
        progress_.advance(work_, id_.substr(0, 8) + " " + impl + " (finished earlier)");
        continue;
      }
      progress_.begin(id_.substr(0, 8) + " " + impl);
      ImplRun run;
      std::vector<CaseResult> cases;
      try {
        run_one(impl, named[i], runnable, run, cases);
      } catch (const InputError&) {
        throw;
      } catch (const EnvironmentError&) {
        throw;
      } catch (const std::exception& e) {
        // An implementation that breaks while running (a failed launch, a logic error) is a
        // failure of that implementation, reported as a case, not the end of the replay.
        cases = {crash_case(impl, e.what())};
      }
      // A case ID with layer "run" (a run that failed) keeps every case of that run.
      if (!only_layer.empty() && only_layer != "run")
        cases.erase(std::remove_if(cases.begin(), cases.end(), [&](const CaseResult& c) { return c.layer != only_layer; }),
                    cases.end());
      log_.append(run, cases);
      report_failures(cases);
      report.runs.push_back(run);
      report.cases.insert(report.cases.end(), cases.begin(), cases.end());
      progress_.advance(work_, id_.substr(0, 8) + " " + impl + (run.status == Disposition::passed ? "" : " (not run)"));
    }
  }

 private:
  const Support& support_of(const std::string& name) {
    auto it = support_.find(name);
    if (it == support_.end()) {
      ImplementationPtr impl = make_implementation(name, batch_);
      it = support_.emplace(name, impl->supported()).first;
      devices_[name] = impl->device();
    }
    return it->second;
  }

  // Results of a name, computed once per batch (references serve several comparisons).
  // A run made only as a comparison partner is not timed; its own turn as a target times it.
  const Results& results_of(const std::string& name, bool timed) {
    auto it = results_.find(name);
    const bool cpu = devices_.count(name) && devices_[name] == "cpu";  // CPU stage timings come anyway
    if (it != results_.end() && (!timed || cpu || timed_.count(name))) return it->second;
    ImplementationPtr impl = make_implementation(name, batch_);
    const Support s = impl->supported();
    if (!s.ok) throw EnvironmentError(name + " cannot run on this machine: " + s.reason);
    RunOptions o = run_options_;
    o.timing = timed && impl->device() != "cpu";
    if (timed) timed_.insert(name);
    Results& slot = results_[name];
    slot = impl->run(batch_, o);
    return slot;
  }

  void run_one(const std::string& impl, bool named, const std::vector<std::string>& runnable, ImplRun& run,
               std::vector<CaseResult>& cases) {
    run.batch_id = id_;
    run.impl = impl;
    run.named = named;
    run.repeats = opt_.repeat;
    const Support& support = support_of(impl);
    run.device = devices_[impl];
    if (!support.ok) {
      run.status = Disposition::not_supported;
      run.reason = support.reason;
      if (opt_.progress)
        std::fprintf(opt_.progress, "%s: %s not run: %s\n", named ? "error" : "note", impl.c_str(), support.reason.c_str());
      return;
    }
    const auto start = std::chrono::steady_clock::now();
    const Results& results = results_of(impl, true);
    run.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    run.rows = int(std::count(results.rows_done.begin(), results.rows_done.end(), uint8_t(1)));
    run.peak_device_bytes = results.peak_device_bytes;
    if (impl.rfind("recorded:", 0) == 0) run.reason = results.notes;  // where and when they were recorded
    for (const KernelTiming& t : results.timings) run.kernels.push_back(figure_of(t));
    if (opt_.repeat >= 2) run.deterministic = repeats_identical(impl, results) ? 1 : 0;

    std::vector<Comparison> comparisons;
    CompareOptions copt;
    copt.tolerance = opt_.tolerance;
    copt.rows = rows_;
    copt.cache = &compare_cache_;
    for (const Against& a : comparisons_for(impl, runnable)) {
      copt.rule = a.rule;
      const Results& against = results_of(a.name, false);
      comparisons.push_back(compare_results(batch_, results, path_of(impl), against, path_of(a.name), copt));
    }
    cases = cases_from_comparisons({id_, path_, impl, rows_, rows_flags(opt_.rows, opt_.seed), opt_.tolerance}, comparisons);
    if (run.deterministic == 0) mark_nondeterministic(cases);
    for (CaseResult& c : cases) add_worst_rows(c, batch_);
  }

  CaseResult crash_case(const std::string& impl, const std::string& what) const {
    CaseResult c;
    c.batch_id = id_;
    c.impl = impl;
    c.layer = "run";
    c.rows = rows_text(rows_);
    c.input = path_;
    c.id = format_case_id({id_, impl, "run", ""});
    c.rerun = rerun_command(path_, c.id, rows_flags(opt_.rows, opt_.seed), opt_.tolerance);
    c.verdict = Disposition::incorrect;
    c.failed_metric = "run: the implementation failed";
    c.message = what;
    return c;
  }

  bool repeats_identical(const std::string& name, const Results& first) {
    for (int i = 1; i < opt_.repeat; ++i) {
      ImplementationPtr impl = make_implementation(name, batch_);
      if (!same_results(first, impl->run(batch_, run_options_))) return false;
    }
    return true;
  }

  void report_failures(const std::vector<CaseResult>& cases) const {
    if (!opt_.progress) return;
    for (const CaseResult& c : cases) {
      if (c.verdict != Disposition::incorrect && c.verdict != Disposition::inconclusive) continue;
      std::fprintf(opt_.progress, "%s %s: %s%s%s\n  rerun: %s\n", c.verdict == Disposition::incorrect ? "FAIL" : "INCONCLUSIVE",
                   c.id.c_str(), c.failed_metric.c_str(), c.message.empty() ? "" : "; ", c.message.c_str(),
                   c.rerun.c_str());
    }
  }

  const ReplayOptions& opt_;
  const std::string& path_;
  const Batch& batch_;
  const std::string& id_;
  const std::vector<int>& rows_;
  CaseLog& log_;
  Progress& progress_;
  double work_;
  CompareCache compare_cache_;  // what every comparison of this batch shares
  RunOptions run_options_;
  std::map<std::string, Support> support_;
  std::map<std::string, std::string> devices_;
  std::map<std::string, Results> results_;
  std::set<std::string> timed_;
};

}  // namespace

bool replay_compares_scores(const Batch& batch, const std::vector<int>& rows) {
  int64_t cells = 0;
  for (int r = 0; r < batch.rows(); ++r)
    if (rows.empty() || std::binary_search(rows.begin(), rows.end(), r)) cells += batch.compress_len[size_t(r)];
  return cells <= kScoreCellLimit;
}

void run_batch(const ReplayOptions& options, const BatchInput& input, const std::vector<std::string>& targets,
               const std::vector<bool>& named, const std::string& only_layer, CaseLog& log, Progress& progress,
               Report& report) {
  BatchRun run(options, input.path, *input.batch, input.id, input.rows, log, progress, input.work);
  run.run_all(targets, named, only_layer, report);
}

InputInfo input_info(const std::string& path, const Batch& batch, const std::string& id) {
  InputInfo in;
  in.path = path;
  in.batch_id = id;
  in.origin = batch.origin;
  in.requests = batch.requests();
  in.rows = batch.rows();
  in.topk = batch.topk;
  in.max_len = batch.max_len();
  in.compress_ratio = batch.compress_ratio;
  for (const Layer& l : batch.layers) in.layers.push_back(l.id);
  return in;
}

}  // namespace dsa
