#pragma once
// Two runs of the GPU engine that must give the same answers (tests/gpu): blocks, and every
// layer's positions and tail positions, with the first differing element named.
#include <string>
#include <vector>

#include "core/batch.hpp"
#include "core/constants.hpp"
#include "core/results.hpp"
#include "tests/catch.hpp"

namespace dsa::test {

// The first element where two int32 tables differ, as "row r, column c: a vs b", or "".
inline std::string first_mismatch(const std::vector<int32_t>& a, const std::vector<int32_t>& b, int width) {
  if (a.size() != b.size()) return "sizes " + std::to_string(a.size()) + " vs " + std::to_string(b.size());
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i] != b[i])
      return "row " + std::to_string(i / size_t(width)) + ", column " + std::to_string(i % size_t(width)) + ": " +
             std::to_string(a[i]) + " vs " + std::to_string(b[i]);
  return "";
}

// Blocks, and every layer's positions and tail positions, identical.
inline void require_identical(const Batch& batch, const Results& expected, const Results& got, const std::string& what) {
  INFO(what);
  CHECK(first_mismatch(expected.blocks, got.blocks, kTopkBlocks) == "");
  CHECK(!got.blocks.empty());
  for (const Layer& layer : batch.layers) {
    INFO("layer " << layer.id);
    REQUIRE(got.layers.count(layer.id) == 1);
    const LayerResult& e = expected.layers.at(layer.id);
    const LayerResult& g = got.layers.at(layer.id);
    CHECK(!g.positions.empty());
    CHECK(first_mismatch(e.positions, g.positions, batch.topk) == "");
    CHECK(first_mismatch(e.tail_positions, g.tail_positions, batch.topk) == "");
  }
}

}  // namespace dsa::test
