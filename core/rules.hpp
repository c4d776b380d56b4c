#pragma once
// Every threshold a verdict depends on, in one place (docs/rules.md explains each one and where
// it comes from). The public test's numbers are sglang's kernel test for the DeepSeek-V4.1
// indexer (SM100 DeepGEMM path); the own-path numbers follow from "bit-faithful". Nothing else
// in the harness may spell these values: tests pin them at both sides of each threshold, and
// tools/mutants.sh checks that weakening any of them fails the suite. The values live in
// core/rules.cpp so that a changed value rebuilds one file, not every user of this header.
namespace dsa::rules {

// Selection floor (public test): a pick fails when its fp32 dense score is below
// floor - tol*|floor|, an unpicked candidate when above floor + tol*|floor|. tol = 2^-5.
extern const double kFloorTolerance;

// Public test: per row, at least this share of the mask path's picks is also picked.
extern const double kPublicAgreement;

// Public test: a tail table's picks overlap the full table's picks of the same rows by this much.
extern const double kPublicTailOverlap;

// Own-path rule: agreement, tie-aware exactness and bitwise scores must be 100 % of the rows.
extern const double kOwnPathExact;

// Every rule: the share of rows whose picks are valid (in range, unique, min(k, L) of them,
// inside the published blocks) must be 100 %.
extern const double kValidityMinimum;

}  // namespace dsa::rules
