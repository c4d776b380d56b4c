// Placeholder until the compare subcommand lands; replaced by its real implementation.
#include "harness/cli/commands.hpp"
#include "harness/core/errors.hpp"

namespace dsa::cli {
void add_compare_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("compare", "(not built yet)");
  cmd->callback([] { throw EnvironmentError("'compare' is not available in this build yet"); });
}
}  // namespace dsa::cli
