// The JSONL case log: a kill keeps finished runs, a torn last line is dropped, resuming with
// other settings is refused.
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "core/errors.hpp"
#include "harness/replay/case_log.hpp"
#include "tests/catch.hpp"
#include "tests/reports/sample_report.hpp"

using namespace dsa;
namespace fs = std::filesystem;

TEST_CASE("case log: finished runs survive, torn lines and unfinished runs do not") {
  const fs::path dir = fs::temp_directory_path() / ("dsa-log-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  const Report r = test::sample_report();
  RunSettings settings;
  settings.rows = "16";
  {
    CaseLog log(dir.string(), settings, false);
    log.append(r.runs[1], {r.cases[0]});
    CHECK(log.finished(r.runs[1].batch_id, r.runs[1].impl));
  }
  // A second run was killed: its case line was written, its run line torn mid-write.
  {
    std::ofstream out(dir / "cases.jsonl", std::ios::app);
    out << "{\"type\":\"case\",\"case\":" << case_to_json(r.cases[1]).dump() << "}\n";
    out << "{\"type\":\"run\",\"run\":{\"batch_id\":\"bbbb";
  }
  {
    CaseLog log(dir.string(), settings, true);
    CHECK(log.finished(r.runs[1].batch_id, r.runs[1].impl));
    CHECK_FALSE(log.finished(r.cases[1].batch_id, r.cases[1].impl));
    REQUIRE(log.earlier_runs().size() == 1);
    REQUIRE(log.earlier_cases().size() == 1);
    CHECK(case_to_json(log.earlier_cases()[0]) == case_to_json(r.cases[0]));
    log.append(r.runs[3], {r.cases[1]});
  }
  {
    CaseLog log(dir.string(), settings, true);
    CHECK(log.earlier_runs().size() == 2);
    CHECK(log.earlier_cases().size() == 2);
  }
  settings.seed = 9;
  CHECK_THROWS_AS(CaseLog(dir.string(), settings, true), InputError);
  // Without --resume the log starts over.
  {
    CaseLog log(dir.string(), settings, false);
    CHECK(log.earlier_runs().empty());
  }
  CHECK(CaseLog(dir.string(), settings, true).earlier_runs().empty());
  fs::remove_all(dir);
}

TEST_CASE("case log: a damaged line in the middle is an error, not silently skipped") {
  const fs::path dir = fs::temp_directory_path() / ("dsa-log-bad-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  RunSettings settings;
  { CaseLog log(dir.string(), settings, false); }
  {
    std::ofstream out(dir / "cases.jsonl", std::ios::app);
    out << "not json\n{\"type\":\"run\",\"run\":{}}\n";
  }
  CHECK_THROWS_AS(CaseLog(dir.string(), settings, true), InputError);
  fs::remove_all(dir);
}
