#include "harness/replay/replay.hpp"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <set>
#include <sstream>

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness/batch/batch_io.hpp"
#include "harness/compare/compare.hpp"
#include "harness/batch/content_id.hpp"
#include "core/errors.hpp"
#include "core/files.hpp"
#include "harness/replay/environment.hpp"
#include "harness/replay/progress.hpp"
#include "harness/impls/mutants.hpp"
#include "harness/impls/registry.hpp"
#include "harness/replay/cases.hpp"
#include "harness/replay/case_log.hpp"
#include "harness/batch/row_selection.hpp"
#include "gpu/gpu_implementations.hpp"
#include "reports/printers.hpp"

extern char** environ;

namespace dsa {

namespace fs = std::filesystem;

namespace {

// Scores are recorded (bitwise score fidelity) while the compared rows hold at most this many
// dense cells per layer; beyond it the comparison relies on picks and tie-aware exactness.
constexpr int64_t kScoreCellLimit = int64_t(1) << 24;
// --repeat beyond this is a typo, not a determinism check (each repeat is a whole run).
constexpr int kMaxRepeat = 100;

bool is_reference(const std::string& name) { return name.rfind("reference-", 0) == 0; }

// The references first (others are compared with them), then the rest in the order given.
std::vector<std::string> run_order(std::vector<std::string> names) {
  std::stable_sort(names.begin(), names.end(), [](const std::string& a, const std::string& b) {
    return is_reference(a) && !is_reference(b);
  });
  names.erase(std::unique(names.begin(), names.end()), names.end());
  return names;
}

struct Against {
  std::string name;
  Rule rule;
};

// What an implementation is compared with: the reference of its own path, the mask path when it
// is a sparse path (gpu-sparse with gpu-mask when that runs here, as the public test does), and
// reference-exact for the quality figures.
std::vector<Against> comparisons_for(const std::string& impl, const std::vector<std::string>& runnable) {
  const PathKind path = path_of(impl);
  std::vector<Against> out;
  const std::string own = reference_for(path);
  if (impl != own) out.push_back({own, Rule::own_path});
  if (path == PathKind::sparse) {
    const bool gpu_mask = impl.rfind("gpu-", 0) == 0 &&
                          std::find(runnable.begin(), runnable.end(), "gpu-mask") != runnable.end();
    out.push_back({gpu_mask ? "gpu-mask" : reference_for(PathKind::mask), Rule::public_test});
  }
  if (path != PathKind::exact) out.push_back({reference_for(PathKind::exact), Rule::quality});
  return out;
}

KernelFigure figure_of(const KernelTiming& t) {
  return kernel_figure(t.kernel, t.layer, t.calls, t.samples, t.median_ms, t.min_ms, t.max_ms, t.flops, t.bytes);
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

// Everything replay does on one batch file.
class BatchRun {
 public:
  BatchRun(const ReplayOptions& options, const std::string& path, const Batch& batch, const std::string& id,
           const std::vector<int>& rows, CaseLog& log, Progress& progress, double work)
      : opt_(options), path_(path), batch_(batch), id_(id), rows_(rows), log_(log), progress_(progress), work_(work) {
    run_options_.rows = rows;
    int64_t cells = 0;
    for (int r = 0; r < batch.rows(); ++r)
      if (rows.empty() || std::binary_search(rows.begin(), rows.end(), r)) cells += batch.compress_len[size_t(r)];
    run_options_.scores = cells <= kScoreCellLimit;
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
    for (const KernelTiming& t : results.timings) run.kernels.push_back(figure_of(t));
    if (opt_.repeat >= 2) run.deterministic = repeats_identical(impl, results) ? 1 : 0;

    std::vector<Comparison> comparisons;
    CompareOptions copt;
    copt.tolerance = opt_.tolerance;
    for (const Against& a : comparisons_for(impl, runnable)) {
      copt.rule = a.rule;
      const Results& against = results_of(a.name, false);
      comparisons.push_back(compare_results(batch_, results, path_of(impl), against, path_of(a.name), copt));
    }
    cases = cases_from_comparisons({id_, path_, impl, rows_, opt_.tolerance}, comparisons);
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
    c.id = format_case_id({id_, impl, "run", c.rows});
    c.rerun = rerun_command(path_, c.id, opt_.tolerance);
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
  RunOptions run_options_;
  std::map<std::string, Support> support_;
  std::map<std::string, std::string> devices_;
  std::map<std::string, Results> results_;
  std::set<std::string> timed_;
};

// The names replay runs: --impl as given, or the references and every GPU implementation.
std::vector<std::string> target_names(const ReplayOptions& o) {
  if (!o.impls.empty()) {
    for (const std::string& name : o.impls) path_of(name);  // unknown names fail before any work
    return run_order(o.impls);
  }
  std::vector<std::string> names;
  for (const RegistryEntry& e : registry()) names.push_back(e.name);
  return run_order(names);
}

uint64_t file_size(const std::string& path) {
  std::error_code ec;
  const auto size = fs::file_size(path, ec);
  return ec ? 0 : uint64_t(size);
}

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const std::string& i : items) out += (out.empty() ? "" : ",") + i;
  return out;
}

// The command line of one device's share: the same replay as sub-shard `sub` of `subs`.
std::vector<std::string> device_args(const ReplayOptions& o, Shard sub, int device, const std::string& dir) {
  char tolerance[64];
  std::snprintf(tolerance, sizeof tolerance, "%.17g", o.tolerance);
  std::vector<std::string> a = {"dsa-harness", "replay"};
  a.insert(a.end(), o.inputs.begin(), o.inputs.end());
  if (!o.impls.empty()) a.insert(a.end(), {"--impl", join(o.impls)});
  a.insert(a.end(), {"--rows", o.rows, "--seed", std::to_string(o.seed), "--repeat", std::to_string(o.repeat),
                     "--tolerance", tolerance, "--shard", std::to_string(sub.index) + "/" + std::to_string(sub.count),
                     "--devices", std::to_string(device), "-o", dir});
  if (o.resume) a.push_back("--resume");
  return a;
}

// The GPU ids this process can use, as CUDA_VISIBLE_DEVICES and nvidia-smi number them: CUDA
// sees the first device_count() entries of CUDA_VISIBLE_DEVICES (it stops at the first id that
// does not exist), or 0..count-1 when the variable is not set.
std::vector<std::string> visible_gpus() {
  const int count = gpu::device_count();
  std::vector<std::string> ids;
  if (const char* env = std::getenv("CUDA_VISIBLE_DEVICES")) {
    std::stringstream list(env);
    std::string id;
    while (std::getline(list, id, ',')) ids.push_back(id.substr(0, id.find_last_not_of(" ") + 1));
  } else {
    for (int i = 0; i < count; ++i) ids.push_back(std::to_string(i));
  }
  ids.resize(std::min(ids.size(), size_t(count)));
  return ids;
}

// --devices is checked before any process starts: a GPU that does not exist would otherwise
// surface only after the run, as shards that "ran on different GPU models". A process started
// for one GPU (CUDA_VISIBLE_DEVICES=K, --devices K) passes the same check.
void check_devices(const std::vector<int>& devices) {
  std::set<int> seen;
  for (int d : devices)
    if (!seen.insert(d).second) throw InputError("--devices", "GPU " + std::to_string(d), "is named twice");
  if (devices.empty()) return;
  const std::vector<std::string> ids = visible_gpus();
  std::string here = ids.empty() ? "no GPU here: " + gpu::unavailable_reason() : "GPUs here:";
  for (const std::string& id : ids) here += " " + id;
  if (const char* env = std::getenv("CUDA_VISIBLE_DEVICES")) here += std::string(" (CUDA_VISIBLE_DEVICES=") + env + ")";
  for (int d : devices)
    if (std::find(ids.begin(), ids.end(), std::to_string(d)) == ids.end())
      throw InputError("--devices", "GPU " + std::to_string(d), "does not exist (" + here + ")");
}

// Starts this program on one device: CUDA_VISIBLE_DEVICES narrows the child to that GPU.
pid_t spawn_on_device(const std::string& program, const std::vector<std::string>& args, int device) {
  std::vector<std::string> env_text;
  for (char** e = environ; *e; ++e)
    if (std::string(*e).rfind("CUDA_VISIBLE_DEVICES=", 0) != 0) env_text.push_back(*e);
  env_text.push_back("CUDA_VISIBLE_DEVICES=" + std::to_string(device));
  std::vector<char*> argv, envp;
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  for (const std::string& e : env_text) envp.push_back(const_cast<char*>(e.c_str()));
  argv.push_back(nullptr);
  envp.push_back(nullptr);
  pid_t pid = -1;
  if (::posix_spawn(&pid, program.c_str(), nullptr, nullptr, argv.data(), envp.data()) != 0)
    throw EnvironmentError("--devices: cannot start a replay process for device " + std::to_string(device));
  return pid;
}

// --devices with several GPUs: one process per device, each on a sub-shard of this shard's
// share (sub-shard I*D+k of N*D), then one merged report. Every process writes its own folder
// DIR/device-K (with its own cases.jsonl, so --resume works per device).
Report run_on_devices(const ReplayOptions& o) {
  const Shard outer = o.shard ? *o.shard : shard_from_environment();
  const int d = int(o.devices.size());
  std::vector<std::string> dirs;
  std::vector<pid_t> pids;
  for (int k = 0; k < d; ++k) {
    dirs.push_back(o.out_dir + "/device-" + std::to_string(o.devices[size_t(k)]));
    const Shard sub{outer.index * d + k, outer.count * d};
    pids.push_back(spawn_on_device(o.program, device_args(o, sub, o.devices[size_t(k)], dirs.back()), o.devices[size_t(k)]));
  }
  std::string failed;
  for (int k = 0; k < d; ++k) {
    int status = 0;
    ::waitpid(pids[size_t(k)], &status, 0);
    const bool verdict = WIFEXITED(status) && WEXITSTATUS(status) != kExitInvalid;
    if (!verdict) failed += (failed.empty() ? "" : ", ") + std::to_string(o.devices[size_t(k)]);
  }
  if (!failed.empty())
    throw EnvironmentError("--devices: the replay on device(s) " + failed + " failed (see its message above)");
  std::vector<Report> parts;
  for (const std::string& dir : dirs) parts.push_back(read_report(dir + "/report.json"));
  Report report = merge_reports(parts, dirs);
  report.environment.devices = o.devices;
  report.settings.shard = outer.index;
  report.settings.shards = outer.count;
  report.shards_merged.clear();
  finalize_report(report);
  reports::write_reports(report, o.out_dir);
  return report;
}

}  // namespace

std::string default_fixtures_dir() { return std::string(DSA_SOURCE_DIR) + "/fixtures"; }

std::vector<std::string> expand_inputs(const std::vector<std::string>& args) {
  std::vector<std::string> files;
  const std::vector<std::string> paths = args.empty() ? std::vector<std::string>{default_fixtures_dir()} : args;
  for (const std::string& p : paths) {
    std::error_code ec;
    if (fs::is_directory(p, ec)) {
      std::vector<std::string> found;
      for (const fs::directory_entry& e : fs::directory_iterator(p, ec))
        if (e.is_regular_file() && e.path().extension() == ".h5") found.push_back(e.path().string());
      if (found.empty()) throw InputError(p, "(folder)", "holds no *.h5 batch files");
      std::sort(found.begin(), found.end());
      files.insert(files.end(), found.begin(), found.end());
    } else if (fs::is_regular_file(p, ec)) {
      files.push_back(p);
    } else {
      throw InputError(p, "(file)", "no such file or folder");
    }
  }
  return files;
}

std::vector<ImplAvailability> list_implementations() {
  std::vector<ImplAvailability> out;
  const Batch empty;
  for (const RegistryEntry& e : registry()) {
    ImplAvailability a{e.name, e.description, ""};
    try {
      const Support s = make_implementation(e.name, empty)->supported();
      if (!s.ok) a.reason = s.reason;
    } catch (const std::exception& ex) {
      a.reason = ex.what();
    }
    out.push_back(a);
  }
  out.push_back({"recorded:NAME", "outputs recorded in the batch file under /outputs/NAME", ""});
  for (const MutantInfo& m : mutants()) out.push_back({"mutant:" + m.name, "planted defect: " + m.description, ""});
  return out;
}

// Every option checked before any work; each message names the option and its rule.
void check_replay_options(const ReplayOptions& o) {
  if (o.repeat < 1 || o.repeat > kMaxRepeat)
    throw InputError("--repeat", std::to_string(o.repeat), "must be in [1, " + std::to_string(kMaxRepeat) + "]");
  if (!(o.tolerance >= 0 && o.tolerance <= 1))  // also refuses NaN and inf
    throw InputError("--tolerance", std::to_string(o.tolerance), "must be a finite number in [0, 1]");
  if (o.rows.empty()) throw InputError("--rows", "\"\"", "is empty; say all, N or a list i,j,k");
  if (o.out_dir.empty()) throw InputError("-o", "\"\"", "is empty; name a report folder");
}

void create_report_folder(const std::string& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw EnvironmentError(dir + ": cannot create the report folder (" + ec.message() + ")");
}

// The scope a resumed log must match: the batch files (as absolute paths) and implementations.
nlohmann::json log_scope(const std::vector<std::string>& files, const std::vector<std::string>& targets) {
  std::vector<std::string> paths;
  for (const std::string& f : files) {
    std::error_code ec;
    const fs::path p = fs::weakly_canonical(f, ec);
    paths.push_back(ec ? f : p.string());
  }
  return {{"inputs", paths}, {"impls", targets}};
}

Report run_replay(const ReplayOptions& o) {
  check_replay_options(o);
  check_devices(o.devices);
  // One writer per report folder: two replays into one -o would interleave cases.jsonl lines
  // and lose a report. Temp files that killed runs left in that folder go at the same time.
  create_report_folder(o.out_dir);
  const FolderLock lock(o.out_dir);
  remove_stale_temp_files(o.out_dir);
  if (o.devices.size() > 1 && o.case_id.empty()) return run_on_devices(o);
  std::optional<CaseId> only;
  ReplayOptions opt = o;
  if (!o.case_id.empty()) {
    only = parse_case_id(o.case_id);
    opt.impls = {only->impl};
  }
  const Shard shard = o.shard ? *o.shard : shard_from_environment();
  std::vector<std::string> targets = target_names(opt);

  Report report;
  report.environment = describe_environment(o.devices);
  report.settings = {only ? (only->rows.empty() ? "all" : only->rows) : o.rows, o.seed, o.repeat, o.tolerance,
                     shard.index, shard.count};
  std::vector<ShardInput> all;
  for (const std::string& f : expand_inputs(o.inputs)) all.push_back({f, file_size(f)});
  const std::vector<std::string> mine = only ? expand_inputs(o.inputs) : shard_inputs(all, shard);

  CaseLog log(o.out_dir, report.settings, o.resume, log_scope(mine, targets));
  double total = 0;
  for (const std::string& f : mine) total += double(std::max<uint64_t>(file_size(f), 1)) * targets.size();
  Progress progress(o.progress, total, Progress::is_terminal(o.progress));

  bool case_found = false;
  std::set<std::string> seen;
  for (const std::string& path : mine) {
    const Batch batch = read_batch(path);
    const std::string id = content_id(batch);
    if (only && id != only->batch_id) continue;
    if (!seen.insert(id).second) continue;  // the same batch named twice (a file and its folder)
    case_found = true;
    std::vector<int> rows = only ? parse_rows_text(only->rows, batch.rows()) : select_rows(batch, o.rows, o.seed);
    report.inputs.push_back(input_info(path, batch, id));
    std::vector<bool> named;
    for (const std::string& t : targets)
      named.push_back(std::find(opt.impls.begin(), opt.impls.end(), t) != opt.impls.end());
    BatchRun run(opt, path, batch, id, rows, log, progress, double(std::max<uint64_t>(file_size(path), 1)));
    run.run_all(targets, named, only ? only->layer : "", report);
  }
  progress.finish();
  if (only && !case_found)
    throw InputError("--case", o.case_id, "no input has batch ID " + only->batch_id + " (pass its batch file)");
  if (only && only->layer != "run" && report.cases.empty() && report.runs.size() == 1 &&
      report.runs[0].status == Disposition::passed)
    throw InputError("--case", o.case_id, "implementation " + only->impl + " has no layer " + only->layer + " in this batch");

  // Runs finished before a kill come from the log; the report then equals an uninterrupted run.
  // Only those of this run's batches (a file rewritten in place has a new batch ID), each once.
  for (const ImplRun& r : log.earlier_runs())
    if (seen.count(r.batch_id) &&
        std::none_of(report.runs.begin(), report.runs.end(),
                     [&](const ImplRun& x) { return x.batch_id == r.batch_id && x.impl == r.impl; }))
      report.runs.push_back(r);
  std::set<std::string> case_ids;
  for (const CaseResult& c : report.cases) case_ids.insert(c.id);
  for (const CaseResult& c : log.earlier_cases())
    if (seen.count(c.batch_id) && case_ids.insert(c.id).second) report.cases.push_back(c);
  finalize_report(report);
  reports::write_reports(report, o.out_dir);
  return report;
}

}  // namespace dsa
