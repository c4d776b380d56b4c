// gate.md on constructed reports: the verdict line, what regressed and by how much against the
// noise, the rerun command of each failing case, and a table no finding can break.
#include "core/exit_codes.hpp"
#include "harness/gate/gate_markdown.hpp"
#include "tests/catch.hpp"
#include "tests/reports/sample_report.hpp"

using namespace dsa;

namespace {

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace

TEST_CASE("gate.md: a pass says so and lists no finding") {
  const Report base = test::sample_report();
  const std::string md = gate_markdown(run_gate(base, base, GateConfig{}), base, base);
  INFO(md);
  CHECK(has(md, "## dsa-harness gate: PASS (exit 0)"));
  CHECK(has(md, "2 case(s) and 4 kernel(s) compared"));
  CHECK(!has(md, "| finding |"));
  CHECK(!has(md, "Rerun"));
}

TEST_CASE("gate.md: a correctness failure names the case, the metric and its rerun line") {
  const Report base = test::sample_report(), cur = test::sample_report(1.0, true);
  const std::string md = gate_markdown(run_gate(base, cur, GateConfig{}), base, cur);
  INFO(md);
  CHECK(has(md, "CORRECTNESS FAILURE (exit 1)"));
  CHECK(has(md, "must not merge"));
  CHECK(has(md, "| correctness failure | `bbbbbbbbbbbbbbbb/gpu-sparse/24` |"));
  CHECK(has(md, "row(s) violate the selection floor"));
  CHECK(has(md, "```\ndsa-harness replay fixtures/bbbbbbbbbbbbbbbb.h5 --case bbbbbbbbbbbbbbbb/gpu-sparse/24\n```"));
}

TEST_CASE("gate.md: a regression says by how much, against the noise of both runs") {
  const Report base = test::sample_report(), cur = test::with_kernels_scaled(base, 1.25);
  const std::string md = gate_markdown(run_gate(base, cur, GateConfig{}), base, cur);
  INFO(md);
  CHECK(has(md, "PERFORMANCE REGRESSION (exit 2)"));
  // sparse_logits on batch a: median 1.6 -> 2.0 ms, spreads 1.55..1.7 vs 1.9375..2.125 ms.
  CHECK(has(md, "gpu-sparse gpu-sparse/sparse_logits @24 [aaaaaaaaaaaaaaaa]"));
  CHECK(has(md, "median 1.6 -> 2 ms (+25%)"));
  CHECK(has(md, "fastest now 0.2375 ms above the baseline's slowest"));
  // The kernel's rerun is its implementation's case on that layer and batch, listed once.
  const std::string rerun = "dsa-harness replay fixtures/aaaaaaaaaaaaaaaa.h5 --case aaaaaaaaaaaaaaaa/gpu-sparse/24\n";
  REQUIRE(has(md, rerun));
  CHECK(md.find(rerun) == md.rfind(rerun));
}

TEST_CASE("gate.md: inconclusive does not block the merge, and says why") {
  Report base = test::sample_report(), cur = base;
  cur.cases.pop_back();
  const std::string md = gate_markdown(run_gate(base, cur, GateConfig{}), base, cur);
  INFO(md);
  CHECK(has(md, "INCONCLUSIVE (exit 3)"));
  CHECK(has(md, "does not block the merge"));
  CHECK(has(md, "in the baseline but not in the current run"));
}

TEST_CASE("gate.md: a pipe or line break in a finding cannot break the table") {
  GateResult g;
  g.exit_code = kExitIncorrect;
  g.findings.push_back({GateKind::correctness, "a|b", "first\nsecond | third", ""});
  const Report r = test::sample_report();
  const std::string md = gate_markdown(g, r, r);
  INFO(md);
  CHECK(has(md, "| correctness failure | `a\\|b` | first second \\| third |\n"));
}
