// `dsa-harness plugin-host LIBRARY BATCH` (not listed in --help): the child process in which
// plugin:LIBRARY runs (harness/impls/plugin.cpp starts it). Rows to compute come on stdin ("all"
// or row numbers), the encoded Results go to stdout, the steps reached and errors to stderr.
#include <unistd.h>

#include <cstdio>
#include <iostream>

#include "core/errors.hpp"
#include "harness/batch/batch_io.hpp"
#include "harness/cli/commands.hpp"
#include "harness/impls/plugin_host.hpp"
#include "harness/impls/plugin_wire.hpp"

namespace dsa::cli {

namespace {

std::vector<int> rows_from_stdin(const Batch& batch) {
  std::vector<int> rows;
  std::string word;
  while (std::cin >> word) {
    if (word == "all") return {};
    const int r = std::stoi(word);
    if (r < 0 || r >= batch.rows()) throw InputError("plugin-host", "stdin", "row " + word + " is not in the batch");
    rows.push_back(r);
  }
  return rows;
}

// The plugin may print to stdout; only the encoded results may reach the parent's stdout file.
int keep_stdout_for_results() {
  std::fflush(stdout);
  const int results = ::dup(1);
  ::dup2(2, 1);
  return results;
}

}  // namespace

void add_plugin_host_command(CLI::App& app) {
  auto library = std::make_shared<std::string>();
  auto batch_path = std::make_shared<std::string>();
  auto* cmd = app.add_subcommand("plugin-host", "run a plugin in this process (started by --impl plugin:PATH)");
  cmd->group("");  // internal: hidden from --help
  cmd->add_option("library", *library, "the plugin's shared library")->required();
  cmd->add_option("batch", *batch_path, "the batch file")->required();
  cmd->callback([library, batch_path] {
    const Batch batch = read_batch(*batch_path);
    RunOptions options;
    options.rows = rows_from_stdin(batch);
    const int results_fd = keep_stdout_for_results();
    const std::string bytes = encode_results(run_plugin_here(*library, batch, options, stderr));
    for (size_t done = 0; done < bytes.size();) {
      const ssize_t n = ::write(results_fd, bytes.data() + done, bytes.size() - done);
      if (n <= 0) throw EnvironmentError("plugin-host: cannot write the results to the parent");
      done += size_t(n);
    }
    exit_code = kExitPass;
  });
}

}  // namespace dsa::cli
