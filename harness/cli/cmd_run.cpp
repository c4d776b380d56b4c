// `run FILE --impl NAME[,NAME...] [--rows all|N|i,j,k] [--seed S] [--scores] -o OUT.h5`: runs
// implementations on a batch and writes each one's results to /outputs/<NAME> of a result file.
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "harness/batch/batch_io.hpp"
#include "harness/cli/commands.hpp"
#include "harness/cli/run_impls.hpp"
#include "core/errors.hpp"
#include "core/files.hpp"
#include "harness/batch/row_selection.hpp"

namespace dsa::cli {
namespace {

struct RunArgs {
  std::string file, output, rows = "all";
  std::vector<std::string> impls;
  uint64_t seed = 0;
  bool scores = false;
};

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

void run_command(const RunArgs& args) {
  const auto start = std::chrono::steady_clock::now();
  check_output_file(args.output, {args.file}, "-o");  // before hours of work, not after
  remove_stale_temp_files(std::filesystem::path(args.output).parent_path().string());
  const Batch batch = read_batch(args.file);
  RunOptions options;
  options.rows = select_rows(batch, args.rows, args.seed);
  options.scores = args.scores;
  std::printf("%s: %d rows, running %zu of them (load %.2f s)\n", args.file.c_str(), batch.rows(),
              options.rows.empty() ? size_t(batch.rows()) : options.rows.size(), seconds_since(start));

  const std::vector<Results> results = run_implementations(batch, args.impls, options).results;
  write_results(args.output, batch, results);
  std::printf("wrote %s (%zu result groups); total wall %.2f s, file loading included\n", args.output.c_str(),
              results.size(), seconds_since(start));
}

}  // namespace

void add_run_command(CLI::App& app) {
  auto args = std::make_shared<RunArgs>();
  auto* cmd = app.add_subcommand("run", "Run implementations on a batch and write their results to a result file");
  cmd->add_option("file", args->file, "batch file (HDF5, format v1)")->required();
  cmd->add_option("--impl", args->impls, "implementations, comma separated (reference-sparse, reference-mask, "
                                          "reference-exact, gpu-sparse, gpu-mask, recorded:NAME)")
      ->required()
      ->delimiter(',');
  cmd->add_option("--rows", args->rows, "all (default), N rows drawn with --seed plus the shortest and longest, "
                                         "or a list i,j,k (one row: i,)");
  cmd->add_option("--seed", args->seed, "seed of the --rows N draw (default 0)")->check(CLI::NonNegativeNumber);
  cmd->add_flag("--scores", args->scores, "also record dense and sparse scores");
  cmd->add_option("-o,--output", args->output, "result file to write (atomically)")->required();
  cmd->callback([args] { run_command(*args); });
}

}  // namespace dsa::cli
