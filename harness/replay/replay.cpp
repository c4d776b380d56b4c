#include "harness/replay/replay.hpp"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <filesystem>
#include <set>
#include <system_error>

#include <nlohmann/json.hpp>

#include "core/errors.hpp"
#include "core/files.hpp"
#include "harness/batch/batch_io.hpp"
#include "harness/batch/content_id.hpp"
#include "harness/batch/row_selection.hpp"
#include "harness/replay/batch_run.hpp"
#include "harness/replay/case_log.hpp"
#include "harness/replay/devices.hpp"
#include "harness/replay/environment.hpp"
#include "harness/replay/inputs.hpp"
#include "harness/replay/plan.hpp"
#include "harness/replay/progress.hpp"
#include "reports/printers.hpp"

// Orchestration only: options -> inputs of this shard -> one batch run each -> one report.
namespace dsa {

namespace fs = std::filesystem;

namespace {

// --repeat beyond this is a typo, not a determinism check (each repeat is a whole run).
constexpr int kMaxRepeat = 100;

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

}  // namespace

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
    // An ID of an earlier version carries its rows as ranges: they replace --rows, as a list.
    if (!only->rows.empty()) {
      opt.rows.clear();
      for (int r : parse_rows_text(only->rows, 1 << 24)) opt.rows += std::to_string(r) + ",";
    }
  }
  const Shard shard = o.shard ? *o.shard : shard_from_environment();
  std::vector<std::string> targets = target_names(opt.impls);

  Report report;
  report.environment = describe_environment(o.devices);
  report.settings = {opt.rows, o.seed, o.repeat, o.tolerance,
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
    std::vector<int> rows = only && !only->rows.empty() ? parse_rows_text(only->rows, batch.rows())
                                                        : select_rows(batch, o.rows, o.seed);
    report.inputs.push_back(input_info(path, batch, id));
    const std::vector<std::string> here = batch_targets(targets, opt.impls, batch);
    progress.add_work(double(std::max<uint64_t>(file_size(path), 1)) * double(here.size() - targets.size()));
    std::vector<bool> named;
    for (const std::string& t : here)
      named.push_back(std::find(opt.impls.begin(), opt.impls.end(), t) != opt.impls.end());
    const BatchInput input{path, id, &batch, rows, double(std::max<uint64_t>(file_size(path), 1))};
    run_batch(opt, input, here, named, only ? only->layer : "", log, progress, report);
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
