// Golden outputs: the references rerun in-process on each committed fixture must reproduce the
// committed fixtures/golden/X.results.h5 exactly (rows, blocks, positions, tails, scores), so
// any change of the reference's numerics or selection shows up in CI. Regenerate with
// tools/make-golden.sh only for an intended change.
#include <cstring>
#include <iomanip>
#include <filesystem>
#include <string>

#include "harness/batch/batch_io.hpp"
#include "harness/impls/registry.hpp"
#include "tests/catch.hpp"

using namespace dsa;

namespace {

const std::string kFixtures = DSA_FIXTURES_DIR;

template <typename T>
const std::vector<T>& row_of(const std::vector<std::vector<T>>& rows, size_t r) {
  static const std::vector<T> empty;
  return r < rows.size() ? rows[r] : empty;
}

// Bitwise equality (distinguishes -0 from +0 and compares NaN payloads), with the first
// differing element named.
template <typename T>
void require_same(const std::vector<T>& got, const std::vector<T>& want, const std::string& what) {
  INFO(what);
  REQUIRE(got.size() == want.size());
  if (!got.empty() && std::memcmp(got.data(), want.data(), got.size() * sizeof(T)) == 0) return;
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::memcmp(&got[i], &want[i], sizeof(T)) == 0) continue;
    INFO(std::setprecision(9) << "first difference at element " << i << ": got " << double(got[i]) << ", golden " << double(want[i]));
    FAIL();
  }
}

void require_same_results(const Results& got, const Results& golden, int rows) {
  const std::string& g = golden.name;
  require_same(got.rows_done, golden.rows_done, g + " rows_done");
  require_same(got.blocks, golden.blocks, g + " blocks");
  REQUIRE(got.layers.size() == golden.layers.size());
  for (const auto& [id, want] : golden.layers) {
    REQUIRE(got.layers.count(id) == 1);
    const LayerResult& have = got.layers.at(id);
    const std::string layer = g + " layer " + std::to_string(id);
    require_same(have.positions, want.positions, layer + " positions");
    require_same(have.tail_positions, want.tail_positions, layer + " tail_positions");
    for (int r = 0; r < rows; ++r) {
      require_same(row_of(have.dense_scores, size_t(r)), row_of(want.dense_scores, size_t(r)),
                   layer + " row " + std::to_string(r) + " dense_scores");
      require_same(row_of(have.sparse_scores, size_t(r)), row_of(want.sparse_scores, size_t(r)),
                   layer + " row " + std::to_string(r) + " sparse_scores");
    }
  }
}

bool has_scores(const Results& r) {
  for (const auto& [id, l] : r.layers)
    for (const auto& row : l.dense_scores)
      if (!row.empty()) return true;
  return false;
}

void check_fixture(const std::string& name) {
  const std::string batch_path = kFixtures + "/" + name + ".h5";
  const std::string golden_path = kFixtures + "/golden/" + name + ".results.h5";
  INFO(golden_path);
  REQUIRE(std::filesystem::exists(batch_path));
  REQUIRE(std::filesystem::exists(golden_path));
  const Batch batch = read_batch(batch_path);
  const std::vector<Results> golden = read_results(golden_path, batch);  // also checks the batch ID
  std::vector<std::string> names;
  for (const Results& g : golden) names.push_back(g.name);
  REQUIRE(names == std::vector<std::string>{"reference-exact", "reference-mask", "reference-sparse"});
  for (const Results& g : golden) {
    RunOptions options;
    options.scores = has_scores(g);
    CHECK((options.scores || g.name == "reference-exact"));  // the production paths carry scores
    const Results got = make_implementation(g.name, batch)->run(batch, options);
    require_same_results(got, g, batch.rows());
  }
}

}  // namespace

TEST_CASE("golden outputs: smoke") { check_fixture("smoke"); }
TEST_CASE("golden outputs: edge") { check_fixture("edge"); }
TEST_CASE("golden outputs: edge-r2") { check_fixture("edge-r2"); }
