// The gate on constructed baselines: pass, correctness failure, regression, inconclusive,
// different GPU; and the CLI's exit codes on report.json files.
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "core/errors.hpp"
#include "harness/gate/gate.hpp"
#include "reports/printers.hpp"
#include "tests/catch.hpp"
#include "tests/reports/sample_report.hpp"

using namespace dsa;
using test::with_kernels_scaled;

namespace {

Record* find_record(Report& r, const std::string& name) {
  for (CaseResult& c : r.cases)
    for (CaseComparison& cmp : c.comparisons)
      for (LayerComparison& part : cmp.parts)
        for (Record& rec : part.records)
          if (rec.name == name) return &rec;
  return nullptr;
}

int cli_gate(const Report& base, const Report& cur, const std::string& extra) {
  const auto dir = std::filesystem::temp_directory_path() / ("dsa-gate-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  reports::write_text_atomic((dir / "base.json").string(), reports::to_json_text(base));
  reports::write_text_atomic((dir / "cur.json").string(), reports::to_json_text(cur));
  const std::string cmd = std::string(DSA_BINARY) + " gate --baseline " + (dir / "base.json").string() +
                          " --current " + (dir / "cur.json").string() + " " + extra + " > /dev/null 2>&1";
  const int status = std::system(cmd.c_str());
  std::filesystem::remove_all(dir);
  return WEXITSTATUS(status);
}

}  // namespace

TEST_CASE("gate: the same run twice passes, small timing wobble is no change") {
  const Report base = test::sample_report();
  const GateResult g = run_gate(base, with_kernels_scaled(base, 1.01), GateConfig{});
  INFO(gate_text(g));
  CHECK(g.exit_code == kExitPass);
  CHECK(g.kernels_compared == 4);
  CHECK(g.cases_compared == 2);
}

TEST_CASE("gate: an incorrect case is a correctness failure") {
  const GateResult g = run_gate(test::sample_report(), test::sample_report(1.0, true), GateConfig{});
  INFO(gate_text(g));
  CHECK(g.exit_code == kExitIncorrect);
  CHECK(gate_text(g).find("floor") != std::string::npos);
}

TEST_CASE("gate: validity below 100% fails even when the case verdict passed") {
  Report cur = test::sample_report();
  Record* validity = find_record(cur, "validity");
  REQUIRE(validity);
  validity->value = 0.999;
  const GateResult g = run_gate(test::sample_report(), cur, GateConfig{});
  CHECK(g.exit_code == kExitIncorrect);
  GateConfig lenient;
  lenient.validity_min = 0.99;
  CHECK(run_gate(test::sample_report(), cur, lenient).exit_code == kExitPass);
}

TEST_CASE("gate: agreement may not fall below the baseline's by more than the margin") {
  Report cur = test::sample_report();
  Record* mean = find_record(cur, "agreement.mean");
  REQUIRE(mean);
  const double before = mean->value;
  mean->value = before - 0.001;  // inside the default margin of 0.002
  CHECK(run_gate(test::sample_report(), cur, GateConfig{}).exit_code == kExitPass);
  mean->value = before - 0.01;
  const GateResult g = run_gate(test::sample_report(), cur, GateConfig{});
  CHECK(g.exit_code == kExitIncorrect);
  CHECK(gate_text(g).find("agreement.mean fell") != std::string::npos);
}

TEST_CASE("gate: a slowdown beyond both spreads is a regression") {
  const Report base = test::sample_report();
  const GateResult g = run_gate(base, with_kernels_scaled(base, 1.25), GateConfig{});
  INFO(gate_text(g));
  CHECK(g.exit_code == kExitRegression);
  CHECK(gate_text(g).find("slower beyond the noise") != std::string::npos);
}

TEST_CASE("gate: a change inside the noise is inconclusive, never faster or slower") {
  const Report base = test::sample_report();
  Report cur = base;
  // Median +5% (above min_effect) but the current min..max still overlaps the baseline's.
  for (ImplRun& run : cur.runs)
    for (KernelFigure& k : run.kernels) {
      k.median_ms *= 1.05;
      k.max_ms *= 1.2;
    }
  const GateResult g = run_gate(base, cur, GateConfig{});
  INFO(gate_text(g));
  CHECK(g.exit_code == kExitInconclusive);
  CHECK(gate_text(g).find("inside the noise") != std::string::npos);
  // Faster beyond the noise passes; a lower median inside the noise is not a regression.
  CHECK(run_gate(base, with_kernels_scaled(base, 0.7), GateConfig{}).exit_code == kExitPass);
  Report lower = base;
  for (ImplRun& run : lower.runs)
    for (KernelFigure& k : run.kernels) {
      k.median_ms *= 0.95;
      k.min_ms *= 0.8;
    }
  const GateResult l = run_gate(base, lower, GateConfig{});
  CHECK(l.exit_code == kExitPass);
  int not_regression = 0;
  for (const GateFinding& f : l.findings) {
    CHECK(f.detail.find("faster") == std::string::npos);
    not_regression += f.detail.find("inside the noise of the two runs, not a regression") != std::string::npos;
  }
  CHECK(not_regression == 4);
  // Changes below the timer's resolution are no change, whatever their share.
  GateConfig coarse;
  coarse.min_abs_ms = 1.0;
  CHECK(run_gate(base, cur, coarse).exit_code == kExitPass);
}

TEST_CASE("gate: single-sample timings have no spread and are not judged") {
  Report base = test::sample_report();
  for (ImplRun& run : base.runs)
    for (KernelFigure& k : run.kernels) k.samples = 1;
  const GateResult g = run_gate(base, with_kernels_scaled(base, 2.0), GateConfig{});
  CHECK(g.exit_code == kExitPass);
  CHECK(g.kernels_compared == 0);
}

TEST_CASE("gate: a case missing from the current run is inconclusive") {
  Report cur = test::sample_report();
  cur.cases.pop_back();
  CHECK(run_gate(test::sample_report(), cur, GateConfig{}).exit_code == kExitInconclusive);
}

TEST_CASE("gate: different GPU models are refused unless allowed") {
  Report cur = with_kernels_scaled(test::sample_report(), 3.0);  // a slower GPU
  cur.environment.gpu = "NVIDIA A100-SXM4-80GB";
  CHECK(run_gate(test::sample_report(), cur, GateConfig{}).exit_code == kExitInvalid);
  GateConfig allow;
  allow.allow_different_gpu = true;
  const GateResult g = run_gate(test::sample_report(), cur, allow);
  CHECK(g.exit_code == kExitPass);  // correctness only: latencies of other GPUs are not judged
  CHECK(g.kernels_compared == 0);
}

TEST_CASE("gate: config file keys are checked") {
  const auto path = std::filesystem::temp_directory_path() / ("dsa-gate-cfg-" + std::to_string(::getpid()) + ".json");
  std::ofstream(path) << R"({"agreement_margin": 0.05, "min_effect": 0.1})";
  const GateConfig cfg = read_gate_config(path.string());
  CHECK(cfg.agreement_margin == 0.05);
  CHECK(cfg.min_effect == 0.1);
  std::ofstream(path) << R"({"agreement_margn": 0.05})";
  CHECK_THROWS_AS(read_gate_config(path.string()), InputError);
  std::ofstream(path) << R"({"min_effect": "big"})";
  CHECK_THROWS_AS(read_gate_config(path.string()), InputError);
  std::filesystem::remove(path);
}

TEST_CASE("gate CLI: exit codes 0, 1, 2, 3, 4") {
  const Report base = test::sample_report();
  CHECK(cli_gate(base, base, "") == 0);
  CHECK(cli_gate(base, test::sample_report(1.0, true), "") == 1);
  CHECK(cli_gate(base, with_kernels_scaled(base, 1.5), "") == 2);
  Report missing = base;
  missing.cases.pop_back();
  CHECK(cli_gate(base, missing, "") == 3);
  Report other = base;
  other.environment.gpu = "NVIDIA B200";
  CHECK(cli_gate(base, other, "") == 4);
  CHECK(cli_gate(base, other, "--allow-different-gpu") == 0);
  CHECK(std::system((std::string(DSA_BINARY) + " gate --baseline /nonexistent.json --current /nonexistent.json"
                     " > /dev/null 2>&1").c_str()) >> 8 == 4);
}

TEST_CASE("gate: a kernel or a whole run missing from the baseline is inconclusive, named") {
  const Report base = test::sample_report();
  // The baseline never timed gpu-sparse's kernels; the current run is 10x slower there.
  Report no_kernels = base;
  for (ImplRun& run : no_kernels.runs)
    if (run.impl == "gpu-sparse") run.kernels.clear();
  GateResult g = run_gate(no_kernels, with_kernels_scaled(base, 10.0), GateConfig{});
  INFO(gate_text(g));
  CHECK(g.exit_code == kExitInconclusive);
  CHECK(gate_text(g).find("timed in the current run but not in the baseline") != std::string::npos);
  // The baseline lacks the whole gpu-sparse run (and its cases).
  Report no_run = base;
  no_run.runs.erase(std::remove_if(no_run.runs.begin(), no_run.runs.end(),
                                   [](const ImplRun& r) { return r.impl == "gpu-sparse"; }),
                    no_run.runs.end());
  g = run_gate(no_run, with_kernels_scaled(base, 10.0), GateConfig{});
  INFO(gate_text(g));
  CHECK(g.exit_code == kExitInconclusive);
  CHECK(gate_text(g).find("gpu-sparse [") != std::string::npos);
  CHECK(gate_text(g).find("ran in the current run but not in the baseline") != std::string::npos);
  // And the other way round: the current run lacks it.
  g = run_gate(base, no_run, GateConfig{});
  CHECK(g.exit_code == kExitInconclusive);
  CHECK(gate_text(g).find("ran in the baseline but not in the current run") != std::string::npos);
}

TEST_CASE("gate: fractions in the config must lie in [0, 1]") {
  const auto path = std::filesystem::temp_directory_path() / ("dsa-gate-frac-" + std::to_string(::getpid()) + ".json");
  std::ofstream(path) << R"({"validity_min": 2})";
  std::string message;
  try {
    read_gate_config(path.string());
  } catch (const InputError& e) {
    message = e.what();
  }
  CHECK(message.find("validity_min") != std::string::npos);
  CHECK(message.find("[0, 1]") != std::string::npos);
  std::ofstream(path) << R"({"validity_min": 1})";
  CHECK(read_gate_config(path.string()).validity_min == 1);
  std::filesystem::remove(path);
}
