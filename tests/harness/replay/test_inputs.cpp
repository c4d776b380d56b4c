// harness/replay/inputs.cpp: files and folders named on the command line, as batch files.
#include <filesystem>

#include "core/errors.hpp"
#include "harness/replay/inputs.hpp"
#include "tests/catch.hpp"

using namespace dsa;
namespace fs = std::filesystem;

namespace {
const std::string kFixtures = DSA_FIXTURES_DIR;
}

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
