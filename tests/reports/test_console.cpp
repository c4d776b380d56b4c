// reports/console.cpp: the text `dsa-harness compare` prints for one comparison.
#include <string>

#include "reports/printers.hpp"
#include "tests/catch.hpp"

using namespace dsa;

TEST_CASE("console: a failing layer prints its records, first mismatch, summary row and verdict", "[console]") {
  Comparison c;
  c.impl = "gpu-sparse";
  c.against = "reference-sparse";
  c.rule = Rule::own_path;
  c.disposition = Disposition::incorrect;
  LayerComparison l;
  l.layer = "24";
  l.role = "consumer";
  l.disposition = Disposition::incorrect;
  l.failed_metric = "exact";
  l.records = {{"validity", 1.0, "fraction", "must be 1"}, {"exact", 0.75, "fraction", "must be 1"},
               {"floor.violating_rows", 3, "count", "must be 0"}};
  l.mismatches.push_back({"position", 17, 3, "4097", "4105", "score 1.5 vs k-th 1.75"});
  c.layers = {l};
  const std::string text = reports::comparison_text(c, "batch.h5", 40);
  INFO(text);
  CHECK(text.rfind("gpu-sparse against reference-sparse on batch.h5: own-path rule, 40 rows done on both sides\n", 0) == 0);
  CHECK(text.find("\nlayer 24 (consumer): incorrect (exact)\n") != std::string::npos);
  CHECK(text.find("  exact                                  0.75  fraction  must be 1\n") != std::string::npos);
  CHECK(text.find("    layer 24 row 17 slot 3: expected position 4097, got 4105 (score 1.5 vs k-th 1.75)\n") !=
        std::string::npos);
  // Summary row: validity, agreement (absent: "-"), exact, floor violations, recall, max ulp.
  CHECK(text.find("\n24           incorrect               1          -     0.75          3          -          -\n") !=
        std::string::npos);
  CHECK(text.size() > 16);
  CHECK(text.substr(text.size() - 20) == "\nverdict: incorrect\n");
}
