// The launch count is only as good as its coverage: every kernel launch in gpu/ (a `<<<`, in a .cu
// or in a header's launcher template) must be followed by its DSA_LAUNCH_CHECK, which does the
// counting (core/launch_count.hpp). A new launcher without one would make `bench` under-report
// launches per layer silently.
#include "core/launch_count.hpp"

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "tests/catch.hpp"

namespace {

int count(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + what.size())) ++n;
  return n;
}

}  // namespace

TEST_CASE("launch count: the counter adds up across threads") {
  const int64_t before = dsa::kernel_launches().load();
  dsa::kernel_launches()++;
  dsa::kernel_launches() += 2;
  CHECK(dsa::kernel_launches().load() - before == 3);
}

TEST_CASE("launch count: every kernel launch in gpu/ has its DSA_LAUNCH_CHECK") {
  int files = 0, launches = 0;
  for (const auto& e : std::filesystem::recursive_directory_iterator(std::string(DSA_SOURCE_DIR) + "/gpu")) {
    if (e.path().extension() != ".cu" && e.path().extension() != ".cuh") continue;
    if (e.path().filename() == "check.cuh") continue;  // defines the macro
    std::ifstream in(e.path());
    std::stringstream s;
    s << in.rdbuf();
    const int launch = count(s.str(), "<<<"), checked = count(s.str(), "DSA_LAUNCH_CHECK(");
    INFO(e.path().string());
    CHECK(launch == checked);
    ++files;
    launches += launch;
  }
  CHECK(files > 5);
  CHECK(launches > 10);
}
