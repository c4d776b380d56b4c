// `dsa-harness generate`: writes a synthetic batch file from a preset (harness/generate/generate.hpp).
#include <cstdio>
#include <filesystem>
#include <memory>
#include <sstream>
#include <string>

#include "harness/batch/batch_io.hpp"
#include "harness/cli/commands.hpp"
#include "harness/batch/content_id.hpp"
#include "core/errors.hpp"
#include "core/files.hpp"
#include "harness/generate/generate.hpp"

namespace dsa::cli {

namespace {

struct GenerateArgs {
  GenerateOptions options;
  std::string output;
  std::string layers;
};

// "20,24,28" -> {20, 24, 28}; anything else is an InputError naming --layers.
std::vector<int> parse_layers(const std::string& text) {
  std::vector<int> ids;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    size_t used = 0;
    int id = -1;
    try {
      id = std::stoi(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (item.empty() || used != item.size())
      throw InputError("generate", "--layers", "expects comma-separated integer layer ids (got '" + text + "')");
    ids.push_back(id);
  }
  if (ids.empty()) throw InputError("generate", "--layers", "expects at least one layer id");
  return ids;
}

// A size option given on the command line must be a size: -1 is the "preset's own" marker
// inside, and must not slip through as one.
void check_given_sizes(const CLI::App& cmd, const GenerateOptions& o) {
  const struct { const char* name; int value; } sizes[] = {
      {"--requests", o.requests}, {"--rows-per-request", o.rows_per_request}, {"--context", o.context}};
  for (const auto& s : sizes)
    if (cmd.count(s.name) && s.value < 1)
      throw InputError("generate", s.name, "must be >= 1 (got " + std::to_string(s.value) + ")");
}

void run_generate(const CLI::App& cmd, GenerateArgs& args) {
  check_given_sizes(cmd, args.options);
  if (!args.layers.empty()) args.options.layers = parse_layers(args.layers);
  check_output_file(args.output, {}, "-o");
  remove_stale_temp_files(std::filesystem::path(args.output).parent_path().string());
  const Batch batch = generate_batch(args.options);
  write_batch(args.output, batch);
  std::printf("wrote %s: %s, content ID %s\n", args.output.c_str(), batch.description.c_str(),
              content_id(batch).c_str());
}

std::string preset_list() {
  std::string list;
  for (const std::string& name : preset_names()) list += (list.empty() ? "" : ", ") + name;
  return list;
}

}  // namespace

void add_generate_command(CLI::App& app) {
  auto args = std::make_shared<GenerateArgs>();
  auto* cmd = app.add_subcommand("generate", "Write a synthetic batch file from a preset (same preset and seed: same file)");
  cmd->add_option("--preset", args->options.preset, "Preset: " + preset_list())->required();
  cmd->add_option("--seed", args->options.seed, "Seed (default 0)")->check(CLI::NonNegativeNumber);
  cmd->add_option("-o,--output", args->output, "Batch file to write (atomically)")->required();
  cmd->add_option("--requests", args->options.requests, "Number of requests (smoke, sglang-test, chunk-256k)");
  cmd->add_option("--rows-per-request", args->options.rows_per_request,
                  "Query rows per request (smoke, sglang-test, chunk-256k)");
  cmd->add_option("--context", args->options.context,
                  "Compressed length of the longest request (smoke, sglang-test, chunk-256k)");
  cmd->add_option("--layers", args->layers,
                  "Comma-separated layer ids, e.g. 20,24,28 (ratio-1 presets must include the source 20)");
  cmd->callback([cmd, args] { run_generate(*cmd, *args); });
}

}  // namespace dsa::cli
