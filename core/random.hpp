#pragma once
// The project's one random generator and one hash, both built on splitmix64 (Steele, Lea and
// Flood, 2014): integer operations only, so every compiler and standard library gives the same
// bits (std distributions do not). The generator seeds its xoshiro streams with it, row sampling
// draws from it, and the reference keys its shared-results cache with hash_bytes.
#include <cstddef>
#include <cstdint>

namespace dsa {

constexpr uint64_t kSplitmixGamma = 0x9E3779B97F4A7C15ull;

// The splitmix64 finaliser of x + gamma: a bijection on 64 bits.
inline uint64_t splitmix64(uint64_t x) {
  uint64_t z = x + kSplitmixGamma;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// The splitmix64 sequence: returns the next value and advances `state` by the gamma.
inline uint64_t splitmix64_next(uint64_t& state) {
  const uint64_t out = splitmix64(state);
  state += kSplitmixGamma;
  return out;
}

// A 64-bit hash of `n` bytes: four splitmix64 lanes over 8-byte words (four lanes keep the
// multiplies independent, so hashing a large key pool stays memory-bound), then the tail.
uint64_t hash_bytes(const void* data, size_t n, uint64_t seed);

}  // namespace dsa
