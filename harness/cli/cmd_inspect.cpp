// Placeholder until the inspect subcommand lands; replaced by its real implementation.
#include "harness/cli/commands.hpp"
#include "harness/core/errors.hpp"

namespace dsa::cli {
void add_inspect_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("inspect", "(not built yet)");
  cmd->callback([] { throw EnvironmentError("'inspect' is not available in this build yet"); });
}
}  // namespace dsa::cli
