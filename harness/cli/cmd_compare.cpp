// `compare FILE RESULTS.h5 --impl A --against B [--rows R] [--tolerance T]`: one result group against
// another (groups of RESULTS.h5, or outputs recorded in FILE), judged by the rule their paths
// call for; prints the records per layer and the first mismatches. Exit 0 passed, 1 failed,
// 3 when nothing could be compared.
#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "harness/batch/batch_io.hpp"
#include "harness/batch/row_selection.hpp"
#include "harness/cli/commands.hpp"
#include "harness/compare/compare.hpp"
#include "core/errors.hpp"
#include "harness/impls/registry.hpp"
#include "core/rules.hpp"
#include "reports/printers.hpp"

namespace dsa::cli {
namespace {

struct CompareArgs {
  std::string file, results, impl, against, rows = "all";
  uint64_t seed = 0;
  double tolerance = rules::kFloorTolerance;
};

// A group by name: the result file first, then the batch's recorded outputs ("NAME" or
// "recorded:NAME").
Results find_group(const std::string& name, const std::vector<Results>& results, const Batch& batch,
                   const std::string& results_path) {
  for (const Results& r : results)
    if (r.name == name) return r;
  const std::string bare = name.rfind("recorded:", 0) == 0 ? name.substr(9) : name;
  auto it = batch.outputs.find(bare);
  if (it != batch.outputs.end()) {
    Results r = it->second;
    r.name = "recorded:" + bare;
    return r;
  }
  std::string known;
  for (const Results& r : results) known += (known.empty() ? "" : ", ") + r.name;
  for (const auto& [n, r] : batch.outputs) known += (known.empty() ? "recorded:" : ", recorded:") + n;
  throw InputError(results_path, "/outputs/" + name,
                   "no such result group (have: " + (known.empty() ? std::string("none") : known) + ")");
}

// A registry name gives its path; any other group name is read like recorded:NAME.
PathKind path_for(const std::string& name) {
  try {
    return path_of(name);
  } catch (const InputError&) {
    return path_of("recorded:" + name);
  }
}

void compare_command(const CompareArgs& args) {
  if (!(args.tolerance >= 0)) throw InputError("--tolerance", std::to_string(args.tolerance), "must be >= 0");
  const Batch batch = read_batch(args.file);
  const std::vector<Results> results = read_results(args.results, batch);
  const Results a = find_group(args.impl, results, batch, args.results);
  const Results b = find_group(args.against, results, batch, args.results);
  CompareOptions options;
  options.tolerance = args.tolerance;
  options.rows = select_rows(batch, args.rows, args.seed);
  const Comparison c = compare_results(batch, a, path_for(a.name), b, path_for(b.name), options);

  const long rows = long(metrics::compared_rows(a, b).size());
  std::fputs(reports::comparison_text(c, args.file, rows).c_str(), stdout);
  exit_code = exit_code_of(c.disposition);
}

}  // namespace

void add_compare_command(CLI::App& app) {
  auto args = std::make_shared<CompareArgs>();
  auto* cmd = app.add_subcommand("compare", "Compare two result groups; exit 0 when the verdict passes, 1 when it fails");
  cmd->add_option("file", args->file, "batch file the results belong to")->required();
  cmd->add_option("results", args->results, "result file written by `run`")->required();
  cmd->add_option("--impl", args->impl, "group under test (a name in RESULTS, or recorded:NAME from FILE)")->required();
  cmd->add_option("--against", args->against, "group to compare with, usually a reference")->required();
  cmd->add_option("--rows", args->rows, "the rows --impl was run with, as `run --rows` (default all): a row among "
                 "them that --against did and --impl did not output fails");
  cmd->add_option("--seed", args->seed, "seed of the --rows N draw (default 0)")->check(CLI::NonNegativeNumber);
  cmd->add_option("--tolerance", args->tolerance, "selection-floor tolerance, relative (default 2^-5)");
  cmd->callback([args] { compare_command(*args); });
}

}  // namespace dsa::cli
