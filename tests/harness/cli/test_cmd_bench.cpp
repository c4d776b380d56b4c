// bench: option errors and the refusal without a GPU exit 4 at once with the reason (the GPU is
// hidden with CUDA_VISIBLE_DEVICES, so this holds on the GPU box too); no report is written.
#include <filesystem>

#include "tests/catch.hpp"
#include "tests/harness/cli/cli_run.hpp"

using namespace dsa::test;

TEST_CASE("bench: bad options exit 4 naming the option") {
  Scratch dir("bench-opts");
  const struct { std::string args, message; } bad[] = {
      {"--repeat 3", "--repeat: 3: must be in [20, 1000]"},
      {"--contexts 4096,-1", "--contexts: -1: must be >= 1"},
      {"--peer numpy", "--peer: numpy: must be torch"},
      {"--rows 0", "--rows: 0: must be >= 1"},
  };
  for (const auto& b : bad) {
    const CliResult r = cli("bench " + b.args + " -o " + dir.sub("out"));
    INFO(b.args << "\n" << r.output);
    CHECK(r.code == 4);
    CHECK(has(r.output, b.message));
    CHECK_FALSE(std::filesystem::exists(dir.sub("out/report.json")));
  }
}

TEST_CASE("bench: without a GPU it exits 4 saying why") {
  Scratch dir("bench-nogpu");
  const CliResult r = cli("bench --contexts 2048 --rows 8 -o " + dir.sub("out"), "CUDA_VISIBLE_DEVICES=");
  INFO(r.output);
  CHECK(r.code == 4);
  CHECK(has(r.output, "error: bench: needs a CUDA GPU the kernels were built for: "));
  // The reason itself: "this build has no CUDA" or "no CUDA device (...)".
  CHECK(has(r.output, "no CUDA"));
  CHECK(r.seconds < 5.0);
  CHECK_FALSE(std::filesystem::exists(dir.sub("out/report.json")));
}
