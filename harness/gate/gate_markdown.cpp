#include "harness/gate/gate_markdown.hpp"

#include <cctype>
#include <set>
#include <sstream>

#include "core/exit_codes.hpp"

namespace dsa {

namespace {

constexpr size_t kMaxListed = 20;  // findings and reruns listed; `dsa-harness gate` prints them all

// What the verdict means for the merge (docs/ci.md maps exit codes to job status).
const char* merge_meaning(int exit_code) {
  switch (exit_code) {
    case kExitPass: return "No correctness failure and no kernel slower beyond the noise of the two runs.";
    case kExitIncorrect: return "A case is incorrect or lost accuracy against the baseline: this must not merge.";
    case kExitRegression: return "A kernel is slower beyond the noise of both runs: this must not merge as is.";
    case kExitInconclusive:
      return "Nothing failed, but the gate cannot tell: a change inside the noise, or data on one side only. "
             "This does not block the merge; read the findings before merging.";
    default: return "The two runs cannot be compared (invalid input or different GPU models): nothing was judged.";
  }
}

// One Markdown table cell: no pipes or line breaks may leak into the table.
std::string cell(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '|') out += "\\|";
    else if (c == '\n' || c == '\r') out += ' ';
    else out += c;
  }
  return out;
}

std::string upper(std::string s) {
  for (char& c : s) c = char(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

std::string run_line(const Report& r) {
  return "GPU " + r.environment.gpu + ", harness " + r.environment.version + " (" + r.environment.commit + "), " +
         std::to_string(r.cases.size()) + " case(s)";
}

void findings_table(std::ostringstream& md, const GateResult& result) {
  size_t listed = 0, total = 0;
  for (const GateFinding& f : result.findings) total += f.kind != GateKind::ok;
  if (total == 0) return;
  md << "| finding | subject | what changed |\n|---|---|---|\n";
  for (const GateFinding& f : result.findings)
    if (f.kind != GateKind::ok && listed++ < kMaxListed)
      md << "| " << gate_kind_name(f.kind) << " | `" << cell(f.subject) << "` | " << cell(f.detail) << " |\n";
  if (total > kMaxListed) md << "\n" << total - kMaxListed << " more: `dsa-harness gate` prints every finding.\n";
  md << "\n";
}

// Each failing case once, in the order of the findings.
void reruns(std::ostringstream& md, const GateResult& result) {
  std::set<std::string> seen;
  std::ostringstream lines;
  for (const GateFinding& f : result.findings)
    if (f.kind != GateKind::ok && !f.rerun.empty() && seen.insert(f.rerun).second && seen.size() <= kMaxListed)
      lines << f.rerun << "\n";
  if (seen.empty()) return;
  md << "Rerun each failing case:\n\n```\n" << lines.str() << "```\n";
  if (seen.size() > kMaxListed) md << "\n" << seen.size() - kMaxListed << " more in `dsa-harness gate`'s output.\n";
}

}  // namespace

std::string gate_markdown(const GateResult& result, const Report& baseline, const Report& current) {
  std::ostringstream md;
  size_t ok = 0;
  for (const GateFinding& f : result.findings) ok += f.kind == GateKind::ok;
  md << "## dsa-harness gate: " << upper(exit_code_name(ExitCode(result.exit_code))) << " (exit "
     << result.exit_code << ")\n\n"
     << merge_meaning(result.exit_code) << "\n\n"
     << "Baseline: " << run_line(baseline) << ".  \nCurrent: " << run_line(current) << ".  \n"
     << result.cases_compared << " case(s) and " << result.kernels_compared << " kernel(s) compared, " << ok
     << " judgement(s) ok, " << result.findings.size() - ok << " not.\n\n";
  findings_table(md, result);
  reruns(md, result);
  return md.str();
}

}  // namespace dsa
