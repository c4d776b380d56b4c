// core/parallel.hpp: every item runs once, and the error of the smallest failing item is the one
// rethrown whatever the thread count.
#include <atomic>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/parallel.hpp"
#include "tests/catch.hpp"

using namespace dsa;

TEST_CASE("parallel_for runs each item exactly once", "[core][parallel]") {
  std::vector<std::atomic<int>> hits(1000);
  parallel_for(int64_t(hits.size()), [&](int64_t i) { hits[size_t(i)] += int(i % 7) + 1; });
  for (size_t i = 0; i < hits.size(); ++i) {
    INFO("item " << i);
    CHECK(hits[i].load() == int(i % 7) + 1);
  }
  CHECK(cpu_threads() >= 1);
}

TEST_CASE("parallel_for rethrows the error of the smallest failing item", "[core][parallel]") {
  for (int attempt = 0; attempt < 5; ++attempt) {
    try {
      parallel_for(200, [](int64_t i) {
        if (i % 50 == 13) throw std::runtime_error("item " + std::to_string(i));
      });
      FAIL("no exception");
    } catch (const std::runtime_error& e) {
      CHECK(std::string(e.what()) == "item 13");
    }
  }
}
