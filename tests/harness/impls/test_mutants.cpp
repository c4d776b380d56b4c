// Planted defects: at least 12 mutants plus a control, listed by replay --list-impl, and the
// clean implementations flag nothing on 50 generated seeds of smoke and of edge (false alarms
// would make the detections worthless), and every mutant is flagged on a generated edge batch.
// That every mutant is flagged on the bundled fixtures and the control passes is ctest
// test_planted_defects (tools/planted-defects.sh --check), which also keeps
// docs/planted-defects.md's detection table equal to what the code gives.
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/errors.hpp"
#include "harness/batch/batch_io.hpp"
#include "harness/generate/generate.hpp"
#include "harness/impls/mutants.hpp"
#include "harness/impls/registry.hpp"
#include "reports/report_model.hpp"
#include "tests/catch.hpp"
#include "tests/scratch_dir.hpp"

using namespace dsa;
namespace fs = std::filesystem;

namespace {

struct Folder : test::ScratchDir {
  explicit Folder(const std::string& tag) : ScratchDir("dsa-mutants-", tag) {}
};

int replay(const std::string& args, std::string* output = nullptr) {
  const std::string log = fs::temp_directory_path() / ("dsa-mutants-log-" + std::to_string(::getpid()));
  const int status = std::system((std::string(DSA_BINARY) + " replay " + args + " > '" + log + "' 2>&1").c_str());
  if (output) {
    std::stringstream s;
    s << std::ifstream(log).rdbuf();
    *output = s.str();
  }
  fs::remove(log);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

}  // namespace

TEST_CASE("mutants: at least 12 planted defects plus a control, each a sparse-path implementation") {
  REQUIRE(mutants().size() >= 13);
  CHECK(mutants().front().name == "control");
  for (const MutantInfo& m : mutants()) CHECK(path_of("mutant:" + m.name) == PathKind::sparse);
  CHECK_THROWS_AS(path_of("mutant:no-such-bug"), InputError);
  std::string listed;
  REQUIRE(replay("--list-impl", &listed) == 0);
  for (const MutantInfo& m : mutants()) CHECK(listed.find("mutant:" + m.name + " ") != std::string::npos);
}

TEST_CASE("mutants: every planted defect is flagged on a generated edge batch, the control passes") {
  // Beyond the bundled fixtures of test_planted_defects: a batch none of them was tuned on. It is
  // also where the planted implementations run under the sanitizers (test_planted_defects is
  // left out of that run: tests/CMakeLists.txt). One replay of all of them: the batch is read and
  // the reference computed once.
  Folder dir("edge");
  GenerateOptions o;
  o.preset = "edge";
  o.seed = 7;
  const std::string batch = (dir.path / "edge.h5").string();
  write_batch(batch, generate_batch(o));
  std::string impls, output;
  for (const MutantInfo& m : mutants()) impls += (impls.empty() ? "mutant:" : ",mutant:") + m.name;
  const int code = replay(batch + " --impl " + impls + " -o " + (dir.path / "report").string(), &output);
  INFO(output.substr(output.size() > 2000 ? output.size() - 2000 : 0));
  CHECK(code == 1);
  const Report r = read_report((dir.path / "report" / "report.json").string());
  for (const MutantInfo& m : mutants()) {
    int incorrect = 0, cases = 0;
    for (const CaseResult& c : r.cases)
      if (c.impl == "mutant:" + m.name) ++cases, incorrect += c.verdict == Disposition::incorrect;
    INFO("mutant:" << m.name << ": " << incorrect << " of " << cases << " cases incorrect");
    CHECK(cases > 0);
    CHECK((incorrect == 0) == (m.name == "control"));
  }
}

TEST_CASE("mutants: the clean implementations flag nothing on 50 generated seeds of smoke and of edge") {
  // DSA_SWEEP_SEEDS: fewer seeds where the same code runs again only for the sanitizers (the
  // asan test preset sets 4); the false-alarm count itself is the plain build's 50.
  const char* env = std::getenv("DSA_SWEEP_SEEDS");
  const uint64_t seeds = env && *env ? std::strtoull(env, nullptr, 10) : 50;
  REQUIRE(seeds >= 1);
  Folder dir("seeds");
  for (uint64_t seed = 1000; seed < 1000 + seeds; ++seed)
    for (const char* preset : {"smoke", "edge"}) {
      GenerateOptions o;
      o.preset = preset;
      o.seed = seed;
      write_batch((dir.path / (std::string(preset) + "-" + std::to_string(seed) + ".h5")).string(), generate_batch(o));
    }
  std::string output;
  const int code = replay(dir.path.string() + " --impl reference-sparse,reference-mask,reference-exact,mutant:control -o " +
                              (dir.path / "report").string(),
                          &output);
  INFO(output.substr(output.size() > 4000 ? output.size() - 4000 : 0));
  CHECK(code == 0);
}
