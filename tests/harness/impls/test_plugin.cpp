// plugin:PATH.so (harness/impls/plugin.cpp) through the CLI, as a user runs it: the CPU example
// plugin replays the bundled fixtures and passes with its own timings in the report; plugins that
// crash, return malformed or unwritten outputs, report an error, bad timings or another ABI
// version each fail their own run with a message naming them, and the replay keeps the other
// implementations' results (reference-sparse's cases pass in the same report).
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/errors.hpp"
#include "harness/impls/registry.hpp"
#include "tests/catch.hpp"
#include "tests/harness/impls/defect_plugins.hpp"

using namespace dsa;
using dsa::test::defect;
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

const fs::path kScratch = fs::temp_directory_path() / ("dsa-plugin-test-" + std::to_string(::getpid()));

// Runs `dsa-harness ARGS`, output (stdout and stderr) into *output; returns the exit code.
int harness(const std::string& args, std::string* output) {
  fs::create_directories(kScratch);
  const fs::path log = kScratch / "log";
  // Under ASan (the asan preset) the crash plugin's SIGSEGV must reach the plugin host's parent
  // as a signal, not as ASan's report and exit 1: handle_segv=0 for these runs only.
  const std::string asan = "ASAN_OPTIONS=\"${ASAN_OPTIONS:+$ASAN_OPTIONS:}handle_segv=0\" ";
  const int status = std::system((asan + DSA_BINARY + " " + args + " > '" + log.string() + "' 2>&1").c_str());
  std::stringstream s;
  s << std::ifstream(log).rdbuf();
  *output = s.str();
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// `dsa-harness replay INPUTS --impl IMPLS -o <scratch>/FOLDER`.
int replay(const std::string& inputs, const std::string& impls, const std::string& folder, std::string* output) {
  return harness("replay " + inputs + " --impl " + impls + " -o " + (kScratch / folder).string(), output);
}

json report_of(const std::string& folder) {
  std::ifstream in(kScratch / folder / "report.json");
  return json::parse(in);
}

std::vector<json> cases_of(const json& report, const std::string& impl) {
  std::vector<json> out;
  for (const json& c : report["cases"])
    if (c["impl"] == impl) out.push_back(c);
  return out;
}

struct CleanUp {
  ~CleanUp() {
    std::error_code ec;
    fs::remove_all(kScratch, ec);
  }
} clean_up;

}  // namespace

TEST_CASE("plugin: the name takes its path from the file name and is listed") {
  CHECK(path_of("plugin:/x/libmine.so") == PathKind::sparse);
  CHECK(path_of("plugin:/x/libmine-mask.so") == PathKind::mask);
  CHECK(path_of("plugin:/masks/libmine.so") == PathKind::sparse);
  CHECK_THROWS_AS(path_of("plugin:"), InputError);
  std::string listed;
  REQUIRE(harness("replay --list-impl", &listed) == 0);
  CHECK(listed.find("plugin:PATH.so") != std::string::npos);
}

TEST_CASE("plugin: the CPU example replays the fixtures and passes, with its own kernel timings") {
  const std::string impl = "plugin:" + std::string(DSA_CPU_EXAMPLE_PLUGIN);
  std::string out;
  const int rc = replay(DSA_FIXTURES_DIR, impl, "example", &out);
  INFO(out);
  REQUIRE(rc == 0);
  const json report = report_of("example");
  const std::vector<json> cases = cases_of(report, impl);
  CHECK(cases.size() >= 6);  // every layer of smoke, edge and edge-r2, and their blocks
  for (const json& c : cases) CHECK(c["verdict"] == "passed");
  int runs = 0;
  for (const json& run : report["runs"]) {
    if (run["impl"] != impl) continue;
    ++runs;
    CHECK(run["device"] == "plugin");
    REQUIRE(!run["kernels"].empty());  // the plugin's own timings, as its timings() gave them
    for (const json& k : run["kernels"]) CHECK(std::string(k["kernel"]).rfind("example:reference-sparse/", 0) == 0);
  }
  CHECK(runs == 3);
}

TEST_CASE("plugin: each defect fails its own run, naming the plugin, and the other results are kept") {
  const std::pair<const char*, const char*> expected[] = {
      {"crash", "crashed with signal 11 (Segmentation fault) during select on layer"},
      {"malformed", "malformed outputs: layer"},
      {"unwritten", "was not written"},
      {"abi", "ABI version 2, but this harness loads version 1"},
      {"error", "failed (returned 7): out of device memory (planted)"},
      {"timings", "malformed timings: entry 0 ('defect/all')"},
      {"nothing-here", "cannot be loaded"},
  };
  std::string impls = "reference-sparse";
  for (const auto& [name, message] : expected) impls += ",plugin:" + defect(name);
  std::string out;
  const int rc = replay(std::string(DSA_FIXTURES_DIR) + "/smoke.h5", impls, "defects", &out);
  INFO(out);
  CHECK(rc == 1);
  const json report = report_of("defects");
  const std::vector<json> reference = cases_of(report, "reference-sparse");
  CHECK(!reference.empty());
  for (const json& c : reference) CHECK(c["verdict"] == "passed");
  for (const auto& [name, message] : expected) {
    const std::string impl = "plugin:" + defect(name);
    const std::vector<json> cases = cases_of(report, impl);
    INFO(impl);
    REQUIRE(cases.size() == 1);
    CHECK(cases[0]["layer"] == "run");
    CHECK(cases[0]["verdict"] == "incorrect");
    const std::string text = cases[0]["message"];
    CHECK(text.rfind("plugin " + defect(name) + ": ", 0) == 0);
    CHECK(text.find(message) != std::string::npos);
    CHECK(out.find(text) != std::string::npos);  // the console shows it too
  }
}

TEST_CASE("plugin: a failed plugin run's rerun command reruns it") {
  const std::string impl = "plugin:" + defect("crash");
  std::string out;
  REQUIRE(replay(std::string(DSA_FIXTURES_DIR) + "/smoke.h5", impl, "crash", &out) == 1);
  const json failed = cases_of(report_of("crash"), impl).at(0);
  INFO(out);
  const std::string rerun = failed["rerun"];
  REQUIRE(rerun.rfind("dsa-harness replay ", 0) == 0);
  REQUIRE(harness(rerun.substr(12) + " -o " + (kScratch / "rerun").string(), &out) == 1);
  CHECK(out.find("crashed with signal 11") != std::string::npos);
  CHECK(cases_of(report_of("rerun"), impl).size() == 1);
}

TEST_CASE("plugin: a plugin's error in `run` is a run error naming it") {
  std::string out;
  const int rc = harness("run " + std::string(DSA_FIXTURES_DIR) + "/smoke.h5 --impl plugin:" + defect("abi") + " -o " +
                             (kScratch / "abi.h5").string(), &out);
  CHECK(rc == 4);
  CHECK(out.find("plugin " + defect("abi") + ": ABI version 2") != std::string::npos);
}
