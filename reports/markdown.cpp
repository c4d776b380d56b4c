// report.md: what a reviewer reads in a CI step summary in under a minute.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <sstream>

#include "reports/printers.hpp"

namespace dsa::reports {

namespace {

constexpr size_t kMaxListed = 20;       // failing cases listed; the rest are in report.json
constexpr size_t kMaxKernelRows = 24;   // kernel rows; the rest are in report.html

std::string upper(std::string s) {
  for (char& c : s) c = char(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

void summary(std::ostringstream& md, const Report& r) {
  std::map<std::string, int> by_verdict;
  for (const CaseResult& c : r.cases) ++by_verdict[disposition_name(c.verdict)];
  md << "## dsa-harness: " << upper(disposition_name(r.verdict)) << " (exit " << r.exit_code << ")\n\n";
  md << r.inputs.size() << " input(s), " << r.runs.size() << " implementation run(s), " << r.cases.size()
     << " case(s)";
  for (const auto& [name, count] : by_verdict) md << ", " << count << " " << name;
  md << ".  \nGPU: " << r.environment.gpu << "; harness " << r.environment.version << " ("
     << r.environment.commit << ")";
  if (r.settings.rows != "all") md << "; rows " << r.settings.rows << " (seed " << r.settings.seed << ")";
  if (r.settings.shards > 1) md << "; shard " << r.settings.shard << "/" << r.settings.shards;
  if (!r.shards_merged.empty()) md << "; merged from " << r.shards_merged.size() << " shard(s)";
  md << "\n\n";
}

void failures(std::ostringstream& md, const Report& r) {
  size_t listed = 0, total = 0;
  for (const CaseResult& c : r.cases) total += c.verdict != Disposition::passed;
  if (total == 0) return;
  md << "### Cases that did not pass\n\n| case | verdict | failed metric | first mismatch |\n|---|---|---|---|\n";
  for (const CaseResult& c : r.cases) {
    if (c.verdict == Disposition::passed || listed++ >= kMaxListed) continue;
    md << "| `" << c.id << "` | " << disposition_name(c.verdict) << " | " << c.failed_metric << " | "
       << c.message << " |\n";
  }
  if (total > kMaxListed) md << "\n" << total - kMaxListed << " more in report.json.\n";
  md << "\nRerun one case:\n\n```\n";
  listed = 0;
  for (const CaseResult& c : r.cases)
    if (c.verdict != Disposition::passed && listed++ < 5) md << c.rerun << "\n";
  md << "```\n\n";
}

void implementations(std::ostringstream& md, const Report& r) {
  md << "### Implementations\n\n| batch | implementation | status | cases passed | agreement (min) | deterministic |\n"
        "|---|---|---|---|---|---|\n";
  for (const ImplRun& run : r.runs) {
    int passed = 0, cases = 0;
    double min_agreement = std::nan("");
    for (const CaseResult& c : r.cases) {
      if (c.batch_id != run.batch_id || c.impl != run.impl) continue;
      ++cases;
      passed += c.verdict == Disposition::passed;
      const double a = case_record(c, "agreement.min");
      if (std::isfinite(a) && !(a >= min_agreement)) min_agreement = a;
    }
    const std::string status = run.status != Disposition::passed ? std::string(disposition_name(run.status)) + ": " + run.reason
                               : run.reason.empty()                ? "ran"
                                                                   : "ran: " + run.reason;
    md << "| " << run.batch_id << " | " << run.impl << " | " << status << " | " << passed << "/" << cases << " | "
       << format_number(min_agreement) << " | "
       << (run.deterministic < 0 ? "-" : run.deterministic ? "yes" : "NO") << " |\n";
  }
  md << "\n";
}

// GPU kernels only: the CPU references' stage timings stay in report.json and report.html.
void kernels(std::ostringstream& md, const Report& r) {
  bool any = false;
  for (const ImplRun& run : r.runs) any |= run.device != "cpu" && !run.kernels.empty();
  if (!any) return;
  md << "### Kernels\n\n| batch | kernel | layer | calls | median ms | min..max ms | floor ms | share of ceiling |\n"
        "|---|---|---|---|---|---|---|---|\n";
  size_t rows = 0, total = 0;
  for (const ImplRun& run : r.runs)
    for (const KernelFigure& k : run.kernels)
      if (run.device != "cpu" && ++total <= kMaxKernelRows)
        md << "| " << run.batch_id.substr(0, 8) << " | " << k.kernel << " | " << k.layer << " | " << k.calls << " | "
         << format_number(k.median_ms) << " | " << format_number(k.min_ms) << ".." << format_number(k.max_ms)
         << " | " << format_number(k.floor_ms) << " | " << format_number(100 * k.ceiling_share, 3) << "% |\n";
  rows = std::min(total, kMaxKernelRows);
  if (total > rows) md << "\n" << total - rows << " more kernel(s) in report.html and report.json.\n";
  md << "\n";
}

}  // namespace

std::string to_markdown(const Report& report) {
  std::ostringstream md;
  summary(md, report);
  failures(md, report);
  implementations(md, report);
  kernels(md, report);
  md << "Full details: report.html, report.json, junit.xml.\n";
  return md.str();
}

}  // namespace dsa::reports
