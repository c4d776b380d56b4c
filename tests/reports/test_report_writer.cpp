// Golden report snapshots: the references replayed on the committed fixtures give exactly the
// committed report.json, report.md and junit.xml once volatile fields (timestamps, durations,
// host, commit, kernel timings, the checkout's path) are masked. Regenerate after an intended
// change with DSA_UPDATE_GOLDEN=1 (then review the diff). Also: reports are written atomically.
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/errors.hpp"
#include "harness/replay/replay.hpp"
#include "reports/printers.hpp"
#include "tests/catch.hpp"
#include "tests/reports/sample_report.hpp"

using namespace dsa;
namespace fs = std::filesystem;

namespace {

const std::string kGolden = std::string(DSA_SOURCE_DIR) + "/tests/reports/golden/";

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string replace_all(std::string text, const std::string& from, const std::string& to) {
  for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size()))
    text.replace(at, from.size(), to);
  return text;
}

// The fixtures' folder differs between checkouts.
std::string unrooted(const std::string& text) { return replace_all(text, DSA_FIXTURES_DIR, "<fixtures>"); }

void check_golden(const std::string& name, const std::string& actual) {
  const std::string path = kGolden + name;
  if (std::getenv("DSA_UPDATE_GOLDEN")) {
    reports::write_text_atomic(path, actual);
    WARN("updated " << path);
    return;
  }
  REQUIRE(fs::exists(path));
  const std::string expected = read_text(path);
  if (expected != actual) {
    const std::string dump = fs::temp_directory_path() / ("actual-" + name);
    reports::write_text_atomic(dump, actual);
    FAIL(name << " differs from its golden snapshot; actual written to " << dump
              << " (DSA_UPDATE_GOLDEN=1 regenerates after an intended change)");
  }
}

}  // namespace

TEST_CASE("reports: golden snapshots of the references on the fixtures") {
  const fs::path out = fs::temp_directory_path() / ("dsa-golden-" + std::to_string(::getpid()));
  ReplayOptions o;
  o.inputs = {DSA_FIXTURES_DIR};
  o.impls = {"reference-sparse", "reference-mask", "reference-exact"};
  o.out_dir = out.string();
  o.progress = nullptr;
  o.shard = Shard{};
  const Report report = run_replay(o);
  CHECK(report.exit_code == kExitPass);
  const nlohmann::json masked = mask_volatile(report_to_json(report));
  const Report stable = report_from_json(masked, "masked");
  check_golden("report.json", unrooted(masked.dump(1) + "\n"));
  check_golden("report.md", unrooted(reports::to_markdown(stable)));
  check_golden("junit.xml", unrooted(reports::to_junit(stable)));
  // What replay wrote is what the printers print.
  CHECK(read_text(out.string() + "/report.md") == reports::to_markdown(report));
  fs::remove_all(out);
}

TEST_CASE("reports: all four files are written atomically, nothing temporary left behind") {
  const fs::path dir = fs::temp_directory_path() / ("dsa-write-" + std::to_string(::getpid())) / "nested";
  const Report r = test::sample_report(1.0, true);
  reports::write_reports(r, dir.string());
  for (const char* name : {"report.json", "report.md", "junit.xml", "report.html"}) CHECK(fs::exists(dir / name));
  int files = 0;
  for (const auto& e : fs::directory_iterator(dir)) {
    (void)e;
    ++files;
  }
  CHECK(files == 4);
  CHECK(read_report((dir / "report.json").string()).cases.size() == r.cases.size());
  fs::remove_all(dir.parent_path());
  // An unwritable folder is an environment error, not a crash.
  CHECK_THROWS_AS(reports::write_reports(r, "/proc/dsa-cannot-write-here"), EnvironmentError);
}
