// harness/replay/inputs.cpp: files and folders named on the command line, as batch files.
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "core/errors.hpp"
#include "harness/replay/inputs.hpp"
#include "tests/catch.hpp"
#include "tests/harness/replay/replay_fixture.hpp"

using namespace dsa;
using dsa::test::kFixtures;
namespace fs = std::filesystem;

TEST_CASE("inputs expand folders to their batch files, skipping fixtures/golden/") {
  const std::vector<std::string> files = expand_inputs({kFixtures});
  REQUIRE(files.size() >= 3);
  for (const std::string& f : files) {
    CHECK(f.find("/golden/") == std::string::npos);
    CHECK(fs::path(f).extension() == ".h5");
  }
  CHECK_THROWS_AS(expand_inputs({kFixtures + "/no-such.h5"}), InputError);
}

TEST_CASE("inputs: file_size of a fixture, and 0 for a missing file") {
  CHECK(file_size(kFixtures + "/smoke.h5") == fs::file_size(kFixtures + "/smoke.h5"));
  CHECK(file_size(kFixtures + "/no-such.h5") == 0);
}

TEST_CASE("inputs: a fixture with a copy in recorded/ is replaced by it; no arguments give the bundled ones") {
  const fs::path dir = fs::temp_directory_path() / ("dsa-inputs-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "recorded");
  for (const char* f : {"a.h5", "b.h5", "recorded/b.h5", "recorded/c.h5"}) std::ofstream(dir / f) << "x";
  // c.h5 has no fixture of its own, so it is not replayed: recorded/ only stands in.
  CHECK(fixture_files(dir.string()) ==
        std::vector<std::string>{(dir / "a.h5").string(), (dir / "recorded" / "b.h5").string()});
  fs::remove_all(dir);
  CHECK(expand_inputs({}) == fixture_files(kFixtures));
  CHECK(expand_inputs({}).size() == expand_inputs({kFixtures}).size());
}
