// Placeholder until the replay subcommand lands; replaced by its real implementation.
#include "harness/cli/commands.hpp"
#include "harness/core/errors.hpp"

namespace dsa::cli {
void add_replay_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("replay", "(not built yet)");
  cmd->callback([] { throw EnvironmentError("'replay' is not available in this build yet"); });
}
}  // namespace dsa::cli
