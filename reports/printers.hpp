#pragma once
// The printers of a report: each turns the one in-memory report (reports/report_model.hpp) into
// one file format. None of them computes a verdict; they only print what the model holds.
#include <string>

#include "reports/report_model.hpp"

namespace dsa::reports {

std::string to_json_text(const Report& report);  // report.json: the contract
std::string to_markdown(const Report& report);   // report.md: a short CI step summary
std::string to_junit(const Report& report);      // junit.xml: one testcase per batch x impl x layer
std::string to_html(const Report& report);       // report.html: self-contained, offline, SVG plots
// The console text of one comparison (what `dsa-harness compare` prints): records per layer, the
// first mismatches, a summary table and the verdict. `rows`: rows done on both sides.
std::string comparison_text(const Comparison& comparison, const std::string& file, long rows);

// Writes `text` to `path` atomically: a temporary file in the same folder, flushed, then renamed
// over `path`. Throws EnvironmentError naming the path when it cannot.
void write_text_atomic(const std::string& path, const std::string& text);

// Creates `dir` when needed and writes report.json, report.md, junit.xml and report.html in it.
void write_reports(const Report& report, const std::string& dir);

// Small helpers the printers share.
std::string xml_escape(const std::string& text);
std::string format_number(double value, int digits = 4);  // "-" for NaN
// The headline record of a case (e.g. agreement) for the tables; NaN when absent.
double case_record(const CaseResult& c, const std::string& name_prefix);

}  // namespace dsa::reports
