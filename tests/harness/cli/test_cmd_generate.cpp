// generate: every size option is range-checked and the projected batch checked against the
// memory budget before anything is built; outputs that are devices are refused.
#include <sys/stat.h>

#include <filesystem>

#include "tests/catch.hpp"
#include "tests/harness/cli/cli_run.hpp"

using namespace dsa::test;

TEST_CASE("generate: size options out of range exit 4 at once, naming the option") {
  Scratch dir("gen");
  const std::string out = dir.sub("b.h5");
  const struct { std::string args, option; } bad[] = {
      {"--preset smoke --requests -1", "--requests: must be >= 1 (got -1)"},
      {"--preset smoke --requests 0", "--requests: must be >= 1 (got 0)"},
      {"--preset smoke --requests 1000000000", "--requests: must be in [1, 65536]"},
      {"--preset smoke --rows-per-request -5", "--rows-per-request: must be >= 1"},
      {"--preset chunk-256k --context 2000000000", "--context: must be in [1, 16777216]"},
      {"--preset chunk-256k --requests 4096", "--requests: 4096 requests of 16384 rows exceed 16777216 rows"},
      {"--preset smoke --seed -1", "--seed"},
  };
  for (const auto& b : bad) {
    const CliResult r = cli("generate " + b.args + " -o " + out);
    INFO(b.args << "\n" << r.output);
    CHECK(r.code == 4);
    CHECK(has(r.output, b.option));
    CHECK(r.seconds < 1.0);
    CHECK_FALSE(std::filesystem::exists(out));
  }
}

TEST_CASE("generate: a batch larger than the memory budget is refused before it is built") {
  Scratch dir("gen-budget");
  const CliResult r = cli("generate --preset chunk-256k --requests 8 -o " + dir.sub("b.h5"), "DSA_MEMORY_BUDGET=256M");
  INFO(r.output);
  CHECK(r.code == 4);
  CHECK(has(r.output, "over the memory budget of 256.0 MiB"));
  CHECK(r.seconds < 1.0);
  CHECK(cli("generate --preset smoke --requests 3 -o " + dir.sub("ok.h5"), "DSA_MEMORY_BUDGET=256M").code == 0);
}

// A named pipe stands for the device (see test_cmd_run.cpp: never /dev/null itself).
TEST_CASE("generate: an output that is a device, pipe or folder is refused") {
  Scratch dir("gen-dev");
  const std::string pipe = dir.sub("pipe");
  REQUIRE(::mkfifo(pipe.c_str(), 0600) == 0);
  CliResult r = cli("generate --preset smoke -o " + pipe);
  CHECK(r.code == 4);
  CHECK(has(r.output, pipe + ": -o: exists and is not a regular file"));
  CHECK(std::filesystem::is_fifo(pipe));
  r = cli("generate --preset smoke -o " + dir.path.string());
  CHECK(r.code == 4);
}
