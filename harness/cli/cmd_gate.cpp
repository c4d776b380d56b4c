// `dsa-harness gate --baseline BASE.json --current NEW.json [--config FILE] [--allow-different-gpu] [-o DIR]`
#include <cstdio>
#include <filesystem>

#include "harness/cli/commands.hpp"
#include "core/errors.hpp"
#include "harness/gate/gate.hpp"
#include "harness/gate/gate_markdown.hpp"
#include "reports/printers.hpp"

namespace dsa::cli {

namespace {
struct GateArgs {
  std::string baseline, current, config, out_dir;
  bool allow_different_gpu = false;
};

// gate.md goes beside the current run's report (its own folder) unless -o names another.
void write_gate_md(const GateArgs& args, const std::string& text) {
  std::string dir = args.out_dir;
  if (dir.empty()) dir = std::filesystem::path(args.current).parent_path().string();
  if (dir.empty()) dir = ".";
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw EnvironmentError(dir + ": cannot create the gate's output folder (" + ec.message() + ")");
  reports::write_text_atomic(dir + "/gate.md", text);
  std::printf("gate.md: %s/gate.md\n", dir.c_str());
}
}  // namespace

void add_gate_command(CLI::App& app) {
  auto args = std::make_shared<GateArgs>();
  auto* cmd = app.add_subcommand("gate", "Compare a run's report.json against a baseline's: correctness and latency");
  cmd->add_option("--baseline", args->baseline, "report.json of the baseline run")->required();
  cmd->add_option("--current", args->current, "report.json of the run under test")->required();
  cmd->add_option("--config", args->config,
                  "JSON thresholds: validity_min (1), max_floor_violations (0), agreement_margin (0.002), "
                  "min_effect (0.03), min_abs_ms (0.0005), allow_different_gpu (false)");
  cmd->add_flag("--allow-different-gpu", args->allow_different_gpu,
                "compare runs from different GPU models (correctness only; latencies are not judged)");
  cmd->add_option("-o,--output", args->out_dir,
                  "folder for gate.md, the verdict as Markdown for a PR comment (default: the folder of --current)");
  cmd->footer(
      "Latency: a kernel is a regression only when its median moved more than min_effect AND the two runs'\n"
      "min..max spreads do not overlap; a higher median inside the spreads is inconclusive (never \"slower\"),\n"
      "a lower one is not a regression (never \"faster\").\n"
      "Exit codes: 0 pass, 1 correctness failure, 2 performance regression, 3 inconclusive,\n"
      "4 invalid input or different GPU models.");
  cmd->callback([args] {
    GateConfig cfg = args->config.empty() ? GateConfig{} : read_gate_config(args->config);
    cfg.allow_different_gpu |= args->allow_different_gpu;
    const Report baseline = read_report(args->baseline), current = read_report(args->current);
    const GateResult result = run_gate(baseline, current, cfg);
    std::fputs(gate_text(result).c_str(), stdout);
    write_gate_md(*args, gate_markdown(result, baseline, current));
    exit_code = result.exit_code;
  });
}

}  // namespace dsa::cli
