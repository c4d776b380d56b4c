#include "core/records.hpp"

namespace dsa {

const char* disposition_name(Disposition d) {
  switch (d) {
    case Disposition::passed: return "passed";
    case Disposition::incorrect: return "incorrect";
    case Disposition::not_run: return "not run";
    case Disposition::not_supported: return "not supported";
    case Disposition::inconclusive: return "inconclusive";
  }
  return "?";
}

std::string mismatch_text(const std::string& layer, const Mismatch& m) {
  std::string s = (layer == "blocks" ? std::string("blocks") : "layer " + layer) + " row " + std::to_string(m.row);
  if (m.column >= 0) s += " slot " + std::to_string(m.column);
  s += ": expected " + m.what + " " + m.expected + ", got " + m.actual;
  if (!m.detail.empty()) s += " (" + m.detail + ")";
  return s;
}

const Record* find_record(const LayerComparison& layer, const std::string& name) {
  for (const Record& r : layer.records)
    if (r.name == name) return &r;
  return nullptr;
}

const char* rule_name(Rule rule) {
  switch (rule) {
    case Rule::own_path: return "own-path";
    case Rule::public_test: return "public-test";
    case Rule::quality: return "quality";
  }
  return "?";
}

}  // namespace dsa
