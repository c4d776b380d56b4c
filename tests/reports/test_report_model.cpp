// The report model: JSON round trip (the contract), canonical order, verdicts and exit codes,
// merging shard reports.
#include <cmath>

#include "core/errors.hpp"
#include "reports/report_model.hpp"
#include "tests/catch.hpp"
#include "tests/reports/sample_report.hpp"

using namespace dsa;
using nlohmann::json;

TEST_CASE("report model: JSON round trip keeps every field") {
  const Report r = test::sample_report(1.0, true);
  const json j = report_to_json(r);
  CHECK(j.at("schema_version") == kReportSchemaVersion);
  const Report back = report_from_json(j, "mem");
  CHECK(report_to_json(back) == j);
  CHECK(back.cases.size() == 2);
  CHECK(back.cases[1].worst.front().missed.front().position == 4097);
}

TEST_CASE("report model: NaN records survive as null") {
  Report r = test::sample_report();
  r.cases[0].comparisons[0].parts[0].records.push_back({"scores.dense.calc_diff", std::nan(""), "", ""});
  const json j = report_to_json(r);
  const Report back = report_from_json(json::parse(j.dump()), "mem");
  CHECK(std::isnan(back.cases[0].comparisons[0].parts[0].records.back().value));
}

TEST_CASE("report model: other schema versions and malformed reports are refused") {
  json j = report_to_json(test::sample_report());
  j["schema_version"] = kReportSchemaVersion + 1;
  CHECK_THROWS_AS(report_from_json(j, "x.json"), InputError);
  j = report_to_json(test::sample_report());
  j["cases"][0]["verdict"] = "maybe";
  CHECK_THROWS_AS(report_from_json(j, "x.json"), InputError);
  CHECK_THROWS_AS(report_from_json(json::array(), "x.json"), InputError);
}

// The JSON library casts a float to an integer field: out of range, that is undefined behaviour
// (fuzz_report, 2026-12-01: `calls` = 6.67e74). Such reports are refused, naming the field.
TEST_CASE("report model: integer fields hold integers in range") {
  const json good = report_to_json(test::sample_report(1.0, true));
  auto refused = [&](const json& bad, const std::string& field) {
    try {
      report_from_json(bad, "x.json");
      FAIL("accepted " << field);
    } catch (const InputError& e) {
      CHECK(std::string(e.what()).find(field) != std::string::npos);
    }
  };
  json j = good;
  j["runs"][0]["repeats"] = 6.67e74;
  refused(j, "runs[0].repeats");
  j = good;
  j["runs"][0]["repeats"] = 2.0;  // a float, even integral: the writer never writes one
  refused(j, "runs[0].repeats");
  j = good;
  j["settings"]["shards"] = 4294967296LL;
  refused(j, "settings.shards");
  j = good;
  j["inputs"][0]["layers"] = json::array({20, 1e300});
  refused(j, "inputs[0].layers");
  j = good;
  j["runs"][0]["peak_device_bytes"] = 5000000000LL;  // a long long: in range
  j["settings"]["seed"] = 18446744073709551615ULL;
  CHECK_NOTHROW(report_from_json(j, "x.json"));
  CHECK_NOTHROW(report_from_json(good, "x.json"));
  // The JSONL log's records go through the same check.
  json run = good["runs"][0];
  run["kernels"][0]["calls"] = 1e10;
  CHECK_THROWS_WITH(impl_run_from_json(run), dsa_test::contains("kernels[0].calls"));
  json c = good["cases"][0];
  c["worst"] = json::array({{{"row", 0.5}}});
  CHECK_THROWS_WITH(case_from_json(c), dsa_test::contains("worst[0].row"));
  CHECK(impl_run_from_json(good["runs"][0]).impl == good["runs"][0]["impl"]);
}

TEST_CASE("report model: verdicts and exit codes") {
  CHECK(test::sample_report().exit_code == kExitPass);
  const Report failing = test::sample_report(1.0, true);
  CHECK(failing.verdict == Disposition::incorrect);
  CHECK(failing.exit_code == kExitIncorrect);
  CHECK(failing.cases[1].failed_metric.find("floor.violating_rows") != std::string::npos);
  CHECK(failing.cases[1].message.find("row 17 slot 3: expected ") != std::string::npos);  // core's mismatch_text

  Report not_run = test::sample_report();
  not_run.runs.push_back(test::unsupported_run("no CUDA"));
  finalize_report(not_run);
  CHECK(not_run.exit_code == kExitPass);  // offered by default: "not run" leaves the code alone
  for (ImplRun& run : not_run.runs) run.named |= run.impl == "gpu-mask";
  finalize_report(not_run);
  CHECK(not_run.exit_code == kExitInvalid);  // named with --impl

  Report nothing;
  finalize_report(nothing);
  CHECK(nothing.exit_code == kExitInconclusive);
}

// Relative closeness without Catch's Approx (its namespace differs between Catch2 2 and 3).
static bool near_rel(double a, double b, double rel = 1e-9) { return std::fabs(a - b) <= rel * std::fabs(b); }

TEST_CASE("report model: kernel figures against the measured ceilings") {
  // 2.2e12 FLOP in 1.716 ms is the fp8 floor exactly; 4.25e9 bytes in 1 ms the HBM floor.
  const KernelFigure math = kernel_figure("k", "24", 1, 20, 3.432, 3.0, 4.0, 2.2e12, 0);
  CHECK(near_rel(math.floor_ms, 2.2e12 / 1282e12 * 1e3));
  CHECK(near_rel(math.ceiling_share, 0.5, 1e-3));
  CHECK(near_rel(math.tflops, 2.2e12 / 3.432e-3 / 1e12));
  const KernelFigure memory = kernel_figure("k", "24", 1, 20, 2.0, 1.9, 2.1, 0, 4.25e9);
  CHECK(near_rel(memory.floor_ms, 1.0));
  CHECK(near_rel(memory.gbps, 2125));
}

TEST_CASE("report model: merging shards gives the whole report, in canonical order") {
  const Report whole = test::sample_report();
  Report a = whole, b = whole;
  a.inputs = {whole.inputs[1]};
  b.inputs = {whole.inputs[0]};
  a.runs.clear();
  b.runs.clear();
  for (const ImplRun& r : whole.runs) (r.batch_id == a.inputs[0].batch_id ? a : b).runs.push_back(r);
  a.cases = {whole.cases[1]};
  b.cases = {whole.cases[0]};
  a.settings.shard = 0;
  b.settings.shard = 1;
  a.settings.shards = b.settings.shards = 2;
  const Report merged = merge_reports({a, b}, {"s0", "s1"});
  CHECK(mask_volatile(report_to_json(merged)) == mask_volatile(report_to_json(whole)));
  CHECK(merged.shards_merged == std::vector<std::string>{"s0", "s1"});

  Report other = b;
  other.settings.seed = 99;
  CHECK_THROWS_AS(merge_reports({a, other}, {"s0", "s1"}), InputError);
}
