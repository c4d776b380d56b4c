#pragma once
// Every measured or computed value is a named record; every output format (JSON, Markdown,
// JUnit, HTML) is a printer over the same records. Comparisons produce these.
#include <string>
#include <vector>

namespace dsa {

// A result is one of a few explicit dispositions (CUTLASS style).
enum class Disposition { passed, incorrect, not_run, not_supported, inconclusive };
const char* disposition_name(Disposition d);

struct Record {
  std::string name;   // e.g. "validity", "set_agreement.mean", "floor_violations.pick"
  double value = 0;
  std::string unit;   // "fraction", "count", "ulp", "ms", "TFLOP/s", "GB/s", "bytes"
  std::string hint;   // "higher is better", "lower is better", "must be 1", "must be 0", ""
};

// One mismatch located by coordinates, for DeepGEMM-style failure messages.
struct Mismatch {
  std::string what;   // "positions", "blocks", "dense_scores", ...
  int row = -1;       // global row
  int column = -1;    // slot in the row (pick index, block index, candidate column)
  std::string expected, actual;
  std::string detail; // e.g. "score 1.25 vs floor 1.5 (margin -0.25)"
};

// The one text of a mismatch (DeepGEMM style), printed alike by `compare`, the reports and JUnit:
// "layer 24 row 17 slot 3: expected position 4097, got 4105 (score 1.5 vs k-th 1.75)"
// ("blocks row 5 slot 2: ..." for level one).
std::string mismatch_text(const std::string& layer, const Mismatch& m);

// Per-row figures kept for plots and the worst-rows drill-down.
struct RowFigure {
  int row = -1;
  int length = 0;           // L
  double agreement = 1.0;   // set agreement of this row
  double floor_margin = 0;  // min over picks of (score - floor) / |floor| (negative = violation)
  bool exact = true;        // tie-aware exact
  std::vector<int> missed, extra;   // positions (first few)
};

// One implementation against another on one layer (or on the blocks: layer = "blocks").
struct LayerComparison {
  std::string layer;        // "20", "24", ..., "blocks", "24/tail"
  std::string role;         // source, consumer, plain, blocks
  std::vector<Record> records;
  Disposition disposition = Disposition::passed;
  std::string failed_metric;           // first metric that failed, empty when passed
  std::vector<Mismatch> mismatches;    // first few, in row order
  std::vector<RowFigure> rows;         // per compared row
};

// The value of a record by name in a layer comparison (nullptr when absent).
const Record* find_record(const LayerComparison& layer, const std::string& name);

// The rule a comparison is judged by.
enum class Rule { own_path, public_test, quality };
const char* rule_name(Rule rule);

struct Comparison {
  std::string impl;      // implementation under test
  std::string against;   // the reference it is compared with
  Rule rule = Rule::own_path;
  std::vector<LayerComparison> layers;
  Disposition disposition = Disposition::passed;
};

}  // namespace dsa
