// report.md and junit.xml on a constructed report: what a CI summary and a test viewer show.
#include <regex>

#include "reports/printers.hpp"
#include "tests/catch.hpp"
#include "tests/reports/sample_report.hpp"

using namespace dsa;

namespace {
int count(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}
}  // namespace

TEST_CASE("markdown: verdict first, failing cases with their rerun command") {
  const std::string ok = reports::to_markdown(test::sample_report());
  CHECK(ok.find("## dsa-harness: PASSED (exit 0)") == 0);
  CHECK(ok.find("Cases that did not pass") == std::string::npos);
  CHECK(ok.find("### Kernels") != std::string::npos);

  const std::string bad = reports::to_markdown(test::sample_report(1.0, true));
  CHECK(bad.find("## dsa-harness: INCORRECT (exit 1)") == 0);
  CHECK(bad.find("`bbbbbbbbbbbbbbbb/gpu-sparse/24`") != std::string::npos);
  CHECK(bad.find("dsa-harness replay fixtures/bbbbbbbbbbbbbbbb.h5 --case bbbbbbbbbbbbbbbb/gpu-sparse/24") !=
        std::string::npos);
  CHECK(bad.find("row 17 slot 3") != std::string::npos);
}

TEST_CASE("markdown: a recorded run says where its outputs come from, after the paths that ran here") {
  Report r = test::sample_report();
  ImplRun recorded = test::sample_run(r.runs[0].batch_id, "recorded:gpu-sparse", 1.0);
  recorded.kernels.clear();
  recorded.reason = "recorded outputs /outputs/gpu-sparse of gpu-sparse on NVIDIA H200";
  r.runs.insert(r.runs.begin(), recorded);
  ImplRun mask = recorded;
  mask.impl = "recorded:gpu-mask";
  r.runs.insert(r.runs.begin(), mask);
  finalize_report(r);
  CHECK(r.runs[2].impl == "recorded:gpu-sparse");  // gpu-sparse's order, after everything computed here
  CHECK(r.runs[3].impl == "recorded:gpu-mask");
  const std::string md = reports::to_markdown(r);
  CHECK(md.find("| recorded:gpu-sparse | ran: recorded outputs /outputs/gpu-sparse of gpu-sparse on NVIDIA H200 |") !=
        std::string::npos);
  CHECK(md.find("| reference-sparse | ran |") != std::string::npos);
}

TEST_CASE("junit: one testcase per batch x implementation x layer, failures carry the metric") {
  Report r = test::sample_report(1.0, true);
  r.runs.push_back(test::unsupported_run("no CUDA <device>"));
  finalize_report(r);
  const std::string x = reports::to_junit(r);
  CHECK(x.find("<?xml version=\"1.0\" encoding=\"UTF-8\"?>") == 0);
  CHECK(count(x, "<testcase ") == 3);  // two cases + one implementation that did not run
  CHECK(count(x, "<failure ") == 1);
  CHECK(x.find("tests=\"3\" failures=\"1\" errors=\"0\" skipped=\"1\"") != std::string::npos);
  CHECK(std::regex_search(x, std::regex("<failure type=\"incorrect\" message=\"public-test vs gpu-mask: "
                                        "floor.violating_rows\">[^<]*row 17 slot 3")));
  CHECK(x.find("no CUDA &lt;device&gt;") != std::string::npos);
  CHECK(x.find("--case bbbbbbbbbbbbbbbb/gpu-sparse/24") != std::string::npos);
}

TEST_CASE("xml_escape and format_number") {
  CHECK(reports::xml_escape("a<b & \"c\"\x01") == "a&lt;b &amp; &quot;c&quot; ");
  CHECK(reports::format_number(std::nan("")) == "-");
  CHECK(reports::format_number(0.5) == "0.5");
}
