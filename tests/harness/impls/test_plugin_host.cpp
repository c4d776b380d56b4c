// The plugin host's own side (harness/impls/plugin_host.cpp), in this process, without the child:
// the CPU example plugin gives reference-sparse's outputs bit for bit on the wanted rows and
// padding elsewhere, every step is announced before it is called, and each defect that does not
// crash is a PluginError with the exact message (the crash is test_plugin.cpp's, in a child).
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "harness/batch/batch_io.hpp"
#include "harness/impls/plugin.hpp"
#include "harness/impls/plugin_host.hpp"
#include "harness/impls/reference.hpp"
#include "tests/catch.hpp"
#include "tests/harness/impls/defect_plugins.hpp"
#include "tests/scoped_env.hpp"

using namespace dsa;
using dsa::test::defect;

namespace {

// Runs the host; returns its error ("" when none) and what it announced.
std::string host_error(const std::string& library, const Batch& batch, const RunOptions& options, std::string* steps,
                       Results* results = nullptr) {
  std::FILE* log = std::tmpfile();
  std::string error;
  try {
    Results r = run_plugin_here(library, batch, options, log);
    if (results) *results = std::move(r);
  } catch (const PluginError& e) {
    error = e.what();
  }
  std::rewind(log);
  steps->clear();
  for (int ch; (ch = std::fgetc(log)) != EOF;) steps->push_back(char(ch));
  std::fclose(log);
  return error;
}

}  // namespace

TEST_CASE("plugin host: the CPU example equals reference-sparse on the wanted rows, padding elsewhere") {
  const Batch batch = read_batch(std::string(DSA_FIXTURES_DIR) + "/smoke.h5");
  RunOptions options;
  options.rows = {1, 4, batch.rows() - 1};
  const Results want = make_reference(PathKind::sparse)->run(batch, options);
  Results got;
  std::string steps;
  REQUIRE(host_error(DSA_CPU_EXAMPLE_PLUGIN, batch, options, &steps, &got).empty());
  CHECK(steps.find("plugin-host: create\nplugin-host: publish on layer 20\nplugin-host: select on layer 24\n") !=
        std::string::npos);
  CHECK(got.implementation == "cpu-example (reference-sparse)");
  CHECK(got.device == "cpu");
  CHECK(got.rows_done == want.rows_done);
  CHECK(got.blocks == want.blocks);
  REQUIRE(got.layers.size() == want.layers.size());
  for (const auto& [id, layer] : want.layers) {
    INFO("layer " << id);
    CHECK(got.layers.at(id).positions == layer.positions);
    CHECK(got.layers.at(id).tail_positions == layer.tail_positions);
  }
  CHECK(!got.timings.empty());
}

TEST_CASE("plugin host: each defect is a PluginError naming the plugin, the step and the element") {
  const Batch batch = read_batch(std::string(DSA_FIXTURES_DIR) + "/smoke.h5");
  const int len = batch.compress_len[0];
  const std::pair<std::string, std::string> expected[] = {
      {"malformed", "malformed outputs: layer 20 row 0 slot 3: " + std::to_string(len + 100) + " outside [-1, L = " +
                        std::to_string(len) + ")"},
      {"unwritten", "malformed outputs: layer 24 row 0 slot 0 was not written"},
      {"abi", "ABI version 2, but this harness loads version 1 (rebuild it against this include/dsa_harness/plugin.h)"},
      {"error", "publish on layer 20 failed (returned 7): out of device memory (planted)"},
      {"timings", "malformed timings: entry 0 ('defect/all') needs a name, samples >= 1 and 0 <= min_ms <= median_ms <= max_ms"},
  };
  std::string steps;
  for (const auto& [name, message] : expected) {
    INFO(name);
    CHECK(host_error(defect(name), batch, RunOptions{}, &steps) == "plugin " + defect(name) + ": " + message);
  }
  CHECK(host_error(defect("nothing-here"), batch, RunOptions{}, &steps).rfind("plugin " + defect("nothing-here") + ": cannot be loaded: ", 0) == 0);
  CHECK(host_error(DSA_BINARY, batch, RunOptions{}, &steps).find("cannot be loaded") != std::string::npos);  // not a library
}

// LeakSanitizer found each failed run's plugin state leaked: destroy() ran only after success.
TEST_CASE("plugin host: a run that fails after create still destroys the plugin's state") {
  const Batch batch = read_batch(std::string(DSA_FIXTURES_DIR) + "/smoke.h5");
  const std::string log = (std::filesystem::temp_directory_path() /
                           ("dsa-plugin-host-destroy-" + std::to_string(::getpid()) + ".log")).string();
  std::filesystem::remove(log);
  {
    const test::ScopedEnv destroy_log("DSA_DEFECT_DESTROY_LOG", log.c_str());
    const char* set = std::getenv("DSA_DEFECT_DESTROY_LOG");
    REQUIRE((set != nullptr && log == set));
    std::string steps;
    for (const char* name : {"malformed", "unwritten", "error", "timings", "abi"}) {
      INFO(name);
      CHECK(!host_error(defect(name), batch, RunOptions{}, &steps).empty());
    }
  }
  std::ifstream in(log);
  int destroyed = 0;
  for (std::string line; std::getline(in, line);) destroyed += line == "destroy";
  CHECK(destroyed == 4);  // every defect but abi, which is refused before create
  std::filesystem::remove(log);
}
