#include "core/random.hpp"

#include <cstring>

namespace dsa {

uint64_t hash_bytes(const void* data, size_t n, uint64_t seed) {
  const uint8_t* p = static_cast<const uint8_t*>(data);
  uint64_t lane[4] = {splitmix64(seed), splitmix64(seed + 1), splitmix64(seed + 2), splitmix64(seed + 3)};
  size_t i = 0;
  for (; i + 32 <= n; i += 32)
    for (int l = 0; l < 4; ++l) {
      uint64_t w;
      std::memcpy(&w, p + i + 8 * l, 8);
      lane[l] = splitmix64(lane[l] ^ w);
    }
  uint64_t h = splitmix64(splitmix64(lane[0] ^ lane[1]) ^ splitmix64(lane[2] ^ lane[3]) ^ n);
  for (; i < n; ++i) h = splitmix64(h ^ p[i]);
  return h;
}

}  // namespace dsa
