// harness/replay/plan.cpp: what runs, in which order, and what each is compared with.
#include <string>
#include <vector>

#include "core/errors.hpp"
#include "harness/replay/plan.hpp"
#include "tests/catch.hpp"

using namespace dsa;

namespace {
std::vector<std::string> names_of(const std::vector<Against>& against) {
  std::vector<std::string> out;
  for (const Against& a : against) out.push_back(a.name + " " + rule_name(a.rule));
  return out;
}
}  // namespace

TEST_CASE("plan: gpu-sparse meets its reference, the mask path (gpu-mask when it runs) and exact") {
  CHECK(names_of(comparisons_for("gpu-sparse", {"reference-sparse", "gpu-sparse", "gpu-mask"})) ==
        std::vector<std::string>{"reference-sparse own-path", "gpu-mask public-test", "reference-exact quality"});
  CHECK(names_of(comparisons_for("gpu-sparse", {"reference-sparse", "gpu-sparse"})) ==
        std::vector<std::string>{"reference-sparse own-path", "reference-mask public-test", "reference-exact quality"});
  CHECK(names_of(comparisons_for("reference-mask", {})) == std::vector<std::string>{"reference-exact quality"});
  CHECK(comparisons_for("reference-exact", {}).empty());
}

TEST_CASE("plan: the references run first, unknown names fail before any work") {
  CHECK(target_names({"gpu-mask", "reference-mask", "gpu-mask"}) == std::vector<std::string>{"reference-mask", "gpu-mask"});
  const std::vector<std::string> all = target_names({});
  REQUIRE(all.size() >= 5);
  CHECK(all[0].rfind("reference-", 0) == 0);
  CHECK(all.back().rfind("gpu-", 0) == 0);
  CHECK_THROWS_AS(target_names({"no-such-impl"}), InputError);
}

TEST_CASE("plan: without --impl a batch's recorded groups are replayed too; with --impl only what it names") {
  Batch b;
  b.outputs["gpu-sparse"] = Results{};
  b.outputs["engine"] = Results{};
  const std::vector<std::string> targets = target_names({});
  std::vector<std::string> expected = targets;
  expected.push_back("recorded:engine");
  expected.push_back("recorded:gpu-sparse");
  CHECK(batch_targets(targets, {}, b) == expected);
  const std::vector<std::string> named = target_names({"reference-sparse"});
  CHECK(batch_targets(named, {"reference-sparse"}, b) == named);
  CHECK(batch_targets(targets, {}, Batch{}) == targets);
}
