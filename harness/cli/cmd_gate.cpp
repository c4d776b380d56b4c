// Placeholder until the gate subcommand lands; replaced by its real implementation.
#include "harness/cli/commands.hpp"
#include "harness/core/errors.hpp"

namespace dsa::cli {
void add_gate_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("gate", "(not built yet)");
  cmd->callback([] { throw EnvironmentError("'gate' is not available in this build yet"); });
}
}  // namespace dsa::cli
