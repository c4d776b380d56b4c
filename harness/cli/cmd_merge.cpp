// `dsa-harness merge DIR... -o OUT`: joins the reports of shard runs into one report.
#include <cstdio>

#include "harness/cli/commands.hpp"
#include "harness/replay/shard.hpp"
#include "reports/report_model.hpp"
#include "reports/printers.hpp"

namespace dsa::cli {

namespace {
struct MergeArgs {
  std::vector<std::string> dirs;
  std::string out = "dsa-report";
};
}  // namespace

void add_merge_command(CLI::App& app) {
  auto args = std::make_shared<MergeArgs>();
  auto* cmd = app.add_subcommand("merge", "Join the reports of shard runs (--shard I/N) into one report");
  cmd->add_option("dirs", args->dirs, "report folders of the shards (each holds report.json)")->required();
  cmd->add_option("-o,--output", args->out, "folder of the merged report (default ./dsa-report)");
  cmd->callback([args] {
    std::vector<Report> shards;
    std::vector<Shard> set;
    for (const std::string& dir : args->dirs) {
      shards.push_back(read_report(dir + "/report.json"));
      set.push_back({shards.back().settings.shard, shards.back().settings.shards});
    }
    check_shard_set(set, args->dirs);  // an incomplete set must not read as one passing run
    const Report merged = merge_reports(shards, args->dirs);
    reports::write_reports(merged, args->out);
    std::printf("merged %zu shard report(s): %zu input(s), %zu case(s), verdict %s -> %s/report.json\n",
                shards.size(), merged.inputs.size(), merged.cases.size(), disposition_name(merged.verdict),
                args->out.c_str());
    exit_code = merged.exit_code;
  });
}

}  // namespace dsa::cli
