// core/exit_codes.cpp: verdicts map to exit codes one way, and the most severe code wins.
#include "core/exit_codes.hpp"
#include "tests/catch.hpp"

using namespace dsa;

TEST_CASE("a verdict's exit code: only passed is 0", "[core][exit]") {
  CHECK(exit_code_of(Disposition::passed) == kExitPass);
  CHECK(exit_code_of(Disposition::incorrect) == kExitIncorrect);
  CHECK(exit_code_of(Disposition::inconclusive) == kExitInconclusive);
  CHECK(exit_code_of(Disposition::not_run) == kExitInconclusive);
  CHECK(exit_code_of(Disposition::not_supported) == kExitInconclusive);
}

TEST_CASE("worse orders invalid > incorrect > regression > inconclusive > pass", "[core][exit]") {
  const ExitCode order[] = {kExitPass, kExitInconclusive, kExitRegression, kExitIncorrect, kExitInvalid};
  for (int i = 0; i < 5; ++i)
    for (int j = 0; j < 5; ++j) {
      INFO(exit_code_name(order[i]) << " vs " << exit_code_name(order[j]));
      CHECK(worse(order[i], order[j]) == order[std::max(i, j)]);
    }
  CHECK(std::string(exit_code_name(kExitRegression)) == "performance regression");
}
