#pragma once
// Each subcommand lives in its own file and registers itself on the root app. Callbacks store
// their exit code in `exit_code` (core/exit_codes.hpp) or throw InputError /
// EnvironmentError, which main() turns into one line and exit code 4.
#include <CLI/CLI.hpp>

namespace dsa::cli {

extern int exit_code;

void add_generate_command(CLI::App& app);  // cmd_generate.cpp
void add_inspect_command(CLI::App& app);   // cmd_inspect.cpp (inspect, validate)
void add_run_command(CLI::App& app);       // cmd_run.cpp
void add_record_command(CLI::App& app);    // cmd_record.cpp
void add_compare_command(CLI::App& app);   // cmd_compare.cpp
void add_replay_command(CLI::App& app);    // cmd_replay.cpp
void add_gate_command(CLI::App& app);      // cmd_gate.cpp
void add_merge_command(CLI::App& app);     // cmd_merge.cpp
void add_plugin_host_command(CLI::App& app);  // cmd_plugin_host.cpp (internal: plugin:PATH's child)
void add_bench_command(CLI::App& app);     // cmd_bench.cpp

}  // namespace dsa::cli
