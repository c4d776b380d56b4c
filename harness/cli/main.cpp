// dsa-harness: reference, GPU implementations, replay and reports for DeepSeek-V4.1's
// two-level sparse indexer.
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <new>

#include "harness/cli/commands.hpp"
#include "core/errors.hpp"
#include "core/memory_budget.hpp"
#include "harness/replay/environment.hpp"

namespace dsa::cli {
int exit_code = kExitPass;
}

namespace {

// --memory-budget SIZE sets DSA_MEMORY_BUDGET, so the replay's per-device children inherit it.
void set_memory_budget(const std::string& text) {
  uint64_t bytes = 0;
  if (!dsa::parse_size(text, &bytes))
    throw dsa::InputError("--memory-budget", text, "is not a size such as 2G or 512M");
  ::setenv("DSA_MEMORY_BUDGET", text.c_str(), 1);
}

constexpr const char* kExitCodes =
    "Exit codes: 0 pass, 1 correctness failure, 2 performance regression, 3 inconclusive,\n"
    "4 invalid input or environment problem.";
}

int main(int argc, char** argv) {
  CLI::App app{"dsa-harness: check and time implementations of DeepSeek-V4.1's two-level sparse indexer"};
  app.footer(kExitCodes);
  app.require_subcommand(1);
  app.set_version_flag("--version", dsa::version_text());
  app.fallthrough();  // --memory-budget may also follow the subcommand
  app.add_option_function<std::string>("--memory-budget", set_memory_budget,
                                       "memory one run may plan to hold: files and generated batches larger than "
                                       "this are refused before reading (default: DSA_MEMORY_BUDGET, else half of RAM)");
  dsa::cli::add_generate_command(app);
  dsa::cli::add_inspect_command(app);
  dsa::cli::add_run_command(app);
  dsa::cli::add_record_command(app);
  dsa::cli::add_compare_command(app);
  dsa::cli::add_replay_command(app);
  dsa::cli::add_gate_command(app);
  dsa::cli::add_merge_command(app);
  dsa::cli::add_plugin_host_command(app);
  dsa::cli::add_bench_command(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc == 0 ? 0 : dsa::kExitInvalid;
  } catch (const dsa::InputError& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return dsa::kExitInvalid;
  } catch (const dsa::EnvironmentError& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return dsa::kExitInvalid;
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "error: out of memory\n");
    return dsa::kExitInvalid;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return dsa::kExitInvalid;
  }
  return dsa::cli::exit_code;
}
