// Case IDs and rerun commands: a hostile --case is named for what it is, and every printed
// rerun command is one that a shell runs as printed.
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "core/errors.hpp"
#include "harness/replay/replay.hpp"
#include "tests/catch.hpp"

using namespace dsa;

namespace {
std::string case_error(const std::string& id) {
  try {
    parse_case_id(id);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}
}  // namespace

TEST_CASE("cases: a batch ID that is not a content ID is named, not blamed on the implementation") {
  CHECK(case_error("../../etc").find("the batch ID '..' is not a content ID") != std::string::npos);
  CHECK(case_error("0123456789abcdef/reference-sparse/24").empty());
  CHECK(case_error("0123456789ABCDEF/reference-sparse/24").find("not a content ID") != std::string::npos);
}

TEST_CASE("cases: rerun commands quote paths so that they paste and run") {
  CHECK(shell_quote("fixtures/smoke.h5") == "fixtures/smoke.h5");
  CHECK(shell_quote("in/my batch (v2).h5") == "'in/my batch (v2).h5'");
  CHECK(shell_quote("it's.h5") == "'it'\\''s.h5'");
  CHECK(shell_quote("") == "''");
  // The shell reads the quoted words back as the original strings.
  const std::string tricky = "in/my batch (v2) $HOME `x` it's;.h5";
  const std::string cmd = rerun_command(tricky, "0123456789abcdef/reference-sparse/24", 1.0 / 32);
  CHECK(cmd.find("'in/my batch (v2) $HOME `x` it'\\''s;.h5'") != std::string::npos);
  const auto out = std::filesystem::temp_directory_path() / ("dsa-quote-" + std::to_string(::getpid()));
  const std::string script = "printf '%s\\n' " + shell_quote(tricky) + " > " + shell_quote(out.string());
  REQUIRE(WEXITSTATUS(std::system(script.c_str())) == 0);
  std::string back;
  std::getline(std::ifstream(out), back);
  CHECK(back == tricky);
  std::filesystem::remove(out);
}
