// Placeholder until the merge subcommand lands; replaced by its real implementation.
#include "harness/cli/commands.hpp"
#include "harness/core/errors.hpp"

namespace dsa::cli {
void add_merge_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("merge", "(not built yet)");
  cmd->callback([] { throw EnvironmentError("'merge' is not available in this build yet"); });
}
}  // namespace dsa::cli
