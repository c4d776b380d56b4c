#pragma once
// The consumer wgmma kernel's step (gpu/sparse_logits/sparse_wgmma.cu, whose top explains the
// layout and why each instruction is exact): the k-step instruction, its A operand and the
// epilogue. bench/micro/sparse_stage_rate.cu times this same step in other settings (operands
// from shared memory, pipelined), so the two cannot drift apart.
#include <cstdint>

#include "gpu/common/bf16.cuh"

namespace dsa::gpu::sparse_step {

constexpr uint32_t kBf16x2NegZero = 0x80008000u;  // -0, -0: adding it leaves every value as it is

// A shared-memory matrix descriptor's low word (its address in 16-byte units); the high word is
// the same for every operand here: 1024-byte stride between 8-row groups, 128-byte swizzle.
__device__ __forceinline__ uint32_t desc_lo(const void* p) { return (unsigned(__cvta_generic_to_shared(p)) & 0x3FFFF) >> 4; }
constexpr uint32_t kDescHi = (1024 >> 4) | (1u << 30);

// Pins the accumulators around the asynchronous region so no access moves across it.
__device__ __forceinline__ void pin(int (&d)[16]) {
#pragma unroll
  for (int i = 0; i < 16; ++i) asm volatile("" : "+r"(d[i])::"memory");
}

// This thread's constants of chain steps s = 0..7 (head t + 4s).
struct RowConsts {
  int ma[8], mb[8];
  uint32_t w2[8];  // w' = bf16(weight) * 2^(base-128) as bf16, twice
};

// The bf16 chain of steps 0..7 for this thread's two keys without their scales, the lane sums,
// then the scales: every thread of a quad ends with the scores of its rows g (low half) and g + 8
// (high half), keys 2p and 2p + 1 of its block.
__device__ __forceinline__ uint32_t chain_scores(const int (&da)[16], const int (&db)[16], const RowConsts& r,
                                                 uint32_t sk2) {
  uint32_t acc = 0;  // +0, +0
#pragma unroll
  for (int s = 0; s < 8; ++s) {
    const int e = 4 * (s >> 1) + (s & 1);  // row g; row g + 8 at e + 2
    float f[2];
#pragma unroll
    for (int k = 0; k < 2; ++k) {
      const int bits = da[e + 2 * k] * r.ma[s] + (db[e + 2 * k] * r.mb[s] + 0x4B000000);  // 2^23 + S
      f[k] = __fadd_rn(__int_as_float(bits), -0x1p23f);                                   // S, exact
    }
    acc = hw_fma_bf16x2(hw_relu_bf16x2(f[0], f[1]), r.w2[s], acc);
  }
  acc = hw_fma_bf16x2(acc, kBf16x2One, __shfl_xor_sync(0xFFFFFFFFu, acc, 2));  // lanes 0+2, 1+3
  acc = hw_fma_bf16x2(acc, kBf16x2One, __shfl_xor_sync(0xFFFFFFFFu, acc, 1));  // (0+2) + (1+3)
  return hw_fma_bf16x2(acc, sk2, kBf16x2NegZero);  // the key scale last (exact: see the top)
}

// d (+)= A * B for one 32-dim k-step: A = this warp's 16 keys from registers (a: the lane's
// fragment of one k-step group, kdfrag's pair order), B = the row's 32 heads by descriptor (low
// word b + kOffB). sm_90a only (elsewhere it is never called and has no body).
template <int kAccumulate, int kOffB>
__device__ __forceinline__ void wgmma_rs(int (&d)[16], const uint4& a, uint32_t b) {
#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile(
      "{\n.reg .pred p;\n.reg .b32 bl;\n.reg .b64 db;\nsetp.ne.b32 p, %21, 0;\n"
      "add.u32 bl, %20, %22;\nmov.b64 db, {bl, %23};\n"
      "wgmma.mma_async.sync.aligned.m64n32k32.s32.s8.s8 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, "
      "%13, %14, %15}, {%16, %17, %18, %19}, db, p;\n}\n"
      : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3]), "+r"(d[4]), "+r"(d[5]), "+r"(d[6]), "+r"(d[7]),
        "+r"(d[8]), "+r"(d[9]), "+r"(d[10]), "+r"(d[11]), "+r"(d[12]), "+r"(d[13]), "+r"(d[14]), "+r"(d[15])
      : "r"(a.x), "r"(a.y), "r"(a.z), "r"(a.w), "r"(b), "n"(kAccumulate), "n"(kOffB), "n"(kDescHi));
#endif
}

// One step's A operand of this lane: its fragment of each k-step group (rows g, g + 8 = keys 2p,
// 2p + 1 of its record, p = g % 4) and the two keys' scales.
struct StepA {
  uint4 f[4];
  float2 sk;
};

// wgmma reads A's registers asynchronously: keeps them from reuse until after the wait.
__device__ __forceinline__ void keep(const StepA& k) {
#pragma unroll
  for (int gr = 0; gr < 4; ++gr)
    asm volatile("" ::"r"(k.f[gr].x), "r"(k.f[gr].y), "r"(k.f[gr].z), "r"(k.f[gr].w) : "memory");
}

}  // namespace dsa::gpu::sparse_step
