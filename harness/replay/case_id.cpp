#include "harness/replay/case_id.hpp"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <sstream>

#include "core/errors.hpp"
#include "core/rules.hpp"

namespace dsa {

namespace {

// plugin:PATH.so names a file, whose path has slashes of its own: its parts, up to the one that
// ends the library's file name (".so" or ".so.N"), are one implementation name.
void join_plugin_path(std::vector<std::string>& parts) {
  if (parts.size() < 2 || parts[1].rfind("plugin:", 0) != 0) return;
  for (size_t end = 1; end < parts.size(); ++end) {
    const std::string& p = parts[end];
    const bool library = (p.size() > 3 && p.compare(p.size() - 3, 3, ".so") == 0) || p.find(".so.") != std::string::npos;
    if (!library) continue;
    for (size_t i = 2; i <= end; ++i) parts[1] += "/" + parts[i];
    parts.erase(parts.begin() + 2, parts.begin() + long(end) + 1);
    return;
  }
}

}  // namespace

CaseId parse_case_id(const std::string& id) {
  std::vector<std::string> parts;
  std::stringstream s(id);
  for (std::string part; std::getline(s, part, '/');) parts.push_back(part);
  join_plugin_path(parts);
  if (parts.size() < 3 || parts.size() > 4 || parts[0].empty() || parts[1].empty() || parts[2].empty())
    throw InputError("--case", id, "expected batch-id/impl/layer, as printed by a failing case");
  // A content ID is lowercase hex (16 digits as printed); anything else (a path such as
  // ../../etc) is named here rather than blamed on the implementation part.
  const bool hex_id = parts[0].size() <= 64 && std::all_of(parts[0].begin(), parts[0].end(), [](char ch) {
    return (ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'f');
  });
  if (!hex_id)
    throw InputError("--case", id, "the batch ID '" + parts[0] + "' is not a content ID (lowercase hex digits, as a failing case prints it)");
  CaseId c{parts[0], parts[1], parts[2], parts.size() == 4 ? parts[3] : ""};
  return c;
}

std::string format_case_id(const CaseId& id) {
  return id.batch_id + "/" + id.impl + "/" + id.layer + (id.rows.empty() ? "" : "/" + id.rows);
}

std::string rows_text(const std::vector<int>& rows) {
  std::string out;
  for (size_t i = 0; i < rows.size();) {
    size_t j = i;
    while (j + 1 < rows.size() && rows[j + 1] == rows[j] + 1) ++j;
    out += (out.empty() ? "" : ",") + std::to_string(rows[i]);
    if (j > i) out += "-" + std::to_string(rows[j]);
    i = j + 1;
  }
  return out;
}

std::vector<int> parse_rows_text(const std::string& text, int row_count) {
  std::vector<int> rows;
  std::stringstream s(text);
  for (std::string part; std::getline(s, part, ',');) {
    const size_t dash = part.find('-');
    char* end = nullptr;
    const long first = std::strtol(part.c_str(), &end, 10);
    long last = first;
    const bool ok_first = !part.empty() && end == part.c_str() + (dash == std::string::npos ? part.size() : dash);
    bool ok_last = true;
    if (dash != std::string::npos) {
      const std::string tail = part.substr(dash + 1);
      last = std::strtol(tail.c_str(), &end, 10);
      ok_last = !tail.empty() && *end == '\0';
    }
    if (!ok_first || !ok_last || first < 0 || last < first || last >= row_count)
      throw InputError("--case", text, "rows must be ascending ranges like 0-3,17 inside the batch's " +
                                           std::to_string(row_count) + " rows");
    for (long r = first; r <= last; ++r) rows.push_back(int(r));
  }
  std::sort(rows.begin(), rows.end());
  rows.erase(std::unique(rows.begin(), rows.end()), rows.end());
  return rows;
}

std::string rows_flags(const std::string& rows_spec, uint64_t seed) {
  if (rows_spec.empty() || rows_spec == "all") return "";
  const bool count = rows_spec.find_first_not_of("0123456789") == std::string::npos;
  return " --rows " + rows_spec + (count ? " --seed " + std::to_string(seed) : "");
}

std::string shell_quote(const std::string& word) {
  const bool plain = !word.empty() && std::all_of(word.begin(), word.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || std::string("_./:=@%+,-").find(c) != std::string::npos;
  });
  if (plain) return word;
  std::string out = "'";
  for (char c : word) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

std::string rerun_command(const std::string& input, const std::string& case_id, const std::string& flags,
                          double tolerance) {
  std::string cmd = "dsa-harness replay " + shell_quote(input) + " --case " + shell_quote(case_id) + flags;
  if (tolerance != rules::kFloorTolerance) {
    char buf[64];
    std::snprintf(buf, sizeof buf, " --tolerance %.17g", tolerance);
    cmd += buf;
  }
  return cmd;
}

}  // namespace dsa
