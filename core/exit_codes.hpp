#pragma once
// Every exit code of dsa-harness, in one place (documented in README.md and --help).

namespace dsa {

enum ExitCode : int {
  kExitPass = 0,          // everything compared passed
  kExitIncorrect = 1,     // a correctness failure
  kExitRegression = 2,    // a performance regression (gate)
  kExitInconclusive = 3,  // the gate cannot tell (inside the noise, missing data)
  kExitInvalid = 4,       // invalid input or environment problem
};

}  // namespace dsa
