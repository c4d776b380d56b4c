// libFuzzer target: the report.json reader that `gate` and `merge` use (read_report), and what
// they do with an accepted report (run_gate against itself, merge_reports of it as one shard),
// on arbitrary bytes. Seeds: tests/fuzz/corpus/report. A refusal is InputError; anything else
// escaping, a crash or an allocation beyond -malloc_limit_mb is a finding.
#include <cstdint>

#include "core/errors.hpp"
#include "harness/gate/gate.hpp"
#include "reports/report_model.hpp"
#include "tests/fuzz/fuzz_input.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string& path = dsa::fuzz::write_input(data, size, ".json");
  try {
    const dsa::Report report = dsa::read_report(path);
    (void)dsa::gate_text(dsa::run_gate(report, report, dsa::GateConfig{}));
    (void)dsa::merge_reports({report}, {path});
  } catch (const dsa::InputError&) {
  }
  return 0;
}
