#pragma once
// Every threshold a verdict depends on, in one place (docs/rules.md explains each one and where
// it comes from). The public test's numbers are sglang's kernel test for the DeepSeek-V4.1
// indexer (SM100 DeepGEMM path); the own-path numbers follow from "bit-faithful". Nothing else
// in the harness may spell these values: tests pin them at both sides of each threshold, and
// tools/mutants.sh checks that weakening any of them fails the suite.
namespace dsa::rules {

// Selection floor (public test): a pick fails when its fp32 dense score is below
// floor - tol*|floor|, an unpicked candidate when above floor + tol*|floor|. tol = 2^-5.
constexpr double kFloorTolerance = 1.0 / 32;

// Public test: per row, at least this share of the mask path's picks is also picked.
constexpr double kPublicAgreement = 0.95;

// Public test: a tail table's picks overlap the full table's picks of the same rows by this much.
constexpr double kPublicTailOverlap = 0.98;

// Own-path rule: agreement, tie-aware exactness and bitwise scores must be 100 % of the rows.
constexpr double kOwnPathExact = 1.0;

// Every rule: the share of rows whose picks are valid (in range, unique, min(k, L) of them,
// inside the published blocks) must be 100 %.
constexpr double kValidityMinimum = 1.0;

}  // namespace dsa::rules
