// replay on the committed fixtures: a resumed run equals an uninterrupted one, shard runs merged
// equal one whole run, --case reruns exactly one case, a planted wrong output fails with a rerun
// command, and the exit codes of the CLI.
#include <algorithm>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "harness/batch/batch_io.hpp"
#include "core/errors.hpp"
#include "gpu/gpu_implementations.hpp"
#include "harness/impls/reference.hpp"
#include "harness/impls/registry.hpp"
#include "harness/replay/replay.hpp"
#include "harness/replay/cases.hpp"
#include "tests/harness/replay/replay_fixture.hpp"
#include "tests/catch.hpp"

using namespace dsa;
using dsa::test::kFixtures;
namespace fs = std::filesystem;
using nlohmann::json;
using test::quick;
using test::TempDir;

namespace {


json masked(const Report& r) { return mask_volatile(report_to_json(r)); }

// A planted nondeterministic implementation: the sparse reference, except that every second run
// (counted over all instances, as --repeat builds a fresh one per run) swaps one pick of the
// last consumer's longest row for a position the row did not pick.
class Flaky : public Implementation {
 public:
  static inline int runs = 0;
  std::string name() const override { return "flaky-sparse"; }

 protected:
  void begin(const Batch& batch, const RunOptions& options, Results& out) override {
    Results right = make_reference(PathKind::sparse)->run(batch, options);
    right.name = right.implementation = name();
    out = right;
    if (++runs % 2 == 1) return;
    const int layer = batch.layers_with(Role::consumer).back()->id;
    int row = 0;
    for (int r = 0; r < batch.rows(); ++r)
      if (out.rows_done[size_t(r)] && batch.compress_len[size_t(r)] > batch.compress_len[size_t(row)]) row = r;
    int32_t* picks = out.layers.at(layer).positions.data() + size_t(row) * size_t(batch.topk);
    int32_t fresh = 0;
    while (std::find(picks, picks + batch.topk, fresh) != picks + batch.topk) ++fresh;
    picks[batch.topk - 1] = fresh;
    std::sort(picks, picks + batch.topk);
  }
  void publish(const Batch&, const Layer&, const RunOptions&, Results&) override {}
  void select(const Batch&, const Layer&, const RunOptions&, Results&) override {}
  void plain(const Batch&, const Layer&, const RunOptions&, Results&) override {}
};

// Registers an implementation for the life of one test.
struct Planted {
  std::string name;
  Planted(const RegistryEntry& entry, ImplementationFactory make) : name(entry.name) {
    add_implementation(entry, std::move(make));
  }
  ~Planted() { remove_implementation(name); }
};

// The path of the first difference between two JSON values ("" when equal), for messages.
std::string first_difference(const json& a, const json& b, const std::string& path = "") {
  if (a == b) return "";
  if (a.type() != b.type() || (!a.is_object() && !a.is_array()) || a.size() != b.size())
    return path + ": " + a.dump().substr(0, 200) + " vs " + b.dump().substr(0, 200);
  if (a.is_array()) {
    for (size_t i = 0; i < a.size(); ++i)
      if (a[i] != b[i]) return first_difference(a[i], b[i], path + "/" + std::to_string(i));
  } else {
    for (auto it = a.begin(); it != a.end(); ++it) {
      if (!b.contains(it.key())) return path + "/" + it.key() + ": missing on the right";
      if (*it != b[it.key()]) return first_difference(*it, b[it.key()], path + "/" + it.key());
    }
  }
  return path + ": differs";
}

int cli(const std::string& args) {
  const int status = std::system((std::string(DSA_BINARY) + " " + args + " > /dev/null 2>&1").c_str());
  return WEXITSTATUS(status);
}

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

TEST_CASE("replay: a resumed run equals an uninterrupted one") {
  TempDir dir("resume");
  const Report whole = run_replay(quick(dir.sub("whole")));
  REQUIRE(whole.cases.size() >= 3);
  REQUIRE(whole.exit_code == kExitPass);

  // A kill after the first implementation run finished, in the middle of writing the next line.
  const std::string killed = dir.sub("killed");
  run_replay(quick(killed));
  std::vector<std::string> lines;
  {
    std::ifstream in(killed + "/cases.jsonl");
    for (std::string line; std::getline(in, line);) lines.push_back(line);
  }
  size_t keep = 0;
  while (keep < lines.size() && lines[keep].find("\"type\":\"run\"") == std::string::npos) ++keep;
  REQUIRE(keep + 1 < lines.size());
  {
    std::ofstream out(killed + "/cases.jsonl", std::ios::trunc);
    for (size_t i = 0; i <= keep; ++i) out << lines[i] << "\n";
    out << lines[keep + 1].substr(0, lines[keep + 1].size() / 2);  // torn line
  }
  fs::remove(killed + "/report.json");

  ReplayOptions again = quick(killed);
  again.resume = true;
  std::FILE* progress = std::tmpfile();
  again.progress = progress;
  const Report resumed = run_replay(again);
  std::rewind(progress);
  std::string said;
  for (int c; (c = std::fgetc(progress)) != EOF;) said += char(c);
  std::fclose(progress);
  CHECK(said.find("finished earlier") != std::string::npos);
  CHECK(first_difference(masked(resumed), masked(whole)) == "");
  CHECK(fs::exists(killed + "/report.json"));

  // Resuming with other settings is refused rather than mixing two runs.
  ReplayOptions other = quick(killed);
  other.resume = true;
  other.seed = 4;
  CHECK_THROWS_AS(run_replay(other), InputError);
}

TEST_CASE("replay: shard runs merged equal one whole run") {
  TempDir dir("shards");
  const Report whole = run_replay(quick(dir.sub("whole")));
  std::vector<Report> parts;
  std::vector<std::string> names;
  size_t inputs = 0;
  for (int i = 0; i < 2; ++i) {
    ReplayOptions o = quick(dir.sub("shard" + std::to_string(i)));
    o.shard = Shard{i, 2};
    parts.push_back(run_replay(o));
    names.push_back(o.out_dir);
    inputs += parts.back().inputs.size();
  }
  CHECK(inputs == whole.inputs.size());  // each input in exactly one shard
  CHECK(first_difference(masked(merge_reports(parts, names)), masked(whole)) == "");

  // The CLI does the same from the shard folders.
  REQUIRE(cli("merge " + names[0] + " " + names[1] + " -o " + dir.sub("merged")) == 0);
  const Report merged = read_report(dir.sub("merged") + "/report.json");
  CHECK(first_difference(masked(merged), masked(whole)) == "");
}

// Hermetic on zero, one or several GPUs: the id one past the last GPU this process sees never
// exists (under a CUDA_VISIBLE_DEVICES list, one no host has). The run over several GPUs is
// test_gpu_devices, which needs two.
TEST_CASE("replay: --devices naming a GPU that does not exist is refused before anything runs") {
  TempDir dir("devices");
  const int count = gpu::device_count();
  const int missing = std::getenv("CUDA_VISIBLE_DEVICES") ? 4096 : count;
  ReplayOptions o = quick(dir.sub("missing"));
  o.devices = {missing};
  o.program = DSA_BINARY;
  const auto refusal = [&o] {
    try {
      run_replay(o);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("(not refused)");
  };
  const std::string message = refusal();
  INFO(message);
  CHECK(message.rfind("--devices: GPU " + std::to_string(missing) + ": does not exist (", 0) == 0);
  if (count == 0) CHECK(message.find("no GPU here: ") != std::string::npos);
  CHECK(!fs::exists(dir.sub("missing")));  // refused up front: no process ran, nothing written
  o.devices = {missing, missing};
  CHECK(refusal() == "--devices: GPU " + std::to_string(missing) + ": is named twice");
  const std::string smoke = kFixtures + "/smoke.h5 --impl reference-sparse --rows 4 -o " + dir.sub("cli");
  CHECK(cli("replay " + smoke + " --devices " + std::to_string(missing)) == kExitInvalid);
  CHECK(cli("replay " + smoke + " --devices 0,1," + std::to_string(missing)) == kExitInvalid);
}

TEST_CASE("replay: --case reruns exactly one case") {
  TempDir dir("case");
  const Report whole = run_replay(quick(dir.sub("whole")));
  REQUIRE(!whole.cases.empty());
  const CaseResult& pick = whole.cases.back();
  ReplayOptions o = quick(dir.sub("one"));
  o.case_id = pick.id;
  const Report one = run_replay(o);
  REQUIRE(one.cases.size() == 1);
  CHECK(one.cases[0].id == pick.id);
  CHECK(case_to_json(one.cases[0]) == case_to_json(pick));
  CHECK(pick.rerun.find("--case " + pick.id + " --rows 6 --seed 3") != std::string::npos);
  // Short IDs: batch/impl/layer, whatever rows were sampled (the rows travel in the rerun flags).
  for (const CaseResult& c : whole.cases) {
    INFO(c.id);
    CHECK(std::count(c.id.begin(), c.id.end(), '/') == 2);
    CHECK(c.id == c.batch_id + "/" + c.impl + "/" + c.layer);
  }

  // An ID of an earlier version carries the rows as ranges; they still select the same rows.
  ReplayOptions legacy = quick(dir.sub("legacy"));
  legacy.rows = "all";
  legacy.case_id = pick.id + "/" + pick.rows;
  const Report old = run_replay(legacy);
  REQUIRE(old.cases.size() == 1);
  CHECK(old.cases[0].id == pick.id);
  CHECK(old.cases[0].rows == pick.rows);
  CHECK(case_to_json(old.cases[0])["comparisons"] == case_to_json(pick)["comparisons"]);

  o.case_id = "ffffffffffffffff/reference-sparse/24";
  CHECK_THROWS_AS(run_replay(o), InputError);
}

TEST_CASE("replay: a wrong recorded output fails, prints its rerun command, and --case reproduces it") {
  TempDir dir("planted");
  Batch batch = read_batch(kFixtures + "/smoke.h5");
  RunOptions ro;
  Results wrong = make_implementation("reference-sparse", batch)->run(batch, ro);
  // Replace one pick of the first consumer's longest row by a position that row did not pick.
  const Layer* consumer = batch.layers_with(Role::consumer).front();
  std::vector<int32_t>& pos = wrong.layers[consumer->id].positions;
  int row = 0;
  for (int r = 0; r < batch.rows(); ++r)
    if (batch.compress_len[size_t(r)] > batch.compress_len[size_t(row)]) row = r;
  REQUIRE(batch.compress_len[size_t(row)] > batch.topk);
  int32_t* picks = pos.data() + size_t(row) * size_t(batch.topk);
  std::vector<char> picked(size_t(batch.compress_len[size_t(row)]), 0);
  for (int i = 0; i < batch.topk; ++i) picked[size_t(picks[i])] = 1;
  int32_t fresh = 0;
  while (picked[size_t(fresh)]) ++fresh;
  picks[0] = fresh;
  std::sort(picks, picks + batch.topk);
  wrong.name = wrong.implementation = "planted-sparse";
  batch.outputs["planted-sparse"] = wrong;
  const std::string file = dir.sub("planted.h5");
  write_batch(file, batch);

  const std::string out = dir.sub("out");
  const int status = std::system((std::string(DSA_BINARY) + " replay " + file + " --impl recorded:planted-sparse -o " +
                                  out + " > " + dir.sub("stdout.txt") + " 2> " + dir.sub("stderr.txt")).c_str());
  CHECK(WEXITSTATUS(status) == kExitIncorrect);
  const std::string said = read_text(dir.sub("stderr.txt"));
  const size_t at = said.find("rerun: dsa-harness replay ");
  REQUIRE(at != std::string::npos);
  const std::string rerun = said.substr(at + 7, said.find('\n', at) - at - 7);
  CHECK(rerun.find("/" + std::to_string(consumer->id)) != std::string::npos);
  // The printed command, run as printed, reproduces the failure on exactly one case.
  const std::string again = std::string(DSA_BINARY) + rerun.substr(std::string("dsa-harness").size()) + " -o " +
                            dir.sub("again") + " > /dev/null 2>&1";
  CHECK(WEXITSTATUS(std::system(again.c_str())) == kExitIncorrect);
  const Report one = read_report(dir.sub("again") + "/report.json");
  REQUIRE(one.cases.size() == 1);
  CHECK(one.cases[0].verdict == Disposition::incorrect);
  CHECK(!one.cases[0].worst.empty());
  CHECK(read_text(out + "/junit.xml").find("<failure") != std::string::npos);
}

TEST_CASE("replay: every default tolerance is the rules' 2^-5") {
  CHECK(ReplayOptions{}.tolerance == 0.03125);
  CHECK(CaseContext{}.tolerance == 0.03125);
  CHECK(RunSettings{}.tolerance == 0.03125);
  // A rerun line names --tolerance only when it differs from the default.
  CHECK(rerun_command("b.h5", "id", "", 0.03125).find("--tolerance") == std::string::npos);
  CHECK(rerun_command("b.h5", "id", "", 0.0625).find("--tolerance 0.0625") != std::string::npos);
}

TEST_CASE("replay --repeat: a planted nondeterministic implementation is caught") {
  TempDir dir("repeat");
  const Planted flaky({"flaky-sparse", PathKind::sparse, "planted: every second run differs"},
                      [] { return ImplementationPtr(new Flaky); });
  ReplayOptions o = quick(dir.sub("once"));
  o.inputs = {kFixtures + "/smoke.h5"};
  o.impls = {"flaky-sparse", "reference-sparse"};
  o.rows = "4";
  // One run is right: without --repeat nothing is wrong to see.
  Flaky::runs = 0;
  const Report once = run_replay(o);
  CHECK(once.exit_code == kExitPass);

  o.repeat = 3;
  o.out_dir = dir.sub("repeated");
  Flaky::runs = 0;
  const Report repeated = run_replay(o);
  CHECK(Flaky::runs >= 2);
  CHECK(repeated.exit_code == kExitIncorrect);
  bool flagged = false;
  for (const ImplRun& run : repeated.runs) {
    INFO(run.impl);
    CHECK(run.repeats == 3);
    CHECK(run.deterministic == (run.impl == "flaky-sparse" ? 0 : 1));  // the reference repeats bitwise
  }
  for (const CaseResult& c : repeated.cases) {
    if (c.impl != "flaky-sparse") continue;
    CHECK(c.verdict == Disposition::incorrect);
    flagged = flagged || c.failed_metric.find("determinism") == 0;
  }
  CHECK(flagged);
}

TEST_CASE("replay CLI: exit codes") {
  TempDir dir("cli");
  const std::string smoke = kFixtures + "/smoke.h5";
  CHECK(cli("replay " + smoke + " --impl reference-sparse --rows 4 -o " + dir.sub("a")) == kExitPass);
  CHECK(cli("replay " + smoke + " --impl no-such-impl -o " + dir.sub("b")) == kExitInvalid);
  CHECK(cli("replay " + dir.sub("missing.h5") + " -o " + dir.sub("c")) == kExitInvalid);
  CHECK(cli("replay " + smoke + " --rows 4 --shard 2/2 -o " + dir.sub("d")) == kExitInvalid);
  CHECK(cli("replay --list-impl") == kExitPass);
  // A GPU implementation this machine cannot run: "not run" when offered by default, exit 4
  // when named.
  bool gpu_runs = true;
  for (const ImplAvailability& a : list_implementations())
    if (a.name == "gpu-sparse") gpu_runs = a.reason.empty();
  if (!gpu_runs) {
    CHECK(cli("replay " + smoke + " --rows 4 -o " + dir.sub("e")) == kExitPass);
    const Report r = read_report(dir.sub("e") + "/report.json");
    bool reported = false;
    for (const ImplRun& run : r.runs) reported |= run.impl == "gpu-sparse" && run.status == Disposition::not_supported;
    CHECK(reported);
    CHECK(cli("replay " + smoke + " --impl gpu-sparse --rows 4 -o " + dir.sub("f")) == kExitInvalid);
  } else {
    // Where it can run, naming it runs it, and it agrees with the references.
    CHECK(cli("replay " + smoke + " --impl gpu-sparse,gpu-mask --rows 4 -o " + dir.sub("f")) == kExitPass);
  }
}
