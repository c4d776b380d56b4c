#include <cstdio>

#include "gpu/common/bf16.cuh"
#include "gpu/common/bf16_selftest.hpp"
#include "gpu/common/check.cuh"
#include "gpu/common/device_buffer.cuh"

namespace dsa::gpu {
namespace {

__device__ uint64_t mix(uint64_t x) {  // splitmix64's finaliser: independent bits per case
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// A finite bf16 pattern; `kind` picks the exponent range: any, tiny (subnormal products and
// sums), or near one.
__device__ uint16_t random_bf16(uint64_t r, int kind) {
  uint16_t sign = uint16_t((r >> 20) & 0x8000u), man = uint16_t(r & 0x7Fu);
  int exp = int((r >> 8) & 0xFF);
  if (kind == 1) exp = int((r >> 8) % 72);        // 2^-127 .. 2^-56: products underflow
  if (kind == 2) exp = 120 + int((r >> 8) % 16);  // 2^-7 .. 2^8
  if (exp == 255) exp = 254;
  return uint16_t(sign | (exp << 7) | man);
}

struct Case {
  uint32_t a, w, c;   // operands (bf16 bits in the low half)
  uint32_t hw, soft;  // results
};

__global__ void fma_kernel(uint64_t seed, int64_t n, unsigned long long* bad, Case* first) {
  const int64_t id = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (id >= n) return;
  const uint64_t r0 = mix(seed ^ uint64_t(id)), r1 = mix(r0), r2 = mix(r1);
  const int kind = int(id % 4);
  const uint16_t a = random_bf16(r0, kind == 3 ? 2 : kind), w = random_bf16(r1, kind == 3 ? 2 : kind);
  uint16_t c = random_bf16(r2, kind == 3 ? 2 : kind);
  if (kind == 3) {  // c close to -(a*w): cancellation and exact ties of the rounding
    const float p = bf16_value(a) * bf16_value(w);
    c = uint16_t((soft_bf16_rne(-p) + int((r2 >> 40) % 5) - 2) & 0xFFFFu);
    if ((c & 0x7F80u) == 0x7F80u) c = 0;
  }
  const float soft = soft_bf16_fma(bf16_value(a), bf16_value(w), bf16_value(c));
  const uint32_t hw = hw_fma_bf16x2(a | uint32_t(a) << 16, w | uint32_t(w) << 16, c | uint32_t(c) << 16);
  const uint32_t soft_bits = __float_as_uint(soft) >> 16;
  const bool same = (hw & 0xFFFFu) == soft_bits && (hw >> 16) == soft_bits;
  if (!same && atomicAdd(bad, 1ull) == 0) *first = Case{a, w, c, hw, soft_bits};
}

__global__ void relu_kernel(uint64_t seed, int64_t n, unsigned long long* bad, Case* first) {
  const int64_t id = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (id >= n) return;
  const uint64_t r = mix(seed ^ (uint64_t(id) << 1) ^ 1);
  uint32_t bits = uint32_t(r);
  if ((bits & 0x7F800000u) == 0x7F800000u) bits &= 0xBFFFFFFFu;  // finite only
  if (id % 3 == 1) bits = (bits & 0x807FFFFFu) | ((uint32_t(r >> 32) % 40) << 23);  // subnormal / tiny
  const float x = __uint_as_float(bits);
  const uint16_t rne = soft_bf16_rne(x);
  const uint32_t soft = (rne & 0x8000u) ? 0u : rne;
  const uint32_t hw = hw_relu_bf16x2(x, -x);
  const uint16_t rne_neg = soft_bf16_rne(-x);
  const uint32_t soft_hi = (rne_neg & 0x8000u) ? 0u : rne_neg;
  // A zero a_h may come out as -0: the chain starts at +0 and a product of +-0 added to a value
  // that is never -0 cannot change it, so only the value of a zero is compared.
  const uint32_t lo = (hw & 0xFFFFu) == 0x8000u ? 0u : (hw & 0xFFFFu), hi = (hw >> 16) == 0x8000u ? 0u : (hw >> 16);
  if ((lo != soft || hi != soft_hi) && atomicAdd(bad, 1ull) == 0)
    *first = Case{bits, 0, 0, hw, soft | soft_hi << 16};
}

}  // namespace

Bf16SelfTest bf16_selftest(uint64_t seed, int64_t n) {
  DeviceBuffer<unsigned long long> bad;
  DeviceBuffer<Case> first;
  bad.resize(2);
  first.resize(2);
  bad.fill_bytes(0, 2);
  first.fill_bytes(0, 2);
  const unsigned grid = unsigned((n + 255) / 256);
  fma_kernel<<<grid, 256>>>(seed, n, bad.get(), first.get());
  DSA_LAUNCH_CHECK("bf16 fma self-test");
  relu_kernel<<<grid, 256>>>(seed, n, bad.get() + 1, first.get() + 1);
  DSA_LAUNCH_CHECK("bf16 relu self-test");
  DSA_CUDA_CHECK(cudaDeviceSynchronize());
  const auto counts = bad.to_host(2);
  const auto cases = first.to_host(2);
  Bf16SelfTest out;
  out.checked = 2 * n;
  out.mismatches = int64_t(counts[0] + counts[1]);
  char buf[256];
  if (counts[0]) {
    const Case& c = cases[0];
    snprintf(buf, sizeof buf, "fma.rn.bf16x2(a=0x%04x, w=0x%04x, c=0x%04x) = 0x%08x, emulation 0x%04x", c.a, c.w,
             c.c, c.hw, c.soft);
    out.first = buf;
  } else if (counts[1]) {
    const Case& c = cases[1];
    snprintf(buf, sizeof buf, "cvt.rn.relu.bf16x2.f32(x=0x%08x, -x) = 0x%08x, emulation 0x%08x", c.a, c.hw, c.soft);
    out.first = buf;
  }
  return out;
}

}  // namespace dsa::gpu
