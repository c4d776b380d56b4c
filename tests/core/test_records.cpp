// core/records.cpp: the names of dispositions and rules, and the one mismatch text.
#include "core/records.hpp"
#include "tests/catch.hpp"

using namespace dsa;

TEST_CASE("a mismatch reads the same everywhere: layer, row, slot, expected, got, detail", "[core][records]") {
  Mismatch m;
  m.what = "position";
  m.row = 17;
  m.column = 3;
  m.expected = "4097";
  m.actual = "4105";
  m.detail = "score 1.5 vs k-th 1.75";
  CHECK(mismatch_text("24", m) == "layer 24 row 17 slot 3: expected position 4097, got 4105 (score 1.5 vs k-th 1.75)");
  m.what = "block";
  m.column = -1;
  m.detail.clear();
  CHECK(mismatch_text("blocks", m) == "blocks row 17: expected block 4097, got 4105");
}

TEST_CASE("dispositions and rules have the names the reports print", "[core][records]") {
  CHECK(std::string(disposition_name(Disposition::not_supported)) == "not supported");
  CHECK(std::string(disposition_name(Disposition::not_run)) == "not run");
  CHECK(std::string(rule_name(Rule::public_test)) == "public-test");
  CHECK(std::string(rule_name(Rule::own_path)) == "own-path");
}
