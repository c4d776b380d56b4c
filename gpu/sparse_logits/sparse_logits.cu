#include "gpu/common/bf16.cuh"
#include "gpu/common/check.cuh"
#include "gpu/common/fp4_mma.cuh"
#include "gpu/sparse_logits/sparse_logits.cuh"
#include "core/constants.hpp"

// One warp scores one table row: 2048 blocks of 8 candidates, 32 heads each.
//
// Fast route (keys and query on the fast path of fp4_mma.cuh, nearly all data): the 8 keys of a
// block come as ready int8 B fragments from the key prep (2 x 16 bytes per lane, no page
// lookup, no decoding), three blocks in flight; 4 int8 mma per m-tile give the group sums, and
//   total = 2^23 + sum_g C_g * mul_g      (4 IMAD; exact, |S| < 2^23 checked per row)
//   S*2^(Eq_min-128) = fma(float_bits(total), sq, -2^23*sq)   (exact: no int->float convert)
//   s = that * 2^(Ek_min-128)             (the single fp32 rounding of the exact score)
// then the bf16 chain on the hardware's own single-rounding instructions: cvt.rn.relu.bf16x2
// (a_h, two positions per instruction) and fma.rn.bf16x2 (lanes of the chain, two positions per
// instruction). Rows whose multipliers could reach 2^23 convert with I2F instead (still exact).
//
// Slow route (anything else): the block's keys read through the page table, decoded, staged in
// shared memory, head scores from fp4_mma.cuh's generic path, and the emulated bf16 chain.
namespace dsa::gpu {
namespace {

constexpr int kWarps = 4;
constexpr int kInFlight = 3;           // key tiles loaded ahead of the one being scored
constexpr int kMagicMulSum = 227;      // 12 * 96 * 32 * 227 < 2^23: the float-bits conversion is exact

// ---------------------------------------------------------------- slow route (any exponents)
struct SlowSmem {
  uint32_t slow_blocks[kTopkBlocks / 32];  // fast route: blocks left for the slow route
  int8_t ks[8 * kKeyStride];
  int8_t kr[8 * kKeyStride];
  uint32_t kexp[8];
  float kscale[8];
};

// Lanes 0..7 end up with the score of position 2t + g (lane = 4g + t).
__device__ __forceinline__ uint16_t soft_epilogue(const float (&s)[4][2], const float (&wb)[8]) {
  float a[4][2];
#pragma unroll
  for (int i = 0; i < 4; ++i)
#pragma unroll
    for (int p = 0; p < 2; ++p) {
      const uint16_t b = soft_bf16_rne(s[i][p]);
      a[i][p] = (b & 0x8000u) ? 0.0f : bf16_value(b);  // negatives (and -0) -> +0
    }
  float chain[8];
  own_position(a, chain);
  float acc = 0.0f;
#pragma unroll
  for (int j = 0; j < 8; ++j) acc = soft_bf16_fma(chain[j], wb[j], acc);
  const float t = soft_bf16_sum(acc, __shfl_xor_sync(0xFFFFFFFFu, acc, 16));
  const float score = soft_bf16_sum(t, __shfl_xor_sync(0xFFFFFFFFu, t, 8));
  return uint16_t(__float_as_uint(score) >> 16);
}

__device__ __forceinline__ void load_row(const SparseLogitsArgs& a, int row, QueryFrags& q, float (&wb)[8]) {
  const int g = (threadIdx.x & 31) >> 2;
  load_query(q, a.qr + int64_t(row) * 4096, a.qexp + int64_t(row) * 32, a.qscale + int64_t(row) * 32,
             a.row_fast[row]);
#pragma unroll
  for (int j = 0; j < 8; ++j) wb[j] = bf16_value(soft_bf16_rne(a.weights[int64_t(row) * 32 + (g >> 1) + 4 * j]));
}

// Scores block `blk` of selected row `row` into columns c0..c0+7 (< valid). Rare on the fast
// route, so it reloads the row's operands itself rather than holding them in registers.
__device__ __noinline__ void score_block_slow(const SparseLogitsArgs& a, int row, const int32_t* table, int L,
                                              int blk, int c0, int valid, uint16_t* out, SlowSmem& sm) {
  const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
  QueryFrags q;
  float wb[8];
  load_row(a, row, q, wb);
  const int n = lane >> 2, grp = lane & 3;  // staging role: position n of the block, 32-dim group
  const int P = a.page_size;
  const int64_t pos = int64_t(blk) * 8 + n;
  uint32_t words[4] = {0, 0, 0, 0};
  uint32_t exps = 0x80808080u;  // positions >= L: zero keys on the fast path (never written)
  if (pos < L) {
    const uint8_t* page = a.pool + int64_t(table[pos / P]) * P * 68;
    const int64_t off = pos % P;
    const uint4 packed = *reinterpret_cast<const uint4*>(page + off * 64 + grp * 16);
    words[0] = packed.x, words[1] = packed.y, words[2] = packed.z, words[3] = packed.w;
    exps = *reinterpret_cast<const uint32_t*>(page + int64_t(P) * 64 + off * 4);
  }
  float scale = 1.0f;
  int shift = 0;
  if (pos < L) {
    int e[4], emin = 255, emax = 0;
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      e[k] = int((exps >> (8 * k)) & 0xFF);
      emin = min(emin, e[k]);
      emax = max(emax, e[k]);
    }
    const bool fast = emax - emin <= 3 && emin - 128 >= -45 && emin - 128 <= 45;
    const int eg = grp == 0 ? e[0] : grp == 1 ? e[1] : grp == 2 ? e[2] : e[3];
    shift = fast ? eg - emin : 0;
    scale = fast ? __int_as_float((emin - 128 + 127) << 23) : 0.0f;
  }
  const Fp4Lut lut = fp4_lut(shift), raw_lut = fp4_lut(0);
  uint32_t sv[8], rv[8];
#pragma unroll
  for (int w = 0; w < 4; ++w) {
    unpack8(words[w], lut, sv[2 * w], sv[2 * w + 1]);
    unpack8(words[w], raw_lut, rv[2 * w], rv[2 * w + 1]);
  }
  uint4* sd = reinterpret_cast<uint4*>(sm.ks + n * kKeyStride + grp * 32);
  sd[0] = make_uint4(sv[0], sv[1], sv[2], sv[3]);
  sd[1] = make_uint4(sv[4], sv[5], sv[6], sv[7]);
  uint4* rd = reinterpret_cast<uint4*>(sm.kr + n * kKeyStride + grp * 32);
  rd[0] = make_uint4(rv[0], rv[1], rv[2], rv[3]);
  rd[1] = make_uint4(rv[4], rv[5], rv[6], rv[7]);
  if (grp == 0) {
    sm.kexp[n] = exps;
    sm.kscale[n] = scale;
  }
  __syncwarp();
  float sc[4][2];
  head_scores(q, sm.ks, sm.kscale, sm.kr, kKeyStride, sm.kexp, sc);
  const uint16_t score = soft_epilogue(sc, wb);
  const int c = c0 + 2 * t + g;
  if (lane < 8 && c < valid) out[c] = score;
  __syncwarp();
}

// ---------------------------------------------------------------- fast route
// A block's keys as this lane's B fragments (key g, dims 4t.. of each 16-byte half of each
// group: see launch_sparse_key_frags), the scale of key g, and the block id.
struct KeyTile {
  uint4 lo, hi;
  float scale;
  int blk;
};

struct FastRow {
  float sq[4], nsq[4];  // 2^(Eq_min-128) and -2^23 times it, of head_of(g, i)
  uint32_t w2[4];       // bf16(weight) of head_of(g, i), twice
};

template <bool kMagic>
__device__ __forceinline__ void score_block_fast(const QueryFrags& q, const FastRow& r, const KeyTile& k,
                                                 float sk0, float sk1, int c0, int valid, uint16_t* out) {
  const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
  const uint32_t b[4][2] = {{k.lo.x, k.lo.y}, {k.lo.z, k.lo.w}, {k.hi.x, k.hi.y}, {k.hi.z, k.hi.w}};
  float s[4][2];
#pragma unroll
  for (int mt = 0; mt < 2; ++mt) {
    int c[4][4] = {{0, 0, 0, 0}, {0, 0, 0, 0}, {0, 0, 0, 0}, {0, 0, 0, 0}};
#pragma unroll
    for (int ks = 0; ks < 4; ++ks) mma_s8(c[ks], q.a[mt][ks], b[ks][0], b[ks][1]);
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const int i = 2 * mt + (e >> 1);
      const float sk = (e & 1) ? sk1 : sk0;
      const int base = kMagic ? 0x4B000000 : 0;  // the bits of 2^23
      const int total = base + c[0][e] * q.mul[i][0] + c[1][e] * q.mul[i][1] + c[2][e] * q.mul[i][2] +
                        c[3][e] * q.mul[i][3];
      if (kMagic)
        s[i][e & 1] = __fmul_rn(__fmaf_rn(__int_as_float(total), r.sq[i], r.nsq[i]), sk);
      else
        s[i][e & 1] = __fmul_rn(__fmul_rn(__int2float_rn(total), r.sq[i]), sk);
    }
  }
  // The chain of lane l = g/2 for positions 2t (low half) and 2t+1 (high half): steps 0..3
  // (heads l+4i) sit in even groups, steps 4..7 (heads l+16+4i) in odd ones.
  uint32_t av[4];
#pragma unroll
  for (int i = 0; i < 4; ++i) av[i] = hw_relu_bf16x2(s[i][0], s[i][1]);
  const bool odd = g & 1;
  uint32_t acc = 0;  // +0, +0
  if (!odd) {
#pragma unroll
    for (int i = 0; i < 4; ++i) acc = hw_fma_bf16x2(av[i], r.w2[i], acc);
  }
  const uint32_t half = __shfl_xor_sync(0xFFFFFFFFu, acc, 4);
  if (odd) {
    acc = half;
#pragma unroll
    for (int i = 0; i < 4; ++i) acc = hw_fma_bf16x2(av[i], r.w2[i], acc);
  }
  acc = hw_fma_bf16x2(acc, kBf16x2One, __shfl_xor_sync(0xFFFFFFFFu, acc, 16));  // lanes 0+2, 1+3
  acc = hw_fma_bf16x2(acc, kBf16x2One, __shfl_xor_sync(0xFFFFFFFFu, acc, 8));   // (0+2) + (1+3)
  if (g == 1) {
    const int c = c0 + 2 * t;
    if (c + 1 < valid)
      *reinterpret_cast<uint32_t*>(out + c) = acc;
    else if (c < valid)
      out[c] = uint16_t(acc & 0xFFFFu);
  }
}

__device__ __forceinline__ void load_tile(KeyTile& k, const SparseLogitsArgs& a, int64_t kcol, int blk) {
  const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
  k.blk = blk;
  if (blk < 0) return;
  const int64_t col = kcol + int64_t(blk) * 8 + g;
  const uint4* p = reinterpret_cast<const uint4*>(a.kfrag + col * 128 + t * 32);
  k.lo = __ldg(p);
  k.hi = __ldg(p + 1);
  k.scale = __ldg(a.kscale + col);
}

template <bool kMagic>
__device__ __forceinline__ void score_row_fast(const SparseLogitsArgs& a, int row, const QueryFrags& q,
                                               const float (&wb)[8], const int32_t* blocks, const int32_t* table,
                                               int L, int valid, int64_t kcol, uint16_t* out, SlowSmem& sm) {
  const int lane = threadIdx.x & 31, g = lane >> 2;
  FastRow r;
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    r.sq[i] = q.sq[i];
    r.nsq[i] = -0x1p23f * q.sq[i];
    const uint32_t w = __float_as_uint(wb[(g & 1) * 4 + i]) >> 16;
    r.w2[i] = w | (w << 16);
  }
  const int nb = (valid + 7) / 8;
  sm.slow_blocks[lane] = 0;
  sm.slow_blocks[lane + 32] = 0;
  __syncwarp();
  // Block ids 32 at a time, one per lane; the next window is loaded a window ahead.
  int win = lane < nb ? blocks[lane] : 0;
  int next_win = 32 + lane < nb ? blocks[32 + lane] : 0;
  int loaded = 0;  // tiles requested so far (in order)
  auto request = [&](KeyTile& k) {
    const int j = loaded++;
    if (j >= nb) {
      k.blk = -1;
      return;
    }
    if (j > 0 && (j & 31) == 0) {
      win = next_win;
      next_win = j + 32 + lane < nb ? blocks[j + 32 + lane] : 0;
    }
    load_tile(k, a, kcol, __shfl_sync(0xFFFFFFFFu, win, j & 31));
  };
  KeyTile tiles[kInFlight];
#pragma unroll
  for (int s = 0; s < kInFlight; ++s) request(tiles[s]);
  for (int bi = 0; bi < nb; bi += kInFlight) {
#pragma unroll
    for (int s = 0; s < kInFlight; ++s) {
      const KeyTile k = tiles[s];
      request(tiles[s]);
      if (k.blk < 0) break;
      const int c0 = (bi + s) * 8;
      const bool fast = __all_sync(0xFFFFFFFFu, k.scale != 0.0f);
      if (fast) {
        const float sk0 = __shfl_sync(0xFFFFFFFFu, k.scale, 8 * (lane & 3));
        const float sk1 = __shfl_sync(0xFFFFFFFFu, k.scale, 8 * (lane & 3) + 4);
        score_block_fast<kMagic>(q, r, k, sk0, sk1, c0, valid, out);
      } else if (lane == 0) {
        sm.slow_blocks[(bi + s) >> 5] |= 1u << ((bi + s) & 31);  // no call in this loop: it would spill
      }
    }
  }
  __syncwarp();
  for (int w = 0; w < kTopkBlocks / 32; ++w)
    for (uint32_t bits = sm.slow_blocks[w]; bits != 0; bits &= bits - 1) {
      const int bi = w * 32 + __ffs(int(bits)) - 1;
      score_block_slow(a, row, table, L, blocks[bi], bi * 8, valid, out, sm);
    }
}

__global__ void __launch_bounds__(kWarps * 32, 3) sparse_logits_kernel(SparseLogitsArgs a) {
  __shared__ __align__(16) SlowSmem smem[kWarps];
  const int warp = threadIdx.x >> 5;
  const int i = blockIdx.x * kWarps + warp;
  if (i >= a.n) return;  // whole warps only: no block-wide barriers below
  SlowSmem& sm = smem[warp];

  const int row = a.rows[i];
  const int L = a.sel_len[row];
  const int req = a.sel_req[row];
  const int valid = a.valid_len[i];
  QueryFrags q;
  float wb[8];
  load_row(a, row, q, wb);
  const int32_t* table = a.table + int64_t(req) * a.table_width;
  const int32_t* blocks = a.blocks + int64_t(i) * kTopkBlocks;
  uint16_t* out = a.out + int64_t(i) * kCandidateWidth;

  if (q.fast) {
    // The float-bits conversion needs every head's sum of group multipliers bounded.
    bool magic = true;
#pragma unroll
    for (int h = 0; h < 4; ++h) magic &= q.mul[h][0] + q.mul[h][1] + q.mul[h][2] + q.mul[h][3] <= kMagicMulSum;
    if (__all_sync(0xFFFFFFFFu, magic))
      score_row_fast<true>(a, row, q, wb, blocks, table, L, valid, a.kcol[row], out, sm);
    else
      score_row_fast<false>(a, row, q, wb, blocks, table, L, valid, a.kcol[row], out, sm);
    return;
  }
  const int nb = (valid + 7) / 8;
  for (int bi = 0; bi < nb; ++bi) score_block_slow(a, row, table, L, blocks[bi], bi * 8, valid, out, sm);
}

// kfrag[col][t][8 words]: word 2*ks + h = bytes ks*32 + 16*h + 4*t .. +4 of the shifted key, so
// lane (g, t) of a warp finds its B fragments of key g in 32 contiguous bytes.
__global__ void key_frags_kernel(const int8_t* ks, int64_t ncols, int8_t* kfrag) {
  const int64_t id = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;  // one (col, t) pair
  if (id >= ncols * 4) return;
  const int64_t col = id >> 2;
  const int t = int(id & 3);
  uint32_t w[8];
#pragma unroll
  for (int ks_ = 0; ks_ < 4; ++ks_)
#pragma unroll
    for (int h = 0; h < 2; ++h)
      w[2 * ks_ + h] = *reinterpret_cast<const uint32_t*>(ks + col * 128 + ks_ * 32 + 16 * h + 4 * t);
  uint4* d = reinterpret_cast<uint4*>(kfrag + col * 128 + t * 32);
  d[0] = make_uint4(w[0], w[1], w[2], w[3]);
  d[1] = make_uint4(w[4], w[5], w[6], w[7]);
}

}  // namespace

void launch_sparse_key_frags(const int8_t* ks, int64_t ncols, int8_t* kfrag) {
  if (ncols == 0) return;
  key_frags_kernel<<<unsigned((ncols * 4 + 255) / 256), 256>>>(ks, ncols, kfrag);
  DSA_LAUNCH_CHECK("key_frags_kernel");
}

void launch_sparse_logits(const SparseLogitsArgs& a) {
  if (a.n == 0) return;
  sparse_logits_kernel<<<(a.n + kWarps - 1) / kWarps, kWarps * 32>>>(a);
  DSA_LAUNCH_CHECK("sparse_logits_kernel");
}

}  // namespace dsa::gpu
