#pragma once
// Dense fp32 scores on Hopper's wgmma (sm_90a), bit-identical to the reference for the rows the
// query prep admits (gpu/prep: the wgmma form); the other rows take launch_dense_logits.
//
// Exact route (per head h of a row, per key p):
//   * one int32 accumulator S, Horner style: the k-steps of groups 0..3 in order, the
//     accumulator multiplied in place by 2^m[i] before group i's step, group g's query values
//     shifted left by f[g] <= 3, so that group g weighs 2^(e[g] - base) (gpu/prep, horner_plan).
//     Most heads span at most 3 binades (no multiply); most others have group 3 far below the
//     rest (one multiply, before group 3). Keys fully folded (key prep). In the one-multiplier
//     plans (kUniformClass below) f[g] may be any shift that keeps the group's values exact
//     int8: right by no more than their common trailing zero bits, left while the largest stays
//     <= 127.
//     |S| < 2^24, and so every partial sum, checked per head against the largest key value 96.
//   * relu and conversion in one integer max: the bits of max(S, 0) read as a float are exactly
//     x = S * 2^-149 (subnormal below 2^23, first binade up to 2^24).
//   * the chain fma(relu(s_h), w_h, acc) runs on x_h with pre-scaled weights w''_h =
//     w_h * 2^(149 + base_h - 256 - c): every intermediate is the reference's divided by
//     F_p = 2^(c + fmin_p), exactly, because in both domains every product and sum is a multiple
//     of 2^-149 (|w''| >= 2^23; the reference's product quantum checked per row against the
//     request's key exponents), nothing overflows (checked), and rounding is scale-invariant
//     above 2^-126. The final multiply by F_p is exact.
// Keys off the folded form (kscale 0, "wide" keys) are scored by the generic route in a pass after
// the main kernel (wide_keys.cuh).
#include <cstdint>

namespace dsa::gpu {

constexpr int kWgmmaTileRows = 4;  // query rows per block: N = 4 x 32 heads

// The k-step orders of the route: groups 0-2 in any of 6 orders, group 3 last (the group most
// often far below the others). A row takes the first order that every head's Horner plan fits
// (gpu/prep); a row tile shares one order.
constexpr int kWgmmaOrders = 6;
// Orders 0..5 put groups 012, 021, 102, 120, 201, 210 at positions 0-2: two bits a position,
// six an order.
constexpr uint64_t kWgmmaOrderCodes = 0x24ull | 0x18ull << 6 | 0x21ull << 12 | 0x09ull << 18 | 0x12ull << 24 | 0x06ull << 30;
constexpr int wgmma_order_group(int order, int pos) {
  return pos == 3 ? 3 : int(kWgmmaOrderCodes >> (6 * order + 2 * pos) & 3);
}
static_assert(wgmma_order_group(0, 1) == 1 && wgmma_order_group(4, 0) == 2 && wgmma_order_group(3, 2) == 0);

// Plan classes of the admitted rows (row_wgmma - 1, gpu/prep): early + 2 order for the Horner
// plans (early: some head multiplies before position 1 or 2), and kUniformClass for a row whose
// heads all multiply by one 2^K before group 3, in order 0 (one multiplier a row: the kernel
// holds it in one register). A row tile holds rows of one class (build_dense_tiles).
constexpr int kUniformClass = 2 * kWgmmaOrders;
constexpr int kWgmmaClasses = kUniformClass + 1;
constexpr int class_order(int cls) { return cls == kUniformClass ? 0 : cls / 2; }
constexpr bool class_early(int cls) { return cls != kUniformClass && (cls & 1) != 0; }

// qw_mul: a head's Horner plan (gpu/prep): the exponent m of the in-place multiply 2^m before the
// k-step at position point + 1 (point 0..2; 0: none) in bits 8 point .. 8 point + 7, the row's
// k-step order in bits 24-26.
constexpr int32_t pack_multipliers(int m1, int m2, int m3, int order) { return m1 | m2 << 8 | m3 << 16 | order << 24; }
constexpr int multiplier_exponent(int32_t packed, int point) { return (packed >> (8 * point)) & 31; }
constexpr int plan_order(int32_t packed) { return (packed >> 24) & 7; }
// Whether the plan multiplies before position 1 or 2 (the three-multiply step), not only before group 3.
constexpr bool multiplies_early(int32_t packed) { return (packed & 0xFFFF) != 0; }
constexpr bool multiplies(int32_t packed) { return (packed & 0xFFFFFF) != 0; }

struct DenseWgmmaArgs {
  const int8_t* qw;         // [nsel][32][128] the wgmma form of the queries (natural head order)
  const int32_t* qw_mul;    // [nsel][32] the heads' multiplier exponents (pack_multipliers; 0: none)
  const float* qw_weight;   // [nsel][32] pre-scaled weights w''
  const int32_t* qw_shift;  // [nsel] (c + 128) << 23, added to a key scale's bits gives F_p
  const int32_t* tile_rows; // [ntiles][4] selected rows of one request, -1 where none
  int ntiles;
  // The generic route for wide keys (dense_common.cuh, wide_keys.cuh).
  const int8_t* qr;
  const uint32_t* qexp;
  const float* qscale;
  const float* weights;
  const int8_t* kr;
  const uint32_t* kexp;
  const float* kscale;      // [ncols] 2^(fmin - 128), 0 = not folded
  const int32_t* sel_len;
  const int64_t* sel_kcol;
  const int32_t* sel_req;
  const int32_t* wide_count;  // [nreq] and the lists of groups holding a wide key (launch_request_keys)
  const int32_t* wide_list;
  // The main kernel's keys: ks and kscale as 1 KB records of 8 positions, the keys in pair order
  // (launch_key_blocks' kdfrag), request r's position 0 in record req_blk[r].
  const int8_t* kdfrag;
  const float* kbscale;
  const int64_t* req_blk;
  int max_len;
  float* out;               // selected row i at out row i - row0 (dense_logits.cuh)
  int64_t ld;
  int row0;
  // Level one's block keys (gpu/block_amax), fused: selected row i's at keys row i - row0; null:
  // scores only.
  float* keys = nullptr;
  int64_t ld_keys = 0;
  // Scores of blocks no own top-k will read left unstored (with keys; null: every score stored):
  // [rows][kSkipWords] at keys row i - row0, zeroed before the launch, see "Stores skipped" below.
  uint32_t* skip = nullptr;
  int skip_need = 0;  // k + 1: the blocks whose keys must reach the bound
};

// Stores skipped (the sparse path's source; launch_own_topk narrowed). The own top-k reads only
// blocks whose key reaches T, the (k+1)-th largest key of the row (docs/semantics.md), so a
// block whose key lies below any lower bound B <= T needs no scores. The blocks are walked
// chunk-major (every tile's first kChunk positions first), and each block, at its end, counts
// its rows' keys that reach the row's bound into kSkipBins bins of the key's order (top 12 bits of
// order_f32: 8 exponent bits, 4 of mantissa) and raises the bound to the highest bin edge with
// at least k + 1 counted keys at or above it: counted keys are real keys of distinct blocks, so
// then T is at least that edge. Later blocks store a block's scores only when its key reaches
// the bound they read at their start. Keys not counted: the newest block's (+inf) and, in a
// block holding a wide key, the wide positions (their main-kernel scores are meaningless; the
// wide pass writes all 8 scores of such a block). Rows of at most kTopkBlocks blocks never raise
// their bound (their own top-k reads every block). Word kSkipBins: the bound (an order_f32
// value); kSkipBins + 1: the largest key counted so far.
constexpr int kSkipBins = 4096;
constexpr int kSkipShift = 20;  // order_f32 >> kSkipShift: the bin
constexpr int kSkipWords = kSkipBins + 4;

// Whether the current device runs the wgmma kernel (sm_90); elsewhere every row takes the
// portable kernel.
bool dense_wgmma_supported();
// wide: the wide keys' pass too (launch_dense_wide); without it their scores and block keys are
// meaningless until a later pass (score_wide_row) writes them.
void launch_dense_wgmma(const DenseWgmmaArgs& a, bool wide = true);

}  // namespace dsa::gpu
