#include "core/rules.hpp"

// The values of docs/rules.md; tests/harness/test_rules.cpp writes them out again.
namespace dsa::rules {

const double kFloorTolerance = 1.0 / 32;  // 2^-5
const double kPublicAgreement = 0.95;
const double kPublicTailOverlap = 0.98;
const double kOwnPathExact = 1.0;
const double kValidityMinimum = 1.0;

}  // namespace dsa::rules
