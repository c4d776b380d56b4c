// harness/cli/main.cpp: `dsa-harness --version` names the version and the commit it was built from.
#include <array>
#include <cstdio>
#include <regex>
#include <string>

#include "harness/replay/environment.hpp"
#include "tests/catch.hpp"

namespace {
std::string output_of(const std::string& command) {
  std::string out;
  if (std::FILE* p = ::popen(command.c_str(), "r")) {
    std::array<char, 256> buf;
    while (std::fgets(buf.data(), int(buf.size()), p)) out += buf.data();
    ::pclose(p);
  }
  return out;
}
}  // namespace

TEST_CASE("--version prints the version and the commit of the build", "[cli]") {
  const std::string out = output_of(std::string(DSA_BINARY) + " --version 2>&1");
  INFO(out);
  CHECK(std::regex_match(out, std::regex("dsa-harness [0-9]+\\.[0-9]+\\.[0-9]+ \\(commit ([0-9a-f]{12}|unknown)\\)\n")));
  CHECK(out == dsa::version_text() + "\n");
  CHECK(out.find(std::string(" ") + DSA_VERSION + " ") != std::string::npos);
}
