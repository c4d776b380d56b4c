// recorded:NAME returns the outputs recorded in the batch, restricted to the requested rows, and
// goes through the same comparison as computed results.
#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <sys/wait.h>
#include <unistd.h>

#include "harness/batch/batch_io.hpp"
#include "harness/compare/compare.hpp"
#include "core/errors.hpp"
#include "harness/generate/generate.hpp"
#include "harness/impls/recorded.hpp"
#include "harness/impls/registry.hpp"
#include "tests/catch.hpp"

using namespace dsa;

namespace {
Batch with_recorded_outputs() {
  GenerateOptions o;
  o.preset = "smoke";
  o.seed = 11;
  Batch b = generate_batch(o);
  RunOptions run;
  run.rows = {0, 2, 5};
  Results engine = make_implementation("reference-sparse", b)->run(b, run);
  engine.name = "engine";
  engine.implementation = "engine capture";
  b.outputs["engine"] = engine;
  return b;
}
}  // namespace

TEST_CASE("recorded:NAME returns the recorded group") {
  const Batch b = with_recorded_outputs();
  const Results& recorded = b.outputs.at("engine");
  ImplementationPtr impl = make_implementation("recorded:engine", b);
  CHECK(impl->name() == "recorded:engine");
  CHECK(path_of(impl->name()) == PathKind::sparse);
  const Results all = impl->run(b, {});
  CHECK(all.name == "recorded:engine");
  CHECK(all.rows_done == recorded.rows_done);
  CHECK(all.blocks == recorded.blocks);
  REQUIRE(all.layers.size() == recorded.layers.size());
  for (const auto& [id, l] : recorded.layers) CHECK(all.layers.at(id).positions == l.positions);
  CHECK(all.notes.find("engine capture") != std::string::npos);
}

TEST_CASE("recorded:NAME marks done only rows both requested and recorded") {
  const Batch b = with_recorded_outputs();
  RunOptions run;
  run.rows = {2, 3};
  const Results some = make_implementation("recorded:engine", b)->run(b, run);
  for (int r = 0; r < b.rows(); ++r) CHECK(some.rows_done[size_t(r)] == (r == 2 ? 1 : 0));
}

TEST_CASE("recorded outputs compare like computed ones") {
  Batch b = with_recorded_outputs();
  const Results recorded = make_implementation("recorded:engine", b)->run(b, {});
  const Results ref = make_implementation("reference-sparse", b)->run(b, {});
  const Comparison ok = compare_results(b, recorded, PathKind::sparse, ref, PathKind::sparse);
  CHECK(ok.disposition == Disposition::passed);
  CHECK(metrics::compared_rows(recorded, ref) == std::vector<int>{0, 2, 5});

  // A recorded pick that is not even inside the recorded blocks fails validity.
  const int layer = b.layers_with(Role::consumer).at(0)->id;
  const int row = 5;
  std::vector<int32_t>& pos = b.outputs.at("engine").layers.at(layer).positions;
  const int L = b.compress_len[size_t(row)];
  REQUIRE(L > b.topk);
  pos[size_t(row) * size_t(b.topk)] = -7;
  const Results broken = make_implementation("recorded:engine", b)->run(b, {});
  const Comparison bad = compare_results(b, broken, PathKind::sparse, ref, PathKind::sparse);
  CHECK(bad.disposition == Disposition::incorrect);
}

TEST_CASE("recorded:NAME without that group is invalid input naming it") {
  const Batch b = with_recorded_outputs();
  try {
    make_implementation("recorded:missing", b);
    FAIL("no error");
  } catch (const InputError& e) {
    CHECK(e.dataset() == "/outputs/missing");
    CHECK(e.rule().find("engine") != std::string::npos);
  }
}

TEST_CASE("CLI: run and compare take recorded outputs from the batch file") {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("dsa-recorded-test-" + std::to_string(getpid()));
  fs::create_directories(dir);
  const std::string batch = (dir / "b.h5").string(), results = (dir / "r.h5").string();
  write_batch(batch, with_recorded_outputs());
  const std::string bin = DSA_BINARY;
  auto status = [](const std::string& cmd) {
    const int rc = std::system((cmd + " > /dev/null 2>&1").c_str());
    return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
  };
  REQUIRE(status(bin + " run " + batch + " --impl recorded:engine,reference-sparse -o " + results) == 0);
  const std::string cmp = bin + " compare " + batch + " " + results;
  CHECK(status(cmp + " --impl recorded:engine --against reference-sparse") == 0);
  CHECK(status(cmp + " --impl engine --against reference-sparse") == 0);  // straight from the batch
  CHECK(status(cmp + " --impl recorded:nothing --against reference-sparse") == 4);
  fs::remove_all(dir);
}

TEST_CASE("recorded:NAME names the device and the recording's provenance from the group's attributes") {
  Batch b = with_recorded_outputs();
  Results& r = b.outputs.at("engine");
  r.device.clear();
  CHECK(make_implementation("recorded:engine", b)->device() == "recorded");  // a capture that names none
  r.device = "NVIDIA H200 (sm_90, 132 SMs)";
  r.harness = "dsa-harness 0.1.0 (commit 0123456789ab)";
  r.recorded_at = "2026-12-01T05:00:00Z";
  ImplementationPtr impl = make_implementation("recorded:engine", b);
  CHECK(impl->device() == r.device);
  const Results out = impl->run(b, {});
  CHECK(out.device == r.device);
  CHECK(out.notes == "recorded outputs /outputs/engine of engine capture on NVIDIA H200 (sm_90, 132 SMs) by "
                     "dsa-harness 0.1.0 (commit 0123456789ab) at 2026-12-01T05:00:00Z");
  Results bare;
  CHECK(recorded_provenance("x", bare) == "recorded outputs /outputs/x");
}
