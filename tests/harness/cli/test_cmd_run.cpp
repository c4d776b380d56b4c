// run: the result file never replaces the input batch or a device, and empty --rows is refused.
#include <sys/stat.h>

#include <filesystem>

#include "tests/catch.hpp"
#include "tests/harness/cli/cli_run.hpp"

using namespace dsa::test;
namespace fs = std::filesystem;

TEST_CASE("run: -o naming the input (by any path) is refused, the input untouched") {
  Scratch dir("run-in");
  const std::string batch = dir.sub("smoke.h5");
  fs::copy_file(std::string(DSA_FIXTURES_DIR) + "/smoke.h5", batch);
  const auto size = fs::file_size(batch);
  fs::create_symlink(batch, dir.sub("link.h5"));
  for (const std::string& out : {batch, dir.sub("link.h5"), dir.path.string() + "/./smoke.h5"}) {
    const CliResult r = cli("run " + batch + " --impl reference-sparse --rows 2 -o " + out);
    INFO(out << "\n" << r.output);
    CHECK(r.code == 4);
    CHECK(has(r.output, "refusing to overwrite an input"));
  }
  CHECK(fs::file_size(batch) == size);
  CHECK(cli("validate " + batch).code == 0);
}

// A named pipe stands for the device: a build without the guard (DSA_TEST_BINARY) running as
// root would replace a real /dev/null with a regular file, machine-wide.
TEST_CASE("run: -o naming a device or pipe is refused; empty --rows and a negative --seed exit 4") {
  Scratch dir("run-dev");
  const std::string smoke = std::string(DSA_FIXTURES_DIR) + "/smoke.h5";
  const std::string pipe = dir.sub("pipe");
  REQUIRE(::mkfifo(pipe.c_str(), 0600) == 0);
  CliResult r = cli("run " + smoke + " --impl reference-sparse --rows 2 -o " + pipe);
  CHECK(r.code == 4);
  CHECK(has(r.output, pipe + ": -o: exists and is not a regular file"));
  CHECK(fs::is_fifo(pipe));
  r = cli("run " + smoke + " --impl reference-sparse --rows '' -o " + dir.sub("a.h5"));
  CHECK(r.code == 4);
  CHECK(has(r.output, "--rows"));
  CHECK(cli("run " + smoke + " --impl reference-sparse --rows 2 --seed -1 -o " + dir.sub("b.h5")).code == 4);
  CHECK(cli("run " + smoke + " --impl reference-sparse --rows 2 -o " + dir.sub("c.h5")).code == 0);
}
