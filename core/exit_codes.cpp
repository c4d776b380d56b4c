#include "core/exit_codes.hpp"

namespace dsa {

ExitCode exit_code_of(Disposition verdict) {
  switch (verdict) {
    case Disposition::passed: return kExitPass;
    case Disposition::incorrect: return kExitIncorrect;
    default: return kExitInconclusive;
  }
}

// Severity is not the numeric order (4 is worst, then 1, 2, 3, 0).
static int severity(ExitCode code) {
  switch (code) {
    case kExitInvalid: return 4;
    case kExitIncorrect: return 3;
    case kExitRegression: return 2;
    case kExitInconclusive: return 1;
    case kExitPass: return 0;
  }
  return 4;
}

ExitCode worse(ExitCode a, ExitCode b) { return severity(a) >= severity(b) ? a : b; }

const char* exit_code_name(ExitCode code) {
  switch (code) {
    case kExitPass: return "pass";
    case kExitIncorrect: return "correctness failure";
    case kExitRegression: return "performance regression";
    case kExitInconclusive: return "inconclusive";
    case kExitInvalid: return "invalid input or environment";
  }
  return "?";
}

}  // namespace dsa
