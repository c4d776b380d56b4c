// core/random.cpp: splitmix64 gives the published sequence, and the hash depends on every byte.
#include <cstdint>
#include <set>
#include <vector>

#include "core/random.hpp"
#include "tests/catch.hpp"

using namespace dsa;

TEST_CASE("splitmix64 gives the reference sequence from seed 0", "[core][random]") {
  // The first outputs of Vigna's splitmix64.c with x = 0.
  uint64_t state = 0;
  CHECK(splitmix64_next(state) == 0xE220A8397B1DCDAFull);
  CHECK(splitmix64_next(state) == 0x6E789E6AA1B965F4ull);
  CHECK(splitmix64_next(state) == 0x06C45D188009454Full);
  CHECK(state == 3 * kSplitmixGamma);
}

TEST_CASE("hash_bytes changes with any byte, the length and the seed", "[core][random]") {
  std::vector<uint8_t> data(101);
  for (size_t i = 0; i < data.size(); ++i) data[i] = uint8_t(i * 37 + 11);
  const uint64_t base = hash_bytes(data.data(), data.size(), 7);
  CHECK(hash_bytes(data.data(), data.size(), 7) == base);
  CHECK(hash_bytes(data.data(), data.size(), 8) != base);
  CHECK(hash_bytes(data.data(), data.size() - 1, 7) != base);
  std::set<uint64_t> seen{base};
  for (size_t i : {size_t(0), size_t(31), size_t(32), size_t(95), size_t(96), size_t(100)}) {
    std::vector<uint8_t> flipped = data;
    flipped[i] ^= 1;
    INFO("flipped byte " << i);
    CHECK(seen.insert(hash_bytes(flipped.data(), flipped.size(), 7)).second);
  }
}
