// The bytes a plugin host sends its parent (harness/impls/plugin_wire.cpp): a Results round-trips
// exactly, and bytes that do not fit the batch (truncated, wrong sizes, a layer the batch lacks,
// trailing bytes) are refused with a PluginError naming the plugin.
#include "harness/batch/batch_io.hpp"
#include "harness/impls/plugin.hpp"
#include "harness/impls/plugin_wire.hpp"
#include "harness/impls/reference.hpp"
#include "tests/catch.hpp"

using namespace dsa;

namespace {

struct Case {
  Batch batch = read_batch(std::string(DSA_FIXTURES_DIR) + "/smoke.h5");
  Results results;
  Case() {
    RunOptions options;
    options.rows = {0, 3, batch.rows() - 1};
    results = make_reference(PathKind::sparse)->run(batch, options);
    results.implementation = "wire test";
    results.device = "cpu";
    results.timings.push_back({"mine/logits", "all", 2, 5, 1.5, 1.0, 2.5, 1e9, 4e6});
  }
};

std::string refusal(const std::string& bytes, const Batch& batch) {
  try {
    decode_results(bytes, batch, "plugin libx.so");
  } catch (const PluginError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("plugin wire: results round-trip exactly") {
  Case c;
  const Results back = decode_results(encode_results(c.results), c.batch, "plugin libx.so");
  CHECK(back.implementation == "wire test");
  CHECK(back.device == "cpu");
  CHECK(back.rows_done == c.results.rows_done);
  CHECK(back.blocks == c.results.blocks);
  REQUIRE(back.layers.size() == c.results.layers.size());
  for (const auto& [id, layer] : c.results.layers) {
    CHECK(back.layers.at(id).positions == layer.positions);
    CHECK(back.layers.at(id).tail_positions == layer.tail_positions);
  }
  REQUIRE(back.timings.size() == c.results.timings.size());
  const KernelTiming& mine = back.timings.back();
  CHECK(mine.kernel == "mine/logits");
  CHECK(mine.calls == 2);
  CHECK(mine.samples == 5);
  CHECK(mine.median_ms == 1.5);
  CHECK(mine.max_ms == 2.5);
  CHECK(mine.bytes == 4e6);
}

TEST_CASE("plugin wire: bytes that do not fit the batch are refused, naming the plugin") {
  Case c;
  const std::string bytes = encode_results(c.results);
  CHECK(refusal(bytes.substr(0, bytes.size() - 3), c.batch) == "plugin libx.so: the plugin host's output is truncated");
  CHECK(refusal(bytes + "x", c.batch) == "plugin libx.so: the plugin host's output has trailing bytes");
  std::string other = bytes;
  other[8] = 'X';  // the magic's first letter, after its 8-byte length
  CHECK(refusal(other, c.batch) == "plugin libx.so: the plugin host's output does not start with DSAPLUG1");

  Results shorter = c.results;
  shorter.layers.begin()->second.positions.pop_back();
  CHECK(refusal(encode_results(shorter), c.batch).find("positions holds " +
                                                       std::to_string(c.results.layers.begin()->second.positions.size() - 1) +
                                                       " values, not ") != std::string::npos);
  Results extra = c.results;
  extra.layers[999] = c.results.layers.begin()->second;
  CHECK(refusal(encode_results(extra), c.batch) == "plugin libx.so: outputs for layer 999, which the batch lacks");
}
