// The rule constants (core/rules.hpp) hold the public test's numbers, and each threshold sits
// exactly where docs/rules.md says: a row at the threshold passes, one just short of it fails.
// The numbers are written out here on purpose: a changed constant must fail this file.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <tuple>
#include <vector>

#include "core/rules.hpp"
#include "harness/compare/compare.hpp"
#include "harness/compare/metrics.hpp"
#include "tests/catch.hpp"

using namespace dsa;
using namespace dsa::metrics;

namespace {

// One row of width `n`: reference picks 0..n-1, the other side the same with its last `changed`
// picks replaced by n..n+changed-1.
struct AgreementRow {
  std::vector<int32_t> ref, got;
  AgreementRow(int n, int changed) : ref(size_t(n)), got(size_t(n)) {
    std::iota(ref.begin(), ref.end(), 0);
    std::iota(got.begin(), got.end(), 0);
    for (int i = 0; i < changed; ++i) got[size_t(n - 1 - i)] = n + i;
    std::sort(got.begin(), got.end());
  }
  int64_t failures(double threshold) const {
    const std::vector<RowRef> rows = {{0, 0, 1 << 20}};
    return set_agreement(rows, positions_table(got, int(got.size())), positions_table(ref, int(ref.size())), threshold)
        .failures;
  }
};

}  // namespace

TEST_CASE("the rule constants are the public test's numbers") {
  CHECK(rules::kFloorTolerance == 0.03125);  // 2^-5
  CHECK(rules::kPublicAgreement == 0.95);
  CHECK(rules::kPublicTailOverlap == 0.98);
  CHECK(rules::kOwnPathExact == 1.0);
  CHECK(rules::kValidityMinimum == 1.0);
}

TEST_CASE("compare's default floor tolerance is the rules' 2^-5") { CHECK(CompareOptions{}.tolerance == 0.03125); }

TEST_CASE("public agreement: a row at exactly 95 % passes, one at 94.99 % fails") {
  CHECK(AgreementRow(20, 1).failures(rules::kPublicAgreement) == 0);         // 19/20 = 0.95
  CHECK(AgreementRow(10000, 501).failures(rules::kPublicAgreement) == 1);    // 0.9499
  CHECK(AgreementRow(10000, 500).failures(rules::kPublicAgreement) == 0);    // 0.95
}

TEST_CASE("tail overlap: a tail at exactly 98 % passes, one at 97.99 % fails") {
  const std::vector<RowRef> tail = {{0, 0, 1 << 20}};
  for (auto [n, changed, failures] : {std::tuple{50, 1, 0}, std::tuple{10000, 201, 1}, std::tuple{10000, 200, 0}}) {
    const AgreementRow r(n, changed);
    INFO(n << " picks, " << changed << " changed");
    CHECK(tail_agreement(tail, positions_table(r.got, n), positions_table(r.ref, n), rules::kPublicTailOverlap).failures ==
          failures);
  }
}

TEST_CASE("own path: one changed pick in 10000 is already a failure") {
  CHECK(AgreementRow(10000, 0).failures(rules::kOwnPathExact) == 0);
  CHECK(AgreementRow(10000, 1).failures(rules::kOwnPathExact) == 1);
}
