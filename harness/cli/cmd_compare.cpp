// `compare FILE RESULTS.h5 --impl A --against B [--tolerance T]`: one result group against
// another (groups of RESULTS.h5, or outputs recorded in FILE), judged by the rule their paths
// call for; prints the records per layer and the first mismatches. Exit 0 passed, 1 failed,
// 3 when nothing could be compared.
#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "harness/batch/batch_io.hpp"
#include "harness/cli/commands.hpp"
#include "harness/compare/compare.hpp"
#include "core/errors.hpp"
#include "harness/impls/registry.hpp"
#include "core/rules.hpp"

namespace dsa::cli {
namespace {

struct CompareArgs {
  std::string file, results, impl, against;
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

std::string format_value(const Record& r) {
  char buf[48];
  if (r.unit == "count" || r.unit == "ulp") std::snprintf(buf, sizeof buf, "%.0f", r.value);
  else std::snprintf(buf, sizeof buf, "%.6g", r.value);
  return buf;
}

void print_layer(const LayerComparison& l) {
  if (l.layer == "blocks") std::printf("\nblocks (level one): %s", disposition_name(l.disposition));
  else std::printf("\nlayer %s (%s): %s", l.layer.c_str(), l.role.c_str(), disposition_name(l.disposition));
  if (!l.failed_metric.empty()) std::printf(" (%s)", l.failed_metric.c_str());
  if (!l.rows.empty()) std::printf(", %zu rows", l.rows.size());
  std::printf("\n");
  for (const Record& r : l.records)
    std::printf("  %-28s %14s  %-9s %s\n", r.name.c_str(), format_value(r).c_str(), r.unit.c_str(), r.hint.c_str());
  if (!l.mismatches.empty()) std::printf("  first mismatches:\n");
  for (const Mismatch& m : l.mismatches) std::printf("    %s\n", mismatch_text(l.layer, m).c_str());
}

// One line per layer with the figures a reader looks at first ("-" where the rule has none).
void print_summary(const std::vector<LayerComparison>& layers) {
  auto cell = [](const LayerComparison& l, const char* name) {
    const Record* r = find_record(l, name);
    return r ? format_value(*r) : std::string("-");
  };
  std::printf("\n%-12s %-14s %10s %10s %8s %10s %10s %10s\n", "layer", "verdict", "valid", "agree.min", "exact",
              "floor.viol", "recall", "max_ulp");
  for (const LayerComparison& l : layers) {
    const Record* ulp = find_record(l, "scores.dense.max_ulp");
    if (!ulp) ulp = find_record(l, "scores.sparse.max_ulp");
    std::printf("%-12s %-14s %10s %10s %8s %10s %10s %10s\n", l.layer.c_str(), disposition_name(l.disposition),
                cell(l, "validity").c_str(), cell(l, l.role == "tail" ? "tails.overlap.min" : "agreement.min").c_str(),
                cell(l, "exact").c_str(), cell(l, "floor.violating_rows").c_str(), cell(l, "quality.recall.mean").c_str(),
                ulp ? format_value(*ulp).c_str() : "-");
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
  const Comparison c = compare_results(batch, a, path_for(a.name), b, path_for(b.name), options);

  const long rows = long(metrics::compared_rows(a, b).size());
  std::printf("%s against %s on %s: %s rule, %ld rows done on both sides\n", c.impl.c_str(), c.against.c_str(),
              args.file.c_str(), rule_name(c.rule), rows);
  for (const LayerComparison& l : c.layers) print_layer(l);
  print_summary(c.layers);
  std::printf("\nverdict: %s\n", disposition_name(c.disposition));
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
  cmd->add_option("--tolerance", args->tolerance, "selection-floor tolerance, relative (default 2^-5)");
  cmd->callback([args] { compare_command(*args); });
}

}  // namespace dsa::cli
