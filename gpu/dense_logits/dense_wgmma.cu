#include <cuda_runtime.h>

#include "gpu/common/check.cuh"
#include "gpu/common/wgmma_device.cuh"
#include "gpu/common/cp_async.cuh"
#include "gpu/dense_logits/dense_wgmma.cuh"
#include "gpu/dense_logits/wide_keys.cuh"

namespace dsa::gpu {
namespace {

constexpr int kKeys = 64;      // M: key positions per step
constexpr int kStages = 4;     // key stages in flight
constexpr int kChunk = 2048;   // positions per block
constexpr int kCols = kWgmmaTileRows * 32;
constexpr int kRowPad = 36;

// Operands in shared memory in wgmma's 128-byte swizzled K-major layout: rows of 128 bytes (the
// whole K), 16-byte chunk c of row r stored at chunk c ^ (r & 7), 8-row atoms of 1024 bytes
// (stride byte offset), 1024-aligned; a k32 step starts 32 bytes further. (The no-swizzle layout
// measured 93 ms on chunk-256k with shared memory the bottleneck: ncu L1 84 %, tensor 18 %.)
struct __align__(1024) WgmmaSmem {
  int8_t q[kCols * 128];           // B: column n = 8 j + 2 t + par holds head 2 j + par of row t
  int8_t k[kStages][kKeys * 128];  // A: the keys of a step
  float kscale[kStages][kKeys];
  // [row][head], rows 36 words apart: the four rows' 16-byte reads of one warp instruction
  // fall in different banks.
  float w[kWgmmaTileRows][kRowPad];       // w''
  int mul[3][kWgmmaTileRows][kRowPad];    // [point]: 2^m before position point + 1's k-step
};

#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define DSA_WGMMA 1

__device__ __forceinline__ int swizzled(int row, int chunk) { return row * 128 + ((chunk ^ (row & 7)) << 4); }

__device__ __forceinline__ uint64_t smem_desc(const void* p) {
  const uint32_t a = unsigned(__cvta_generic_to_shared(p));
  return uint64_t((a & 0x3FFFF) >> 4) | (uint64_t(1024 >> 4) << 32) | (uint64_t(1) << 62);  // 128B swizzle
}
__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory"); }
__device__ __forceinline__ void wgmma_wait() { asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory"); }
// Pins the accumulators around the asynchronous region so no access moves across it.
__device__ __forceinline__ void pin(int (&d)[64]) {
#pragma unroll
  for (int i = 0; i < 64; ++i) asm volatile("" : "+r"(d[i])::"memory");
}
// Shared memory written by threads (cp.async, st.shared), read next by wgmma (the async proxy).
__device__ __forceinline__ void fence_proxy_async() { asm volatile("fence.proxy.async.shared::cta;" ::: "memory"); }

__device__ __forceinline__ void wgmma_s8(int (&d)[64], uint64_t da, uint64_t db, int scale_d) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128k32.s32.s8.s8 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, %64, %65, p;\n}\n"
      : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3]), "+r"(d[4]), "+r"(d[5]), "+r"(d[6]), "+r"(d[7]),
        "+r"(d[8]), "+r"(d[9]), "+r"(d[10]), "+r"(d[11]), "+r"(d[12]), "+r"(d[13]), "+r"(d[14]), "+r"(d[15]),
        "+r"(d[16]), "+r"(d[17]), "+r"(d[18]), "+r"(d[19]), "+r"(d[20]), "+r"(d[21]), "+r"(d[22]), "+r"(d[23]),
        "+r"(d[24]), "+r"(d[25]), "+r"(d[26]), "+r"(d[27]), "+r"(d[28]), "+r"(d[29]), "+r"(d[30]), "+r"(d[31]),
        "+r"(d[32]), "+r"(d[33]), "+r"(d[34]), "+r"(d[35]), "+r"(d[36]), "+r"(d[37]), "+r"(d[38]), "+r"(d[39]),
        "+r"(d[40]), "+r"(d[41]), "+r"(d[42]), "+r"(d[43]), "+r"(d[44]), "+r"(d[45]), "+r"(d[46]), "+r"(d[47]),
        "+r"(d[48]), "+r"(d[49]), "+r"(d[50]), "+r"(d[51]), "+r"(d[52]), "+r"(d[53]), "+r"(d[54]), "+r"(d[55]),
        "+r"(d[56]), "+r"(d[57]), "+r"(d[58]), "+r"(d[59]), "+r"(d[60]), "+r"(d[61]), "+r"(d[62]), "+r"(d[63])
      : "l"(da), "l"(db), "r"(scale_d));
}

// Starts copying the keys of positions pt.. (< p1) and their scales into stage buf (the last,
// partial step of a block; KeyCopy does the full ones).
__device__ __forceinline__ void stage_keys(WgmmaSmem& sm, int buf, const DenseWgmmaArgs& a, int64_t kcol, int pt,
                                           int p1) {
  for (int i = threadIdx.x; i < kKeys * 8; i += 128) {
    const int m = i >> 3, c = i & 7;  // 8 threads fill one row
    int8_t* dst = sm.k[buf] + swizzled(m, c);
    if (pt + m < p1)
      cp_async16(dst, a.ks + (kcol + pt + m) * 128 + c * 16);
    else
      *reinterpret_cast<uint4*>(dst) = make_uint4(0, 0, 0, 0);
  }
  if (threadIdx.x < kKeys) {
    const int pos = pt + threadIdx.x;
    if (pos < p1)
      cp_async4(&sm.kscale[buf][threadIdx.x], a.kscale + kcol + pos);
    else
      sm.kscale[buf][threadIdx.x] = 1.0f;  // past the end: not a wide key
  }
}

// A thread's share of every full key stage, worked out once per block (ncu: the per-step address
// arithmetic of stage_keys was a fifth of the kernel's instructions): chunk c = tid & 7 of key
// rows m0 + 16 j (m0 = tid >> 3, j < 4). Those rows share m & 7, so the swizzled destinations are
// one offset + 2048 j, and step s reads 64 keys (8 KB) further than step 0.
struct KeyCopy {
  const int8_t* src;   // chunk c of key row m0 of step 0
  unsigned dst;        // its place in stage 0
  const float* ssrc;   // scale of position tid of step 0 (tid < 64)
  unsigned sdst;
};

__device__ __forceinline__ KeyCopy key_copy(WgmmaSmem& sm, const DenseWgmmaArgs& a, int64_t kcol, int p0) {
  const int m0 = threadIdx.x >> 3, c = threadIdx.x & 7;
  KeyCopy k;
  k.src = a.ks + (kcol + p0 + m0) * 128 + c * 16;
  k.dst = smem_addr(sm.k[0] + swizzled(m0, c));
  k.ssrc = a.kscale + kcol + p0 + threadIdx.x;
  k.sdst = smem_addr(&sm.kscale[0][threadIdx.x & (kKeys - 1)]);
  return k;
}

// Starts copying step s (all 64 positions below p1) into stage buf.
__device__ __forceinline__ void stage_full(const KeyCopy& k, int s, int buf) {
  const int8_t* src = k.src + s * (kKeys * 128);
  const unsigned dst = k.dst + buf * (kKeys * 128);
#pragma unroll
  for (int j = 0; j < 4; ++j) cp_async16_cg(dst + j * 2048, src + j * 2048);
  if (threadIdx.x < kKeys) cp_async4(k.sdst + buf * (kKeys * 4), k.ssrc + s * kKeys);
}

// The block's Horner plan: its k-step order (shared by its rows) and its mode: 0 when no head
// multiplies, 1 when heads multiply only before group 3 (group 3 far below the others: the common
// case), 2 when some head multiplies before position 1 or 2.
struct TilePlan {
  int mode, order;
};

// The query columns, weights and multipliers of the block's rows; returns the block's plan (a
// barrier for the whole block).
__device__ __forceinline__ TilePlan stage_queries(WgmmaSmem& sm, const DenseWgmmaArgs& a, const int (&rows)[kWgmmaTileRows]) {
  for (int i = threadIdx.x; i < kCols * 8; i += 128) {
    const int n = i >> 3, c = i & 7;
    const int r = (n >> 1) & 3, head = 2 * (n >> 3) + (n & 1);
    int8_t* dst = sm.q + swizzled(n, c);
    if (rows[r] >= 0)
      cp_async16(dst, a.qw + (int64_t(rows[r]) * 32 + head) * 128 + c * 16);
    else
      *reinterpret_cast<uint4*>(dst) = make_uint4(0, 0, 0, 0);
  }
  const int r = threadIdx.x >> 5, h = threadIdx.x & 31;
  float w = 0.0f;
  int m = 0;  // the head's packed multiplier exponents
  if (rows[r] >= 0) {
    w = a.qw_weight[int64_t(rows[r]) * 32 + h];
    m = a.qw_mul[int64_t(rows[r]) * 32 + h];
  }
  sm.w[r][h] = w;
#pragma unroll
  for (int p = 0; p < 3; ++p) sm.mul[p][r][h] = 1 << multiplier_exponent(m, p);
  const bool early = __syncthreads_or(multiplies_early(m)) != 0;
  const bool late = __syncthreads_or(multiplies(m)) != 0;
  return {early ? 2 : late ? 1 : 0, plan_order(a.qw_mul[int64_t(rows[0]) * 32])};
}

// Accumulator d[4 j + e] holds key 16 warp + g + 8 (e >> 1), column 8 j + 2 t + (e & 1): row t,
// head 2 j + (e & 1). So lane (g, t) holds all 32 heads of row t for two keys, and the whole
// score of each (no shuffles): head h of key `key` is d[acc(h, key)].
__device__ __forceinline__ constexpr int acc(int h, int key) { return 4 * (h >> 1) + 2 * key + (h & 1); }

__device__ __forceinline__ void apply_mul(int (&d)[64], const WgmmaSmem& sm, int point, int t) {
  const int4* m4 = reinterpret_cast<const int4*>(sm.mul[point][t]);
#pragma unroll
  for (int c = 0; c < 8; ++c) {
    const int4 m = m4[c];
    const int mk[4] = {m.x, m.y, m.z, m.w};
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      d[acc(4 * c + i, 0)] *= mk[i];
      d[acc(4 * c + i, 1)] *= mk[i];
    }
  }
}

// relu(S) as the float x = S * 2^-149 and the reference's sum over heads with the pre-scaled
// weights: four chains a_c over heads c + 4 k (k ascending), then (a0 + a2) + (a1 + a3).
__device__ __forceinline__ void scores(const int (&d)[64], const WgmmaSmem& sm, int t, float (&res)[2]) {
  const float4* w4 = reinterpret_cast<const float4*>(sm.w[t]);
  float a[2][4] = {};
#pragma unroll
  for (int k = 0; k < 8; ++k) {
    const float4 w = w4[k];
    const float wk[4] = {w.x, w.y, w.z, w.w};
#pragma unroll
    for (int key = 0; key < 2; ++key)
#pragma unroll
      for (int c = 0; c < 4; ++c)
        a[key][c] = __fmaf_rn(__int_as_float(max(d[acc(4 * k + c, key)], 0)), wk[c], a[key][c]);
  }
#pragma unroll
  for (int key = 0; key < 2; ++key) res[key] = __fadd_rn(__fadd_rn(a[key][0], a[key][2]), __fadd_rn(a[key][1], a[key][3]));
}

// The block's rows and positions.
struct BlockRows {
  int rows[kWgmmaTileRows], len[kWgmmaTileRows];
  int p0, p1;
  int64_t kcol;
};

// Where lane (g, t)'s two results of a step go: row t of the block.
struct RowOut {
  int shift, rlen;
  float* out;
};

__device__ __forceinline__ RowOut row_out(const DenseWgmmaArgs& a, int t) {
  const int row = a.tile_rows[blockIdx.y * kWgmmaTileRows + t];  // not b.rows[t]: a register array
  RowOut o;
  o.shift = row >= 0 ? a.qw_shift[row] : 0;
  o.out = a.out + int64_t(row >= 0 ? row - a.row0 : 0) * a.ld;
  o.rlen = row >= 0 ? a.sel_len[row] : 0;
  return o;
}

// The exact epilogue of step s (accumulators d complete, keys in stage buf): writes the scores of
// the folded keys (the wide ones are launch_dense_wide's).
__device__ __forceinline__ void epilogue(const int (&d)[64], const WgmmaSmem& sm, const BlockRows& b, const RowOut& o,
                                             int s, int buf) {
  const int warp = threadIdx.x >> 5, g = (threadIdx.x & 31) >> 2, t = threadIdx.x & 3;
  float res[2];
  scores(d, sm, t, res);
#pragma unroll
  for (int key = 0; key < 2; ++key) {
    const int m = 16 * warp + g + 8 * key;
    const int p = b.p0 + s * kKeys + m;
    const float ks = sm.kscale[buf][m];
    if (p < o.rlen && ks != 0.0f) o.out[p] = __fmul_rn(res[key], __int_as_float(__float_as_int(ks) + o.shift));
  }
}

// Multiplies the accumulators in place before group point + 1's k-step: the k-steps issued so
// far must have completed.
__device__ __forceinline__ void multiply_between(int (&d)[64], const WgmmaSmem& sm, int point, int t) {
  wgmma_commit();
  wgmma_wait();
  pin(d);
  apply_mul(d, sm, point, t);
  pin(d);
  wgmma_fence();
}

// The steps of one block. kMode (stage_queries): the multiplies a step needs, a template so the
// wgmma sequence has no branch inside (ptxas serialises wgmma across divergent paths).
template <int kMode>
__device__ __forceinline__ void run_steps(WgmmaSmem& sm, const DenseWgmmaArgs& a, const BlockRows& b, int order) {
  constexpr int S = kStages;
  const int t = threadIdx.x & 3;
  const int nsteps = (b.p1 - b.p0 + kKeys - 1) / kKeys;
  const int nfull = (b.p1 - b.p0) / kKeys;  // steps with all 64 positions below p1
  const KeyCopy kc = key_copy(sm, a, b.kcol, b.p0);
  auto stage = [&](int s) {
    if (s < nfull)
      stage_full(kc, s, s % S);
    else if (s < nsteps)
      stage_keys(sm, s % S, a, b.kcol, b.p0 + s * kKeys, b.p1);
  };
#pragma unroll
  for (int s = 0; s < S - 1; ++s) {
    stage(s);
    cp_async_commit();
  }
  const RowOut o = row_out(a, t);
  const uint64_t db = smem_desc(sm.q);
  // The descriptor offsets of the k-steps in the block's order (group 3 last).
  const int k0 = 2 * wgmma_order_group(order, 0), k1 = 2 * wgmma_order_group(order, 1), k2 = 2 * wgmma_order_group(order, 2);
  for (int s = 0; s < nsteps; ++s) {
    cp_async_wait<S - 2>();
    fence_proxy_async();
    __syncthreads();  // this step's keys landed; every wgmma of the last step has completed
    stage(s + S - 1);
    cp_async_commit();
    const int buf = s % S;
    const uint64_t da = smem_desc(sm.k[buf]);
    int d[64];
    pin(d);
    wgmma_fence();
    wgmma_s8(d, da + k0, db + k0, 0);  // +2 in the descriptor: the next 32 bytes of K
    if constexpr (kMode == 2) multiply_between(d, sm, 0, t);
    wgmma_s8(d, da + k1, db + k1, 1);
    if constexpr (kMode == 2) multiply_between(d, sm, 1, t);
    wgmma_s8(d, da + k2, db + k2, 1);
    if constexpr (kMode >= 1) multiply_between(d, sm, 2, t);
    wgmma_s8(d, da + 6, db + 6, 1);
    wgmma_commit();
    wgmma_wait();
    pin(d);
    epilogue(d, sm, b, o, s, buf);
  }
}

#endif


// One block: up to 4 rows of one request x kChunk positions; one warpgroup. Per step of 64 keys:
// wgmma m64n128k32 over the four groups with the in-place multiplies the block's heads need (one
// before group 3 in most blocks), then the exact epilogue. Blocks of other rows overlap their
// math with this one's (4 per SM).
__global__ void __launch_bounds__(128, 4) dense_wgmma_kernel(DenseWgmmaArgs a) {
#ifdef DSA_WGMMA
  extern __shared__ __align__(1024) uint8_t smem_raw[];
  // The swizzle works on absolute shared addresses: operands start on a 1024-byte boundary.
  const unsigned base = unsigned(__cvta_generic_to_shared(smem_raw));
  WgmmaSmem& sm = *reinterpret_cast<WgmmaSmem*>(smem_raw + ((1024 - (base & 1023)) & 1023));
  BlockRows b;
  int lmax = 0;
#pragma unroll
  for (int r = 0; r < kWgmmaTileRows; ++r) {
    b.rows[r] = a.tile_rows[blockIdx.y * kWgmmaTileRows + r];
    b.len[r] = b.rows[r] >= 0 ? a.sel_len[b.rows[r]] : 0;
    lmax = max(lmax, b.len[r]);
  }
  b.p0 = blockIdx.x * kChunk;
  if (b.p0 >= lmax) return;
  b.p1 = min(b.p0 + kChunk, lmax);
  b.kcol = a.sel_kcol[b.rows[0]];
  const TilePlan plan = stage_queries(sm, a, b.rows);
  cp_async_commit();
  if (plan.mode == 2)
    run_steps<2>(sm, a, b, plan.order);
  else if (plan.mode == 1)
    run_steps<1>(sm, a, b, plan.order);
  else
    run_steps<0>(sm, a, b, plan.order);
#endif
}

}  // namespace

bool dense_wgmma_supported() { return wgmma_device(); }

void launch_dense_wgmma(const DenseWgmmaArgs& a) {
  if (a.ntiles == 0 || a.max_len == 0) return;
  dim3 grid((a.max_len + kChunk - 1) / kChunk, a.ntiles);
  const int smem = int(sizeof(WgmmaSmem)) + 1024;  // room to align (dense_wgmma_kernel)
  DSA_CUDA_CHECK(cudaFuncSetAttribute(dense_wgmma_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  dense_wgmma_kernel<<<grid, 128, smem>>>(a);
  DSA_LAUNCH_CHECK("dense_wgmma_kernel");
  launch_dense_wide(a);
}

}  // namespace dsa::gpu
