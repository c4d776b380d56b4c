// run: the result file never replaces the input batch or a device, and empty --rows is refused.
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

TEST_CASE("run: -o naming a device is refused; empty --rows and a negative --seed exit 4") {
  Scratch dir("run-dev");
  const std::string smoke = std::string(DSA_FIXTURES_DIR) + "/smoke.h5";
  CliResult r = cli("run " + smoke + " --impl reference-sparse --rows 2 -o /dev/null");
  CHECK(r.code == 4);
  CHECK(has(r.output, "/dev/null: -o: exists and is not a regular file"));
  r = cli("run " + smoke + " --impl reference-sparse --rows '' -o " + dir.sub("a.h5"));
  CHECK(r.code == 4);
  CHECK(has(r.output, "--rows"));
  CHECK(cli("run " + smoke + " --impl reference-sparse --rows 2 --seed -1 -o " + dir.sub("b.h5")).code == 4);
  CHECK(cli("run " + smoke + " --impl reference-sparse --rows 2 -o " + dir.sub("c.h5")).code == 0);
}
