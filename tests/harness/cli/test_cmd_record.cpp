// record: a copy of the batch with implementations' outputs recorded, each group naming the
// implementation, the device, the harness and the date; the copy validates and replays as
// recorded:NAME on any machine, and the input is never written.
#include <filesystem>
#include <regex>

#include "harness/batch/batch_io.hpp"
#include "harness/batch/content_id.hpp"
#include "harness/replay/environment.hpp"
#include "reports/report_model.hpp"
#include "tests/catch.hpp"
#include "tests/harness/cli/cli_run.hpp"

using namespace dsa::test;
namespace fs = std::filesystem;

namespace {

// The runs and cases of one implementation in a report.
struct ImplSummary {
  const dsa::ImplRun* run = nullptr;
  int cases = 0, passed = 0;
};

ImplSummary summary_of(const dsa::Report& report, const std::string& impl) {
  ImplSummary s;
  for (const dsa::ImplRun& r : report.runs)
    if (r.impl == impl) s.run = &r;
  for (const dsa::CaseResult& c : report.cases)
    if (c.impl == impl) ++s.cases, s.passed += c.verdict == dsa::Disposition::passed;
  return s;
}

}  // namespace

TEST_CASE("record: reference outputs under stand-in names validate, replay as recorded:NAME and pass") {
  Scratch dir("record");
  const std::string in = dir.sub("smoke.h5"), out = dir.sub("smoke-recorded.h5");
  fs::copy_file(kSmoke, in);
  const std::string before = read_text(in);
  const CliResult r =
      cli("record " + in + " --impl reference-sparse,reference-mask --as stand-in-sparse,stand-in-mask -o " + out);
  INFO(r.output);
  REQUIRE(r.code == 0);
  CHECK(has(r.output, "check with: dsa-harness replay " + out + " --impl recorded:stand-in-sparse,recorded:stand-in-mask"));
  CHECK(read_text(in) == before);  // the input, byte for byte
  CHECK(cli("validate " + out).code == 0);

  const dsa::Batch original = dsa::read_batch(in), copy = dsa::read_batch(out);
  CHECK(dsa::content_id(copy) == dsa::content_id(original));
  REQUIRE(copy.outputs.size() == 2);
  const std::regex utc("\\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\dZ");
  for (const auto& [group, impl] : {std::pair<std::string, std::string>{"stand-in-sparse", "reference-sparse"},
                                    {"stand-in-mask", "reference-mask"}}) {
    const dsa::Results& res = copy.outputs.at(group);
    CHECK(res.implementation == impl);
    CHECK(res.device == dsa::describe_cpu());
    CHECK(res.device.rfind("cpu: ", 0) == 0);
    CHECK(res.harness == dsa::version_text());
    CHECK(std::regex_match(res.recorded_at, utc));
    CHECK(std::count(res.rows_done.begin(), res.rows_done.end(), uint8_t(1)) == copy.rows());
  }

  const CliResult replay =
      cli("replay " + out + " --impl recorded:stand-in-sparse,recorded:stand-in-mask -o " + dir.sub("report"));
  INFO(replay.output);
  REQUIRE(replay.code == 0);
  const dsa::Report report = dsa::read_report(dir.sub("report") + "/report.json");
  for (const std::string& impl : {"recorded:stand-in-sparse", "recorded:stand-in-mask"}) {
    const ImplSummary s = summary_of(report, impl);
    REQUIRE(s.run != nullptr);
    CHECK(s.run->status == dsa::Disposition::passed);
    CHECK(s.run->device == dsa::describe_cpu());
    CHECK(has(s.run->reason, " by " + dsa::version_text() + " at "));
    CHECK(s.cases >= 3);  // the layers, and the blocks on the sparse path
    CHECK(s.passed == s.cases);
  }
  // Without --impl the recorded groups are replayed too, beside the references.
  REQUIRE(cli("replay " + out + " -o " + dir.sub("default")).code == 0);
  const dsa::Report all = dsa::read_report(dir.sub("default") + "/report.json");
  CHECK(summary_of(all, "recorded:stand-in-sparse").passed > 0);
  CHECK(summary_of(all, "reference-sparse").passed > 0);
}

TEST_CASE("record: a wrong implementation recorded is caught when the copy is replayed") {
  Scratch dir("record-bad");
  const std::string out = dir.sub("planted.h5");
  REQUIRE(cli("record " + kSmoke + " --impl mutant:page-index-off-by-one --as engine-sparse -o " + out).code == 0);
  const CliResult replay = cli("replay " + out + " --impl recorded:engine-sparse -o " + dir.sub("report"));
  INFO(replay.output);
  CHECK(replay.code == 1);
  CHECK(has(replay.output, "FAIL "));
  CHECK(has(replay.output, "/recorded:engine-sparse/"));
}

TEST_CASE("record: -o naming the input (any path, a hard link) is refused; bad group names exit 4 before any work") {
  Scratch dir("record-in");
  const std::string in = dir.sub("smoke.h5");
  fs::copy_file(kSmoke, in);
  const std::string before = read_text(in);
  fs::create_hard_link(in, dir.sub("hard.h5"));
  fs::create_symlink(in, dir.sub("soft.h5"));
  for (const std::string& out : {in, dir.sub("hard.h5"), dir.sub("soft.h5"), dir.path.string() + "/./smoke.h5"}) {
    const CliResult r = cli("record " + in + " --impl reference-sparse -o " + out);
    INFO(out << "\n" << r.output);
    CHECK(r.code == 4);
    CHECK(has(r.output, "refusing to overwrite an input"));
  }
  CHECK(read_text(in) == before);

  const std::string out = dir.sub("out.h5");
  const std::string cases[][2] = {
      {"--impl reference-sparse,reference-mask --as one", "--as: 1 name(s): must name one group per --impl (2)"},
      {"--impl reference-sparse --as a/b", "--as: a/b: is not a usable group name"},
      {"--impl reference-sparse,reference-mask --as same,same", "--as: same: names two groups"},
      {"--impl no-such-impl", "no-such-impl"},
  };
  for (const auto& [args, message] : cases) {
    const CliResult r = cli("record " + in + " " + args + " -o " + out);
    INFO(args << "\n" << r.output);
    CHECK(r.code == 4);
    CHECK(has(r.output, message));
    CHECK_FALSE(fs::exists(out));
  }
  // A group the input holds already is never replaced.
  REQUIRE(cli("record " + in + " --impl reference-sparse -o " + out).code == 0);
  const CliResult again = cli("record " + out + " --impl reference-mask --as reference-sparse -o " + dir.sub("twice.h5"));
  CHECK(again.code == 4);
  CHECK(has(again.output, "/outputs/reference-sparse: is recorded already"));
  CHECK_FALSE(fs::exists(dir.sub("twice.h5")));
}
