#pragma once
// What the replay tests share (tests/harness/replay and tests/gpu_devices): a scratch folder and a
// quick replay of the committed fixtures.
#include <string>

#include "harness/replay/replay.hpp"
#include "tests/scratch_dir.hpp"

namespace dsa::test {

inline const std::string kFixtures = DSA_FIXTURES_DIR;  // the committed fixtures (fixtures/)

// The replay tests' scratch folder (tests/scratch_dir.hpp).
struct TempDir : ScratchDir {
  explicit TempDir(const std::string& tag) : ScratchDir("dsa-replay-", tag) {}
};

// The references on a sample of rows of every fixture: cheap, and every comparison kind runs.
// The implementations are pinned so that every host runs the same cases.
inline ReplayOptions quick(const std::string& out) {
  ReplayOptions o;
  o.inputs = {DSA_FIXTURES_DIR};
  o.impls = {"reference-sparse", "reference-mask"};
  o.rows = "6";
  o.seed = 3;
  o.out_dir = out;
  o.progress = nullptr;
  o.shard = Shard{};
  return o;
}

}  // namespace dsa::test
