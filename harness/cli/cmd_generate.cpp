// Placeholder until the generate subcommand lands; replaced by its real implementation.
#include "harness/cli/commands.hpp"
#include "harness/core/errors.hpp"

namespace dsa::cli {
void add_generate_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("generate", "(not built yet)");
  cmd->callback([] { throw EnvironmentError("'generate' is not available in this build yet"); });
}
}  // namespace dsa::cli
