// harness/impls/registry.cpp: names, paths and references, and the reports' order of names
// (reports/ ranks names without linking the registry, so this pins the two together).
#include <string>
#include <vector>

#include "core/errors.hpp"
#include "harness/impls/registry.hpp"
#include "reports/report_model.hpp"
#include "tests/catch.hpp"

using namespace dsa;

TEST_CASE("registry: every name has a path whose reference is registered", "[registry]") {
  for (const RegistryEntry& e : registry()) {
    INFO(e.name);
    CHECK(path_of(e.name) == e.path);
    CHECK(path_of(reference_for(e.path)) == e.path);
  }
  CHECK(path_of("recorded:engine-mask") == PathKind::mask);
  CHECK(path_of("recorded:engine") == PathKind::sparse);
  CHECK_THROWS_AS(path_of("no-such-impl"), InputError);
}

TEST_CASE("registry: reports order implementation runs as the registry lists them", "[registry]") {
  Report r;
  std::vector<std::string> expected;
  for (const RegistryEntry& e : registry()) expected.push_back(e.name);
  expected.push_back("recorded:engine");
  for (auto it = expected.rbegin(); it != expected.rend(); ++it) {
    ImplRun run;
    run.batch_id = "aaaa";
    run.impl = *it;
    r.runs.push_back(run);
  }
  finalize_report(r);
  std::vector<std::string> got;
  for (const ImplRun& run : r.runs) got.push_back(run.impl);
  CHECK(got == expected);
}
