#pragma once
// Every exit code of dsa-harness and the one mapping from verdicts to them (documented in
// docs/exit-codes.md and in --help).
#include "core/records.hpp"

namespace dsa {

enum ExitCode : int {
  kExitPass = 0,          // everything compared passed
  kExitIncorrect = 1,     // a correctness failure
  kExitRegression = 2,    // a performance regression (gate)
  kExitInconclusive = 3,  // the gate cannot tell (inside the noise, missing data)
  kExitInvalid = 4,       // invalid input or environment problem
};

// The exit code of a verdict: passed 0, incorrect 1, anything else (inconclusive, not run, not
// supported) 3, because none of those is a pass.
ExitCode exit_code_of(Disposition verdict);

// The more severe of two exit codes: invalid > incorrect > regression > inconclusive > pass.
ExitCode worse(ExitCode a, ExitCode b);

// "pass", "correctness failure", "performance regression", "inconclusive",
// "invalid input or environment".
const char* exit_code_name(ExitCode code);

}  // namespace dsa
