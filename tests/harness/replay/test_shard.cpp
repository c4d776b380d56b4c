// Shards: parsing, the scheduler environment variables, and a balanced assignment that puts
// every input in exactly one shard.
#include <algorithm>
#include <map>
#include <set>

#include "core/errors.hpp"
#include "harness/replay/shard.hpp"
#include "tests/catch.hpp"

using namespace dsa;

namespace {
std::map<std::string, std::string> fake_env;
const char* fake_getenv(const char* name) {
  auto it = fake_env.find(name);
  return it == fake_env.end() ? nullptr : it->second.c_str();
}
}  // namespace

TEST_CASE("shard: I/N parsing") {
  const Shard s = parse_shard("2/5");
  CHECK(s.index == 2);
  CHECK(s.count == 5);
  for (const char* bad : {"5/5", "1", "a/b", "-1/3", "1/0", "1/3x", ""}) {
    INFO(bad);
    CHECK_THROWS_AS(parse_shard(bad), InputError);
  }
}

TEST_CASE("shard: defaults from a Slurm array task or a Kubernetes Indexed Job") {
  fake_env = {};
  CHECK(shard_from_environment(fake_getenv).count == 1);
  fake_env = {{"SLURM_ARRAY_TASK_ID", "12"}, {"SLURM_ARRAY_TASK_MIN", "10"}, {"SLURM_ARRAY_TASK_COUNT", "4"}};
  Shard s = shard_from_environment(fake_getenv);
  CHECK(s.index == 2);
  CHECK(s.count == 4);
  fake_env = {{"JOB_COMPLETION_INDEX", "3"}, {"DSA_SHARD_COUNT", "8"}};
  s = shard_from_environment(fake_getenv);
  CHECK(s.index == 3);
  CHECK(s.count == 8);
  fake_env = {{"JOB_COMPLETION_INDEX", "3"}};  // the manifest forgot DSA_SHARD_COUNT
  CHECK_THROWS_AS(shard_from_environment(fake_getenv), InputError);
  fake_env = {{"JOB_COMPLETION_INDEX", "8"}, {"DSA_SHARD_COUNT", "8"}};
  CHECK_THROWS_AS(shard_from_environment(fake_getenv), InputError);
}

TEST_CASE("shard: every input lands in exactly one shard, balanced by size") {
  std::vector<ShardInput> inputs;
  uint64_t total = 0;
  for (int i = 0; i < 23; ++i) {
    inputs.push_back({"batch-" + std::to_string(i) + ".h5", uint64_t(1000 + (i * 7919) % 5000)});
    total += inputs.back().size;
  }
  for (int n : {1, 2, 3, 7, 30}) {
    std::multiset<std::string> seen;
    uint64_t largest = 0, smallest = total;
    for (int i = 0; i < n; ++i) {
      uint64_t load = 0;
      for (const std::string& f : shard_inputs(inputs, {i, n})) {
        seen.insert(f);
        for (const ShardInput& in : inputs)
          if (in.path == f) load += in.size;
      }
      largest = std::max(largest, load);
      smallest = std::min(smallest, load);
    }
    INFO("shards " << n);
    CHECK(seen.size() == inputs.size());
    CHECK(std::set<std::string>(seen.begin(), seen.end()).size() == inputs.size());
    if (n <= 7) CHECK(largest - smallest <= 6000);  // at most about one file apart
  }
  // The same list gives the same assignment whatever order it came in.
  std::vector<ShardInput> reversed(inputs.rbegin(), inputs.rend());
  auto a = shard_inputs(inputs, {1, 3});
  auto b = shard_inputs(reversed, {1, 3});
  CHECK(std::set<std::string>(a.begin(), a.end()) == std::set<std::string>(b.begin(), b.end()));
}

TEST_CASE("shard: a merge set must be one whole run, each shard once") {
  auto error = [](const std::vector<Shard>& set, const std::vector<std::string>& names) {
    try {
      check_shard_set(set, names);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  CHECK(error({{0, 2}, {1, 2}}, {"a", "b"}).empty());
  CHECK(error({{0, 1}}, {"whole"}).empty());
  CHECK(error({{0, 2}}, {"a"}).find("the run had 2 shards but 1 are given") != std::string::npos);
  CHECK(error({{0, 2}, {1, 3}}, {"a", "b"}).find("b: settings.shard: is shard 1/3 but a is 0/2") != std::string::npos);
  CHECK(error({{0, 2}, {0, 2}}, {"a", "a"}).find("shard 0/2 is also a") != std::string::npos);
  CHECK(error({{0, 3}, {2, 3}, {2, 3}}, {"a", "c", "c2"}).find("shard 2/3 is also c") != std::string::npos);
}
