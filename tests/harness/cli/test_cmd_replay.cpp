// replay as a hostile user drives it: a busy report folder, resuming another batch's log,
// nothing compared, leftover temp files, and options that must be refused.
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "core/files.hpp"
#include "reports/report_model.hpp"
#include "tests/catch.hpp"
#include "tests/harness/cli/cli_run.hpp"

using namespace dsa::test;
namespace fs = std::filesystem;

namespace {
const std::string kFixtures = DSA_FIXTURES_DIR;
const std::string kQuick = " --impl reference-sparse,reference-mask --rows 3 ";
}  // namespace

TEST_CASE("replay: a report folder another run is writing is refused, naming it") {
  Scratch dir("busy");
  const std::string out = dir.sub("rep");
  fs::create_directories(out);
  dsa::FolderLock held(out);  // the other run
  const CliResult r = cli("replay " + kFixtures + "/smoke.h5" + kQuick + "-o " + out);
  INFO(r.output);
  CHECK(r.code == 4);
  CHECK(has(r.output, out + ": -o: is busy"));
  CHECK_FALSE(fs::exists(out + "/cases.jsonl"));
}

TEST_CASE("replay: --resume in a folder of another batch is refused, not mixed into the verdict") {
  Scratch dir("foreign");
  const std::string out = dir.sub("rep");
  REQUIRE(cli("replay " + kFixtures + "/edge.h5" + kQuick + "-o " + out).code == 0);
  const CliResult r = cli("replay " + kFixtures + "/smoke.h5" + kQuick + "--resume -o " + out);
  INFO(r.output);
  CHECK(r.code == 4);
  CHECK(has(r.output, "cases.jsonl: scope: written by a run of other inputs"));
  // The same inputs resume fine, and every case counts once.
  const int cases = int(dsa::read_report(out + "/report.json").cases.size());
  CHECK(cli("replay " + kFixtures + "/edge.h5" + kQuick + "--resume -o " + out).code == 0);
  CHECK(int(dsa::read_report(out + "/report.json").cases.size()) == cases);
}

TEST_CASE("replay: a run that compared nothing is inconclusive (exit 3), not 0/0 passed") {
  Scratch dir("nothing");
  const CliResult r = cli("replay " + kFixtures + "/smoke.h5 --impl reference-exact --rows 2 -o " + dir.sub("a"));
  INFO(r.output);
  CHECK(r.code == 3);
  CHECK(dsa::read_report(dir.sub("a") + "/report.json").exit_code == 3);
}

TEST_CASE("replay: temp files of killed runs in the folder are removed, live ones kept") {
  Scratch dir("stale");
  const std::string out = dir.sub("rep");
  fs::create_directories(out);
  const pid_t child = ::fork();
  if (child == 0) ::_exit(0);
  ::waitpid(child, nullptr, 0);
  const std::string dead = out + "/report.json.tmp-" + std::to_string(child);
  const std::string live = out + "/report.json.tmp-" + std::to_string(::getpid());
  std::ofstream(dead) << "{";
  std::ofstream(live) << "{";
  REQUIRE(cli("replay " + kFixtures + "/smoke.h5" + kQuick + "-o " + out).code == 0);
  CHECK_FALSE(fs::exists(dead));
  CHECK(fs::exists(live));
}

TEST_CASE("replay: hostile options exit 4 naming the option") {
  Scratch dir("opts");
  const std::string smoke = kFixtures + "/smoke.h5";
  const struct { std::string args, message; } bad[] = {
      {"--case ../../etc", "the batch ID '..' is not a content ID"},
      {"--case ''", "--case: \"\": is empty"},
      {"--rows ''", "--rows: \"\": is empty"},
      {"--seed -1", "--seed"},
      {"--tolerance inf", "--tolerance: inf: must be a finite number in [0, 1]"},
      {"--tolerance nan", "--tolerance"},
      {"--repeat 1000000", "--repeat: 1000000: must be in [1, 100]"},
      {"--repeat 0", "--repeat: 0: must be in [1, 100]"},
  };
  for (const auto& b : bad) {
    const CliResult r = cli("replay " + smoke + " --impl reference-sparse " + b.args + " -o " + dir.sub("x"));
    INFO(b.args << "\n" << r.output);
    CHECK(r.code == 4);
    CHECK(has(r.output, b.message));
  }
}

TEST_CASE("replay --repeat 20 on the fixtures: every CPU implementation's repeats are bitwise identical") {
  // DSA_REPLAY_REPEATS: fewer repeats where the same code runs again only for the sanitizers (the
  // asan test preset sets 3; every repeat is the same code); the determinism figure itself is the
  // plain build's 20.
  const char* env = std::getenv("DSA_REPLAY_REPEATS");
  const int repeats = env && *env ? std::atoi(env) : 20;
  REQUIRE(repeats >= 2);
  Scratch dir("repeat");
  const std::string out = dir.sub("rep");
  const CliResult r =
      cli("replay --impl reference-sparse,reference-mask,reference-exact --repeat " + std::to_string(repeats) + " -o " + out);
  INFO(r.output);
  REQUIRE(r.code == 0);
  const dsa::Report report = dsa::read_report(out + "/report.json");
  REQUIRE(report.runs.size() == 9);  // 3 fixtures x 3 implementations
  for (const dsa::ImplRun& run : report.runs) {
    INFO(run.impl << " on " << run.batch_id);
    CHECK(run.repeats == repeats);
    CHECK(run.deterministic == 1);
  }
}
