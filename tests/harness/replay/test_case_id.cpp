// harness/replay/case_id.cpp: case IDs, row lists and rerun commands. A hostile --case is named
// for what it is, and every printed rerun command is one that a shell runs as printed.
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <vector>

#include "core/errors.hpp"
#include "harness/replay/case_id.hpp"
#include "tests/catch.hpp"

using namespace dsa;

TEST_CASE("a plugin's case ID keeps the slashes of its library path") {
  for (const std::string library : {"/opt/x/libmine.so", "./libmine.so", "build/lib/libmine.so.1"}) {
    const CaseId id = parse_case_id("0123abcd/plugin:" + library + "/run");
    CHECK(id.impl == "plugin:" + library);
    CHECK(id.layer == "run");
    CHECK(format_case_id(id) == "0123abcd/plugin:" + library + "/run");
  }
  const CaseId rows = parse_case_id("0123abcd/plugin:a/b.so/24/0-3");
  CHECK(rows.impl == "plugin:a/b.so");
  CHECK(rows.layer == "24");
  CHECK(rows.rows == "0-3");
  CHECK_THROWS_AS(parse_case_id("0123abcd/plugin:a/b.so"), InputError);  // no layer
}

TEST_CASE("case IDs and row lists round-trip") {
  const CaseId id = parse_case_id("0123abcd/gpu-sparse/24/0-3,17");
  CHECK(id.batch_id == "0123abcd");
  CHECK(id.impl == "gpu-sparse");
  CHECK(id.layer == "24");
  CHECK(parse_rows_text(id.rows, 20) == std::vector<int>{0, 1, 2, 3, 17});
  CHECK(format_case_id(id) == "0123abcd/gpu-sparse/24/0-3,17");
  CHECK(rows_text({0, 1, 2, 3, 17, 19, 20}) == "0-3,17,19-20");
  CHECK(rows_text({}).empty());
  CHECK(rows_flags("all", 3).empty());
  CHECK(rows_flags("64", 3) == " --rows 64 --seed 3");
  CHECK(rows_flags("4,9,", 3) == " --rows 4,9,");
  CHECK(rerun_command("f.h5", "ab/reference-mask/24", rows_flags("64", 7), 0.5) ==
        "dsa-harness replay f.h5 --case ab/reference-mask/24 --rows 64 --seed 7 --tolerance 0.5");
  CHECK_THROWS_AS(parse_case_id("just-a-batch"), InputError);
  CHECK_THROWS_AS(parse_rows_text("3-1", 20), InputError);
  CHECK_THROWS_AS(parse_rows_text("25", 20), InputError);
}

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
  const std::string cmd = rerun_command(tricky, "0123456789abcdef/reference-sparse/24", "", 1.0 / 32);
  CHECK(cmd.find("'in/my batch (v2) $HOME `x` it'\\''s;.h5'") != std::string::npos);
  const auto out = std::filesystem::temp_directory_path() / ("dsa-quote-" + std::to_string(::getpid()));
  const std::string script = "printf '%s\\n' " + shell_quote(tricky) + " > " + shell_quote(out.string());
  REQUIRE(WEXITSTATUS(std::system(script.c_str())) == 0);
  std::string back;
  std::getline(std::ifstream(out), back);
  CHECK(back == tricky);
  std::filesystem::remove(out);
}
