// Placeholder until the run subcommand lands; replaced by its real implementation.
#include "harness/cli/commands.hpp"
#include "harness/core/errors.hpp"

namespace dsa::cli {
void add_run_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("run", "(not built yet)");
  cmd->callback([] { throw EnvironmentError("'run' is not available in this build yet"); });
}
}  // namespace dsa::cli
