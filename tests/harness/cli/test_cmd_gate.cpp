// gate's files: gate.md beside the current report, or in -o DIR, written whole (no temp file
// left), and an output folder that cannot be made is exit 4 naming it.
#include <filesystem>
#include <fstream>

#include "reports/printers.hpp"
#include "tests/catch.hpp"
#include "tests/harness/cli/cli_run.hpp"
#include "tests/reports/sample_report.hpp"

using namespace dsa::test;

TEST_CASE("gate CLI: gate.md goes beside --current, or into -o DIR") {
  Scratch dir("gate-md");
  std::filesystem::create_directories(dir.sub("base"));
  std::filesystem::create_directories(dir.sub("cur"));
  dsa::reports::write_text_atomic(dir.sub("base/report.json"), dsa::reports::to_json_text(sample_report()));
  dsa::reports::write_text_atomic(dir.sub("cur/report.json"), dsa::reports::to_json_text(sample_report(1.0, true)));
  const std::string args = "gate --baseline " + dir.sub("base/report.json") + " --current " + dir.sub("cur/report.json");
  CliResult r = cli(args);
  INFO(r.output);
  CHECK(r.code == 1);
  const std::string md = read_text(dir.sub("cur/gate.md"));
  CHECK(has(md, "## dsa-harness gate: CORRECTNESS FAILURE (exit 1)"));
  CHECK(has(md, "--case bbbbbbbbbbbbbbbb/gpu-sparse/24"));
  CHECK(has(r.output, "gate.md: " + dir.sub("cur") + "/gate.md"));
  for (const auto& e : std::filesystem::directory_iterator(dir.sub("cur")))
    CHECK(e.path().filename().string().find(".tmp-") == std::string::npos);

  r = cli(args + " -o " + dir.sub("out/pr"));
  CHECK(r.code == 1);
  CHECK(read_text(dir.sub("out/pr/gate.md")) == md);

  std::ofstream(dir.sub("file")) << "not a folder";
  r = cli(args + " -o " + dir.sub("file/sub"));
  CHECK(r.code == 4);
  CHECK(has(r.output, dir.sub("file/sub") + ": cannot create the gate's output folder"));
}
