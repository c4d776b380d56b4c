// harness/replay/case_id.cpp: case IDs, row lists and rerun commands.
#include <vector>

#include "core/errors.hpp"
#include "harness/replay/case_id.hpp"
#include "tests/catch.hpp"

using namespace dsa;

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
