#include "core/memory_budget.hpp"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <limits>

#include "core/errors.hpp"

namespace dsa {

bool parse_size(const std::string& text, uint64_t* bytes) {
  if (text.empty() || text[0] < '0' || text[0] > '9') return false;
  uint64_t value = 0;
  size_t i = 0;
  for (; i < text.size() && text[i] >= '0' && text[i] <= '9'; ++i) {
    const uint64_t digit = uint64_t(text[i] - '0');
    if (value > (std::numeric_limits<uint64_t>::max() - digit) / 10) return false;
    value = value * 10 + digit;
  }
  int shift = 0;
  if (i < text.size()) {
    const std::string suffix = text.substr(i);
    const std::string units = "KMGT";
    const size_t unit = units.find(char(std::toupper(static_cast<unsigned char>(suffix[0]))));
    if (unit == std::string::npos) return false;
    const std::string rest = suffix.substr(1);
    if (!rest.empty() && rest != "B" && rest != "iB" && rest != "b") return false;
    shift = 10 * int(unit + 1);
  }
  if (value == 0 || (shift && value > (std::numeric_limits<uint64_t>::max() >> shift))) return false;
  *bytes = value << shift;
  return true;
}

uint64_t memory_budget() {
  if (const char* env = std::getenv("DSA_MEMORY_BUDGET")) {
    uint64_t bytes = 0;
    if (!parse_size(env, &bytes))
      throw InputError("environment", "DSA_MEMORY_BUDGET", std::string("'") + env + "' is not a size such as 2G or 512M");
    return bytes;
  }
  const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page <= 0) return uint64_t(4) << 30;  // unknown: a modest 4 GiB
  return uint64_t(pages) * uint64_t(page) / 2;
}

std::string bytes_text(uint64_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  double v = double(bytes);
  int u = 0;
  while (v >= 1024 && u < 6) {
    v /= 1024;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, u ? "%.1f %s" : "%.0f %s", v, units[u]);
  return buf;
}

uint64_t saturating_product(uint64_t a, uint64_t b) {
  if (a != 0 && b > std::numeric_limits<uint64_t>::max() / a) return std::numeric_limits<uint64_t>::max();
  return a * b;
}

}  // namespace dsa
