// `record FILE --impl NAME[,NAME...] [--as GROUP,...] -o NEW.h5`: runs implementations on a batch
// and writes a copy of it with their results as recorded outputs (/outputs/GROUP), each naming
// the implementation, the device, the harness that recorded it and when. `replay NEW.h5 --impl
// recorded:GROUP` then checks those outputs on any machine: GPU outputs where there is no GPU.
#include <cstdio>
#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "core/errors.hpp"
#include "core/files.hpp"
#include "gpu/gpu_implementations.hpp"
#include "harness/batch/batch_io.hpp"
#include "harness/batch/content_id.hpp"
#include "harness/cli/commands.hpp"
#include "harness/cli/run_impls.hpp"
#include "harness/replay/batch_run.hpp"
#include "harness/replay/environment.hpp"

namespace dsa::cli {
namespace {

struct RecordArgs {
  std::string file, output;
  std::vector<std::string> impls, groups;
};

// The group names, checked before any work: one per implementation, each a plain HDF5 name that
// the input does not hold already (a copy never silently replaces what an engine recorded).
std::vector<std::string> group_names(const RecordArgs& args, const Batch& batch) {
  if (!args.groups.empty() && args.groups.size() != args.impls.size())
    throw InputError("--as", std::to_string(args.groups.size()) + " name(s)",
                     "must name one group per --impl (" + std::to_string(args.impls.size()) + ")");
  const std::vector<std::string> groups = args.groups.empty() ? args.impls : args.groups;
  std::set<std::string> seen;
  for (const std::string& g : groups) {
    if (g.empty() || g == "." || g == ".." || g.find('/') != std::string::npos)
      throw InputError(args.groups.empty() ? "--impl" : "--as", g,
                       "is not a usable group name under /outputs (empty, '.' or with '/'): name one with --as");
    if (!seen.insert(g).second) throw InputError("--as", g, "names two groups");
    if (batch.outputs.count(g))
      throw InputError(args.file, "/outputs/" + g, "is recorded already; record under another name with --as");
  }
  return groups;
}

// What the `device` attribute says: the GPU in full (model, SMs, memory, driver, runtime) for the
// GPU paths, the processor for the CPU ones, else what the implementation reports.
std::string device_text(const std::string& impl, const std::string& device) {
  if (device == "cpu") return describe_cpu();
  if (impl.rfind("gpu-", 0) == 0) return gpu::describe_device();
  return device;
}

void record_command(const RecordArgs& args) {
  check_output_file(args.output, {args.file}, "-o");  // before any work, not after
  remove_stale_temp_files(std::filesystem::path(args.output).parent_path().string());
  const Batch batch = read_batch(args.file);
  const std::vector<std::string> groups = group_names(args, batch);
  RunOptions options;
  options.scores = replay_compares_scores(batch, {});  // what a replay of the copy will compare
  const ImplResults ran = run_implementations(batch, args.impls, options);

  Batch copy = batch;
  const std::string harness = version_text(), when = utc_timestamp();
  for (size_t i = 0; i < groups.size(); ++i) {
    Results r = ran.results[i];
    r.name = groups[i];
    r.implementation = args.impls[i];
    r.device = device_text(args.impls[i], ran.devices[i]);
    r.harness = harness;
    r.recorded_at = when;
    copy.outputs[groups[i]] = std::move(r);
  }
  write_batch(args.output, copy);
  std::printf("wrote %s (batch ID %s, the batch of %s):\n", args.output.c_str(), content_id(copy).c_str(), args.file.c_str());
  std::string check;
  for (const std::string& g : groups) {
    std::printf("  /outputs/%s: %s\n", g.c_str(), copy.outputs[g].device.c_str());
    check += (check.empty() ? "recorded:" : ",recorded:") + g;
  }
  std::printf("recorded by %s at %s; check with: dsa-harness replay %s --impl %s\n", harness.c_str(), when.c_str(),
              args.output.c_str(), check.c_str());
}

}  // namespace

void add_record_command(CLI::App& app) {
  auto args = std::make_shared<RecordArgs>();
  auto* cmd = app.add_subcommand("record", "Run implementations on a batch and write a copy of it with their outputs "
                                           "recorded (replay them anywhere with --impl recorded:NAME)");
  cmd->add_option("file", args->file, "batch file (HDF5, format v1); never modified")->required();
  cmd->add_option("--impl", args->impls, "implementations, comma separated (e.g. gpu-sparse,gpu-mask)")
      ->required()
      ->delimiter(',');
  cmd->add_option("--as", args->groups, "group names under /outputs, one per --impl (default: the --impl names)")
      ->delimiter(',');
  cmd->add_option("-o,--output", args->output, "the copy to write (atomically); not the input")->required();
  cmd->callback([args] { record_command(*args); });
}

}  // namespace dsa::cli
