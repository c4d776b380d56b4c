// The memory budget: sizes parse strictly, DSA_MEMORY_BUDGET overrides the default, and the
// products of hostile shapes saturate instead of wrapping to something small.
#include <cstdint>
#include <cstdlib>
#include <limits>

#include "core/errors.hpp"
#include "core/memory_budget.hpp"
#include "tests/catch.hpp"

using namespace dsa;

TEST_CASE("memory budget: sizes with and without units") {
  uint64_t b = 0;
  CHECK((parse_size("512", &b) && b == 512));
  CHECK((parse_size("4K", &b) && b == 4096));
  CHECK((parse_size("2G", &b) && b == (uint64_t(2) << 30)));
  CHECK((parse_size("3MiB", &b) && b == (uint64_t(3) << 20)));
  CHECK_FALSE(parse_size("", &b));
  CHECK_FALSE(parse_size("0", &b));
  CHECK_FALSE(parse_size("-1G", &b));
  CHECK_FALSE(parse_size("1.5G", &b));
  CHECK_FALSE(parse_size("12X", &b));
  CHECK_FALSE(parse_size("99999999999999999999", &b));
  CHECK_FALSE(parse_size("99999999999T", &b));
}

TEST_CASE("memory budget: DSA_MEMORY_BUDGET overrides half of RAM, a bad value is named") {
  ::unsetenv("DSA_MEMORY_BUDGET");
  const uint64_t half_ram = memory_budget();
  CHECK(half_ram > (uint64_t(64) << 20));
  ::setenv("DSA_MEMORY_BUDGET", "64M", 1);
  CHECK(memory_budget() == (uint64_t(64) << 20));
  ::setenv("DSA_MEMORY_BUDGET", "lots", 1);
  CHECK_THROWS_AS(memory_budget(), InputError);
  ::unsetenv("DSA_MEMORY_BUDGET");
  CHECK(memory_budget() == half_ram);
}

TEST_CASE("memory budget: shape products saturate, texts are readable") {
  const uint64_t big = uint64_t(1) << 40;
  CHECK(saturating_product(big, big) == std::numeric_limits<uint64_t>::max());
  CHECK(saturating_product(0, big) == 0);
  CHECK(saturating_product(1000, 1000) == 1000000);
  CHECK(bytes_text(17) == "17 B");
  CHECK(bytes_text(uint64_t(3) << 29) == "1.5 GiB");
}
