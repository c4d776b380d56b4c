#pragma once
// The source layer's selection in one launch, for batches of few rows (a decode step): per
// selected row, one thread block
//   1. scores the row's wide keys when the row is on the dense wgmma route (wide_row.cuh: the
//      dense kernel left them, and their blocks' keys, unscored),
//   2. selects level one's top-2048 block keys (ascending ids, the 2048-th key for the own check),
//   3. copies the published blocks to the row's tail-table row, if it has one,
//   4. selects the own top-k among the candidates of the published blocks.
// Same outputs as launch_dense_wide, launch_block_topk, the engine's tail gather and
// launch_own_topk one after another (four launches); a decode step's source layer is latency,
// and each launch a gap (issue 12: at most three launches a layer). Rows of up to 262144
// positions (level one's keys in registers); k = 2048 adds launch_own_topk's full-row pass.
#include <cstdint>

#include "gpu/dense_logits/dense_wgmma.cuh"

namespace dsa::gpu {

struct SourceSelectArgs {
  DenseWgmmaArgs wide;          // the dense wgmma launch's operands (row0 = 0: every selected row)
  const int32_t* wide_rows;     // [nrows] nonzero: the row is on the wgmma route; null: no row is
  const float* keys;            // [nrows][ld_keys] level one's block keys
  int64_t ld_keys;
  const int32_t* len;           // [nrows] L
  int nrows;
  int32_t* blocks;              // [nrows + tails][2048] the published blocks, tail rows after
  uint32_t* level_kth;          // [nrows] level one's 2048-th key (k = 2048 only; else null)
  const int32_t* tail_of;       // [nrows] the row's tail-table index, -1 for none; null: no tails
  const float* dense;           // [nrows][ld_dense]
  int64_t ld_dense;
  const int32_t* valid_len;     // [nrows] candidates of the published blocks
  int k;
  int32_t* picks;               // [nrows][k]
  int32_t* list;                // [nrows] launch_own_topk's list
};

// Longest row the one launch selects (level one's keys in registers).
constexpr int kSourceSelectMaxLen = 262144;

void launch_source_select(const SourceSelectArgs& a);

}  // namespace dsa::gpu
