// `dsa-harness replay [FILE|FOLDER ...]`: every implementation on every batch, compared and timed,
// with reports in -o DIR (default ./dsa-report).
#include <cstdio>

#include "harness/cli/commands.hpp"
#include "core/errors.hpp"
#include "harness/replay/replay.hpp"

namespace dsa::cli {

namespace {

struct ReplayArgs {
  ReplayOptions options;
  std::string shard;
  bool list = false;
};

void print_implementations() {
  for (const ImplAvailability& a : list_implementations())
    std::printf("%-18s %s%s\n", a.name.c_str(), a.description.c_str(),
                a.reason.empty() ? "" : ("  [cannot run here: " + a.reason + "]").c_str());
}

}  // namespace

void add_replay_command(CLI::App& app) {
  auto args = std::make_shared<ReplayArgs>();
  ReplayOptions& o = args->options;
  auto* cmd = app.add_subcommand(
      "replay", "Replay batch files through the implementations, compare, time, and write reports");
  cmd->add_option("inputs", o.inputs, "batch files or folders of them (default: the bundled fixtures)");
  cmd->add_option("--impl", o.impls,
                  "implementations, comma-separated (default: the references and every GPU implementation "
                  "this machine can run); see --list-impl")
      ->delimiter(',');
  cmd->add_flag("--list-impl", args->list, "list every implementation name, marking those this machine cannot run");
  cmd->add_option("--rows", o.rows, "rows to compute: all, N (drawn with --seed), or a list i,j,k (default all)");
  cmd->add_option("--seed", o.seed, "seed of the --rows N draw (default 0)")->check(CLI::NonNegativeNumber);
  cmd->add_option("--repeat", o.repeat, "run each implementation N times and check the runs are bitwise identical");
  cmd->add_option("--tolerance", o.tolerance, "relative tolerance of the selection floor (default 2^-5)");
  cmd->add_option("--case", o.case_id, "rerun exactly one case: batch-id/impl/layer, as a failure prints it (give the same --rows/--seed)");
  cmd->add_option("-o,--output", o.out_dir, "report folder (default ./dsa-report)");
  cmd->add_option("--shard", args->shard,
                  "run share I of N of the inputs (I/N; default from SLURM_ARRAY_TASK_* or "
                  "JOB_COMPLETION_INDEX + DSA_SHARD_COUNT); join with `dsa-harness merge`");
  cmd->add_option("--devices", o.devices, "GPUs of this host to use, comma-separated (recorded in the report)")
      ->delimiter(',');
  cmd->add_flag("--resume", o.resume, "skip the implementation runs DIR/cases.jsonl already holds");
  cmd->footer(
      "Case ID: batch-id/impl/layer; every failing case prints the command that reruns it (with its --rows/--seed).\n"
      "Exit codes: 0 pass, 1 correctness failure, 2 performance regression, 3 inconclusive,\n"
      "4 invalid input or environment problem (also: an implementation named with --impl cannot run here;\n"
      "one only offered by default is reported \"not run\" and leaves the exit code alone).");
  cmd->callback([cmd, args] {
    // An empty --case would silently mean "every case".
    if (cmd->count("--case") && args->options.case_id.empty())
      throw InputError("--case", "\"\"", "is empty; pass a case ID as a failing case prints it");
    if (args->list) {
      print_implementations();
      exit_code = kExitPass;
      return;
    }
    ReplayOptions o = args->options;
    if (!args->shard.empty()) o.shard = parse_shard(args->shard);
    const Report report = run_replay(o);
    int passed = 0;
    for (const CaseResult& c : report.cases) passed += c.verdict == Disposition::passed;
    std::printf("replay: %s: %d/%zu case(s) passed on %zu input(s); reports in %s (exit %d)\n",
                disposition_name(report.verdict), passed, report.cases.size(), report.inputs.size(),
                o.out_dir.c_str(), report.exit_code);
    exit_code = report.exit_code;
  });
}

}  // namespace dsa::cli
