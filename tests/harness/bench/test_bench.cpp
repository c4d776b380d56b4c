// The bench's option checks (before any GPU work, so they run in CI) and its refusal without a
// usable GPU: exit 4 saying why (EnvironmentError), no report written.
#include "harness/bench/bench.hpp"

#include <stdlib.h>
#include <unistd.h>

#include <filesystem>

#include "core/errors.hpp"
#include "gpu/gpu_implementations.hpp"
#include "tests/catch.hpp"

using namespace dsa;

TEST_CASE("bench options: each bad option is refused naming it and its rule") {
  const struct { void (*change)(BenchOptions&); const char* message; } bad[] = {
      {[](BenchOptions& o) { o.samples = 5; }, "--repeat: 5: must be in [20, 1000]"},
      {[](BenchOptions& o) { o.rows = 0; }, "--rows: 0: must be >= 1 (0: all rows, only with batch files)"},
      {[](BenchOptions& o) { o.contexts = {16384, 0}; }, "--contexts: 0: must be >= 1"},
      {[](BenchOptions& o) { o.contexts.clear(); }, "--contexts: \"\": names no context length"},
      {[](BenchOptions& o) { o.peer = "jax"; }, "--peer: jax: must be torch (or left out)"},
      {[](BenchOptions& o) { o.inputs = {"/nonexistent/b.h5"}; }, "/nonexistent/b.h5: batch file: does not exist"},
      {[](BenchOptions& o) { o.out_dir.clear(); }, "-o: \"\": is empty"},
  };
  for (const auto& b : bad) {
    BenchOptions o;
    b.change(o);
    CHECK_THROWS_WITH(check_bench_options(o), dsa_test::starts_with(b.message));
  }
  BenchOptions files;
  files.inputs = {std::string(DSA_FIXTURES_DIR) + "/smoke.h5"};
  files.rows = 0;  // all rows of a file
  CHECK_NOTHROW(check_bench_options(files));
}

TEST_CASE("bench without a usable GPU: an environment error saying why, and no report") {
  // Hide any GPU (this process has not touched CUDA before: the option checks above do not), so
  // the refusal is tested on the GPU box too.
  ::setenv("CUDA_VISIBLE_DEVICES", "", 1);
  const std::string why = gpu::unavailable_reason();
  REQUIRE_FALSE(why.empty());
  BenchOptions o;
  o.contexts = {1024};
  o.rows = 4;
  o.progress = nullptr;
  o.out_dir = (std::filesystem::temp_directory_path() / ("dsa-bench-" + std::to_string(::getpid()))).string();
  CHECK_THROWS_AS(run_bench(o), EnvironmentError);
  CHECK_THROWS_WITH(run_bench(o), "bench: needs a CUDA GPU the kernels were built for: " + why);
  CHECK_FALSE(std::filesystem::exists(o.out_dir + "/report.json"));
}
