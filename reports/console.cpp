// The console printer: one comparison as the text `dsa-harness compare` prints (records per
// layer, the first mismatches, a summary table, the verdict).
#include <cstdarg>
#include <cstdio>

#include "reports/printers.hpp"

namespace dsa::reports {

namespace {

// printf onto the end of a string, however long (a file path can be).
void appendf(std::string& out, const char* format, ...) {
  va_list args, again;
  va_start(args, format);
  va_copy(again, args);
  const int n = std::vsnprintf(nullptr, 0, format, args);
  va_end(args);
  if (n > 0) {
    const size_t at = out.size();
    out.resize(at + size_t(n) + 1);
    std::vsnprintf(&out[at], size_t(n) + 1, format, again);
    out.resize(at + size_t(n));
  }
  va_end(again);
}

std::string format_value(const Record& r) {
  char buf[48];
  if (r.unit == "count" || r.unit == "ulp") std::snprintf(buf, sizeof buf, "%.0f", r.value);
  else std::snprintf(buf, sizeof buf, "%.6g", r.value);
  return buf;
}

void layer_text(std::string& out, const LayerComparison& l) {
  if (l.layer == "blocks") appendf(out, "\nblocks (level one): %s", disposition_name(l.disposition));
  else appendf(out, "\nlayer %s (%s): %s", l.layer.c_str(), l.role.c_str(), disposition_name(l.disposition));
  if (!l.failed_metric.empty()) appendf(out, " (%s)", l.failed_metric.c_str());
  if (!l.rows.empty()) appendf(out, ", %zu rows", l.rows.size());
  out += "\n";
  for (const Record& r : l.records)
    appendf(out, "  %-28s %14s  %-9s %s\n", r.name.c_str(), format_value(r).c_str(), r.unit.c_str(), r.hint.c_str());
  if (!l.mismatches.empty()) out += "  first mismatches:\n";
  for (const Mismatch& m : l.mismatches) out += "    " + mismatch_text(l.layer, m) + "\n";
}

// One line per layer with the figures a reader looks at first ("-" where the rule has none).
void summary_text(std::string& out, const std::vector<LayerComparison>& layers) {
  auto cell = [](const LayerComparison& l, const char* name) {
    const Record* r = find_record(l, name);
    return r ? format_value(*r) : std::string("-");
  };
  appendf(out, "\n%-12s %-14s %10s %10s %8s %10s %10s %10s\n", "layer", "verdict", "valid", "agree.min", "exact",
          "floor.viol", "recall", "max_ulp");
  for (const LayerComparison& l : layers) {
    const Record* ulp = find_record(l, "scores.dense.max_ulp");
    if (!ulp) ulp = find_record(l, "scores.sparse.max_ulp");
    appendf(out, "%-12s %-14s %10s %10s %8s %10s %10s %10s\n", l.layer.c_str(), disposition_name(l.disposition),
            cell(l, "validity").c_str(), cell(l, l.role == "tail" ? "tails.overlap.min" : "agreement.min").c_str(),
            cell(l, "exact").c_str(), cell(l, "floor.violating_rows").c_str(), cell(l, "quality.recall.mean").c_str(),
            ulp ? format_value(*ulp).c_str() : "-");
  }
}

}  // namespace

std::string comparison_text(const Comparison& c, const std::string& file, long rows) {
  std::string out;
  appendf(out, "%s against %s on %s: %s rule, %ld rows done on both sides\n", c.impl.c_str(), c.against.c_str(),
          file.c_str(), rule_name(c.rule), rows);
  for (const LayerComparison& l : c.layers) layer_text(out, l);
  summary_text(out, c.layers);
  appendf(out, "\nverdict: %s\n", disposition_name(c.disposition));
  return out;
}

}  // namespace dsa::reports
