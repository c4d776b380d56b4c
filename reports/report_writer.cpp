#include <cmath>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <sstream>

#include <unistd.h>

#include "core/errors.hpp"
#include "reports/printers.hpp"

namespace dsa::reports {

std::string to_json_text(const Report& report) { return report_to_json(report).dump(2) + "\n"; }

void write_text_atomic(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp-" + std::to_string(::getpid());
  std::FILE* f = std::fopen(tmp.c_str(), "wb");
  if (!f) throw EnvironmentError(path + ": cannot write (" + std::strerror(errno) + ")");
  const bool ok = std::fwrite(text.data(), 1, text.size(), f) == text.size() && std::fflush(f) == 0 &&
                  ::fsync(::fileno(f)) == 0;
  const bool closed = std::fclose(f) == 0;
  if (!ok || !closed || std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    throw EnvironmentError(path + ": cannot write (" + std::strerror(errno) + ")");
  }
}

void write_reports(const Report& report, const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw EnvironmentError(dir + ": cannot create the report folder (" + ec.message() + ")");
  write_text_atomic(dir + "/report.json", to_json_text(report));
  write_text_atomic(dir + "/report.md", to_markdown(report));
  write_text_atomic(dir + "/junit.xml", to_junit(report));
  write_text_atomic(dir + "/report.html", to_html(report));
}

std::string xml_escape(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      default:
        // Control characters are not allowed in XML 1.0; keep the text readable instead.
        if (static_cast<unsigned char>(c) < 0x20 && c != '\n' && c != '\t') out += ' ';
        else out += c;
    }
  }
  return out;
}

std::string format_number(double value, int digits) {
  if (!std::isfinite(value)) return "-";
  std::ostringstream s;
  s.precision(digits);
  s << value;
  return s.str();
}

double case_record(const CaseResult& c, const std::string& name_prefix) {
  for (const CaseComparison& cmp : c.comparisons)
    for (const LayerComparison& part : cmp.parts)
      for (const Record& r : part.records)
        if (r.name.rfind(name_prefix, 0) == 0) return r.value;
  return std::nan("");
}

}  // namespace dsa::reports
