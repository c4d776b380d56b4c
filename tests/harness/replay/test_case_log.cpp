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

TEST_CASE("case log: a run logged twice counts its cases once") {
  const fs::path dir = fs::temp_directory_path() / ("dsa-log-dup-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  const Report r = test::sample_report();
  RunSettings settings;
  {
    CaseLog log(dir.string(), settings, false);
    log.append(r.runs[1], {r.cases[0]});
  }
  // The complete lines of that run copied once more (two logs concatenated, a replayed append).
  std::ifstream in(dir / "cases.jsonl");
  std::string first, case_line, run_line;
  std::getline(in, first);
  std::getline(in, case_line);
  std::getline(in, run_line);
  in.close();
  std::ofstream(dir / "cases.jsonl", std::ios::app) << case_line << "\n" << case_line << "\n" << run_line << "\n";
  CaseLog log(dir.string(), settings, true);
  CHECK(log.earlier_runs().size() == 1);
  CHECK(log.earlier_cases().size() == 1);
  fs::remove_all(dir);
}

TEST_CASE("case log: resuming a log of other inputs or implementations is refused") {
  const fs::path dir = fs::temp_directory_path() / ("dsa-log-scope-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  RunSettings settings;
  const nlohmann::json mine = {{"inputs", {"/data/a.h5"}}, {"impls", {"reference-sparse"}}};
  { CaseLog log(dir.string(), settings, false, mine); }
  CHECK_NOTHROW(CaseLog(dir.string(), settings, true, mine));
  const nlohmann::json other = {{"inputs", {"/data/b.h5"}}, {"impls", {"reference-sparse"}}};
  std::string message;
  try {
    CaseLog log(dir.string(), settings, true, other);
  } catch (const InputError& e) {
    message = e.what();
  }
  CHECK(message.find("cases.jsonl: scope: written by a run of other inputs") != std::string::npos);
  CHECK(message.find("a.h5") != std::string::npos);
  fs::remove_all(dir);
}
