// --rows all|N|i,j,k: deterministic draws that always hold the shortest and longest rows.
#include <algorithm>

#include "core/errors.hpp"
#include "harness/batch/row_selection.hpp"
#include "tests/catch.hpp"

using namespace dsa;

namespace {
// 100 rows in two requests; the shortest row is 37 (L = 1), the longest 80 (L = 5000).
Batch lengths_batch() {
  Batch b;
  b.num_rows = {60, 40};
  b.compressed_len = {3000, 5000};
  for (int r = 0; r < 100; ++r) b.compress_len.push_back(r < 60 ? 100 + 10 * r : 1000 + 50 * (r - 60));
  b.compress_len[37] = 1;
  b.compress_len[80] = 5000;
  b.finalize();
  return b;
}
}  // namespace

TEST_CASE("--rows all and N >= rows mean every row") {
  const Batch b = lengths_batch();
  CHECK(select_rows(b, "all", 0).empty());
  CHECK(select_rows(b, "100", 0).empty());
  CHECK(select_rows(b, "250", 3).empty());
}

TEST_CASE("--rows N draws N rows plus the extremes of L, deterministically") {
  const Batch b = lengths_batch();
  const std::vector<int> rows = select_rows(b, "10", 7);
  CHECK(rows.size() >= 10);
  CHECK(rows.size() <= 12);
  CHECK(std::is_sorted(rows.begin(), rows.end()));
  CHECK(std::adjacent_find(rows.begin(), rows.end()) == rows.end());
  CHECK(std::count(rows.begin(), rows.end(), 37) == 1);
  CHECK(std::count(rows.begin(), rows.end(), 80) == 1);
  CHECK(select_rows(b, "10", 7) == rows);     // same seed, same rows
  CHECK(select_rows(b, "10", 8) != rows);     // another seed, another draw
  const std::vector<int> none = select_rows(b, "0", 7);
  CHECK(none == std::vector<int>{37, 80});
}

TEST_CASE("--rows draws are spread over the batch, not a prefix") {
  const Batch b = lengths_batch();
  const std::vector<int> rows = draw_rows(b, 40, 1);
  CHECK(*std::max_element(rows.begin(), rows.end()) >= 80);
  int in_second_request = int(std::count_if(rows.begin(), rows.end(), [](int r) { return r >= 60; }));
  CHECK(in_second_request >= 5);
}

TEST_CASE("--rows i,j,k takes exactly those rows") {
  const Batch b = lengths_batch();
  CHECK(select_rows(b, "5,3,5,99", 0) == std::vector<int>{3, 5, 99});
  CHECK(select_rows(b, "17,", 0) == std::vector<int>{17});
}

TEST_CASE("--rows rejects what it cannot read, naming the option") {
  const Batch b = lengths_batch();
  CHECK_THROWS_AS(select_rows(b, "1,100", 0), InputError);
  CHECK_THROWS_AS(select_rows(b, "ten", 0), InputError);
  CHECK_THROWS_AS(select_rows(b, "-3", 0), InputError);
  CHECK_THROWS_AS(select_rows(b, "1,,2", 0), InputError);
  CHECK_THROWS_AS(select_rows(b, "", 0), InputError);  // an unset variable, never "all"
  try {
    select_rows(b, "1,x", 0);
    FAIL("--rows 1,x was accepted");
  } catch (const InputError& e) {
    CHECK(e.file() == "--rows");
    CHECK(std::string(e.what()).find("'x'") != std::string::npos);
  }
}
