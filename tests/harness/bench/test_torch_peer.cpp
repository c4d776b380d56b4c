// The PyTorch peer's plumbing without torch: its JSON read into a run, malformed output named,
// and a stand-in script (run by /bin/sh in place of python3) for the child process.
#include "harness/bench/torch_peer.hpp"

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "core/errors.hpp"
#include "tests/catch.hpp"

using namespace dsa;

namespace {

nlohmann::json peer_json() {
  return {{"device", "NVIDIA H200"},
          {"peak_bytes", 40000000000LL},
          {"stages", {{{"stage", "dense_scores"}, {"layer", "20"}, {"samples", 20}, {"median_ms", 1070.5},
                       {"min_ms", 1069.0}, {"max_ms", 1075.0}},
                      {{"stage", "chunk"}, {"layer", "all"}, {"samples", 20}, {"median_ms", 5766.0},
                       {"min_ms", 5760.0}, {"max_ms", 5790.0}}}}};
}

struct Dir {
  std::filesystem::path path = std::filesystem::temp_directory_path() / ("dsa-peer-" + std::to_string(::getpid()));
  Dir() { std::filesystem::create_directories(path); }
  ~Dir() { std::filesystem::remove_all(path); }
  std::string sub(const std::string& n) const { return (path / n).string(); }
};

}  // namespace

TEST_CASE("torch peer: its JSON becomes a run of torch-mask figures") {
  const ImplRun run = torch_run_from_json(peer_json(), "b1", "peer.json");
  CHECK(run.impl == "torch-mask");
  CHECK(run.batch_id == "b1");
  CHECK(run.peak_device_bytes == 40000000000LL);
  REQUIRE(run.kernels.size() == 2);
  CHECK(run.kernels[0].kernel == "torch-mask/dense_scores");
  CHECK(run.kernels[0].layer == "20");
  CHECK(run.kernels[0].median_ms == 1070.5);
  CHECK(run.kernels[1].max_ms == 5790.0);
}

TEST_CASE("torch peer: malformed output names the file and the key") {
  nlohmann::json j = peer_json();
  j["stages"][0].erase("median_ms");
  CHECK_THROWS_WITH(torch_run_from_json(j, "b1", "peer.json"), dsa_test::contains("peer.json: stages: malformed"));
  j = peer_json();
  j["peak_bytes"] = 1e300;  // a cast to long long would be undefined
  CHECK_THROWS_WITH(torch_run_from_json(j, "b1", "peer.json"), dsa_test::contains("peer.json: peak_bytes: malformed"));
  j = peer_json();
  j["stages"][1]["samples"] = 20.5;
  CHECK_THROWS_WITH(torch_run_from_json(j, "b1", "peer.json"), dsa_test::contains("peer.json: stages: malformed"));
  j = peer_json();
  j["stages"] = nlohmann::json::array();
  CHECK_THROWS_WITH(torch_run_from_json(j, "b1", "peer.json"), "peer.json: stages: the torch peer timed no stage");
}

TEST_CASE("torch peer: the child gets the batch, samples, rows and JSON path; a failure is not_run with why") {
  Dir dir;
  const std::string script = dir.sub("peer.sh"), args = dir.sub("args.txt"), out = dir.sub("out.json");
  {
    std::ofstream s(script);
    s << "echo \"$@\" > " << args << "\ncat > \"$5\" <<'EOF'\n" << peer_json().dump() << "\nEOF\n";
  }
  const ImplRun ok = run_torch_peer({"/bin/sh", script, 25}, "b.h5", {3, 17}, "b1", out);
  CHECK(ok.status == Disposition::passed);
  CHECK(ok.kernels.size() == 2);
  std::ifstream in(args);
  std::string line;
  std::getline(in, line);
  CHECK(line == "b.h5 --samples 25 --json " + out + " --rows 3,17");

  {
    std::ofstream s(script);
    s << "echo 'torch: no CUDA device' >&2\nexit 3\n";
  }
  const ImplRun failed = run_torch_peer({"/bin/sh", script, 20}, "b.h5", {}, "b1", out);
  CHECK(failed.status == Disposition::not_run);
  CHECK(failed.reason == "/bin/sh " + script + " exited 3: torch: no CUDA device");
  const ImplRun missing = run_torch_peer({dir.sub("no-such-python"), script, 20}, "b.h5", {}, "b1", out);
  CHECK(missing.status == Disposition::not_run);
  CHECK(missing.reason.find("could not be started") != std::string::npos);
}
