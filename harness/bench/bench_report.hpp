#pragma once
// The printed forms of a bench report: tables built once from the report model (ceilings, kernels
// with their share of the ceilings, paths with peak memory, launches and step times, the PyTorch
// peer's ratios) and rendered as report.md and as a section of report.html.
#include <string>
#include <vector>

#include "reports/report_model.hpp"

namespace dsa {

struct BenchTable {
  std::string title;
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;
  std::string note;  // printed under the table
};

std::vector<BenchTable> bench_tables(const Report& report);
std::string bench_markdown(const Report& report);
// reports::to_html (latency against context, latency per kernel against its floor) with the
// bench tables before its cases.
std::string bench_html(const Report& report);

// Writes report.json, report.md and report.html into `dir`.
void write_bench_reports(const Report& report, const std::string& dir);

}  // namespace dsa
