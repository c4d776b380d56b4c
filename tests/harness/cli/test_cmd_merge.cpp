// merge: only one run's complete set of shards, each once, makes a merged report.
#include "tests/catch.hpp"
#include "tests/harness/cli/cli_run.hpp"

using namespace dsa::test;

TEST_CASE("merge: incomplete, mismatched or repeated shard sets exit 4 naming the shards") {
  Scratch dir("merge");
  const std::string fixtures = DSA_FIXTURES_DIR;
  const std::string run = "replay " + fixtures + " --impl reference-sparse --rows 2 ";
  for (const std::string& s : {"0/2", "1/2", "0/3"})
    REQUIRE(cli(run + "--shard " + s + " -o " + dir.sub("s" + std::string(1, s[0]) + s.substr(2))).code <= 1);
  const std::string s02 = dir.sub("s02"), s12 = dir.sub("s12"), s03 = dir.sub("s03");
  CliResult r = cli("merge " + s02 + " -o " + dir.sub("m1"));
  INFO(r.output);
  CHECK(r.code == 4);
  CHECK(has(r.output, "the set is incomplete"));
  r = cli("merge " + s02 + " " + s03 + " -o " + dir.sub("m2"));
  CHECK(r.code == 4);
  CHECK(has(r.output, "is shard 0/3 but " + s02 + " is 0/2"));
  r = cli("merge " + s02 + " " + s02 + " -o " + dir.sub("m3"));
  CHECK(r.code == 4);
  CHECK(has(r.output, "shard 0/2 is also " + s02));
  CHECK(cli("merge " + s02 + " " + s12 + " -o " + dir.sub("ok")).code == 0);
}
