// junit.xml: one testsuite per batch, one testcase per batch x implementation x layer; failures
// carry the metric that failed, the first mismatch and the command that reruns the case.
#include <map>
#include <sstream>

#include "reports/printers.hpp"

namespace dsa::reports {

namespace {

struct Suite {
  std::vector<const CaseResult*> cases;
  std::vector<const ImplRun*> skipped_runs;
  int failures = 0, skipped = 0;
};

void write_case(std::ostringstream& x, const CaseResult& c) {
  x << "    <testcase classname=\"" << xml_escape(c.batch_id + "." + c.impl) << "\" name=\""
    << xml_escape("layer " + c.layer + (c.rows.empty() ? "" : " rows " + c.rows)) << "\" time=\"0\">\n";
  const std::string details = c.message + "\nrerun: " + c.rerun;
  if (c.verdict == Disposition::incorrect)
    x << "      <failure type=\"incorrect\" message=\"" << xml_escape(c.failed_metric) << "\">"
      << xml_escape(details) << "</failure>\n";
  else if (c.verdict == Disposition::inconclusive)
    x << "      <failure type=\"inconclusive\" message=\"" << xml_escape("inconclusive: " + c.failed_metric)
      << "\">" << xml_escape(details) << "</failure>\n";
  else if (c.verdict != Disposition::passed)
    x << "      <skipped message=\"" << xml_escape(disposition_name(c.verdict)) << "\"/>\n";
  x << "    </testcase>\n";
}

}  // namespace

std::string to_junit(const Report& report) {
  std::map<std::string, Suite> suites;
  for (const CaseResult& c : report.cases) {
    Suite& s = suites[c.batch_id];
    s.cases.push_back(&c);
    s.failures += c.verdict == Disposition::incorrect || c.verdict == Disposition::inconclusive;
    s.skipped += c.verdict == Disposition::not_run || c.verdict == Disposition::not_supported;
  }
  for (const ImplRun& r : report.runs)
    if (r.status != Disposition::passed) {
      Suite& s = suites[r.batch_id];
      s.skipped_runs.push_back(&r);
      ++s.skipped;
    }
  int tests = 0, failures = 0, skipped = 0;
  for (const auto& [id, s] : suites) {
    tests += int(s.cases.size() + s.skipped_runs.size());
    failures += s.failures;
    skipped += s.skipped;
  }
  std::ostringstream x;
  x << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"dsa-harness\" tests=\"" << tests
    << "\" failures=\"" << failures << "\" errors=\"0\" skipped=\"" << skipped << "\">\n";
  for (const auto& [id, s] : suites) {
    x << "  <testsuite name=\"" << xml_escape(id) << "\" tests=\"" << s.cases.size() + s.skipped_runs.size()
      << "\" failures=\"" << s.failures << "\" errors=\"0\" skipped=\"" << s.skipped << "\">\n";
    for (const CaseResult* c : s.cases) write_case(x, *c);
    for (const ImplRun* r : s.skipped_runs)
      x << "    <testcase classname=\"" << xml_escape(r->batch_id + "." + r->impl) << "\" name=\"run\" time=\"0\">\n"
        << "      <skipped message=\"" << xml_escape(std::string(disposition_name(r->status)) + ": " + r->reason)
        << "\"/>\n    </testcase>\n";
    x << "  </testsuite>\n";
  }
  x << "</testsuites>\n";
  return x.str();
}

}  // namespace dsa::reports
