#pragma once
// Top-k launchers over fp32 rows (gpu/topk/radix_topk.cuh): the source's own / plain top-k,
// the level-one block top-2048 with its ascending write, and the mask path's
// level two (dense scores of the candidate columns, page transform to positions).
#include <cstdint>
#include <vector>

namespace dsa::gpu {

// out [nrows][k]: positions ascending, -1 padding (all positions when L <= k).
void launch_topk_dense(const float* dense, int64_t ld, const int32_t* len, int nrows, int k, int32_t* out);

// keys [nrows][ld] (ceil(L/8) per row) -> blocks [nrows][2048] ascending, INT32_MAX padding.
// max_len: the longest row (rows of up to 262144 positions take the register-resident kernel).
// valid_len follows from L alone (docs/semantics.md, level one): the engine computes it on the host.
// kth (optional, [nrows]): each row's 2048-th largest block key as an ordered integer (order_f32),
// for launch_own_topk; 0xFFFFFFFF (unknown) for rows longer than 262144 positions.
// pick_keys (optional, [nrows][2048]): the published blocks' keys as ordered integers, in the
// order of `blocks`, for launch_own_topk's narrowing; written only where
// block_topk_in_registers(max_len), and only for rows of more than 2048 blocks.
void launch_block_topk(const float* keys, int64_t ld, const int32_t* len, int nrows, int max_len,
                       int32_t* blocks, uint32_t* kth = nullptr, uint32_t* pick_keys = nullptr);
// Whether level one selects rows up to max_len positions in registers (its stream kernel).
bool block_topk_in_registers(int max_len);

// Mask path, level two: candidate column c < valid_len[i] of table row i has position
// blocks[i][c/8]*8 + c%8, ranked by dense[dense_row[i]][position]; out [nrows][k] positions
// ascending, -1 padding. dense_row == nullptr means dense row i.
void launch_topk_mask(const float* dense, int64_t ld, const int32_t* dense_row, const int32_t* blocks,
                      const int32_t* valid_len, int nrows, int k, int32_t* out);

// The source's own top-k through level one (needs the published table and level one's kth): for
// k <= 2047 the top-k over the published candidate columns is always the row's top-k
// (docs/semantics.md proves it for the tie rule); for k = 2048 it is whenever its k-th score beats
// the smallest published block key (every unpublished position scores at most that key) or every
// block is published: the selection checks that itself, and the other rows take the full-row
// pass. Same output as launch_topk_dense. `list` holds nrows ints: afterwards list[i] = i for the
// rows that took the full pass, nrows for the others. One launch (k <= 2047) or two, no host
// synchronisation.
// pick_keys (level one's, optional): for k <= 2047 the selection then narrows a row of more than
// 2048 blocks to the published blocks whose key reaches the (k+1)-th largest published key
// (docs/semantics.md proves that they hold the row's top-k), at most 1024 of them; a row with more
// such blocks takes all its candidates.
void launch_own_topk(const float* dense, int64_t ld, const int32_t* len, int nrows, int k,
                     const uint32_t* level_kth, const int32_t* blocks, const int32_t* valid_len, int32_t* out,
                     int32_t* list, const uint32_t* pick_keys = nullptr);
// The full-row pass of the rows launch_own_topk's check listed (k = 2048; the selection wrote
// the list), over their dense rows.
void launch_own_full_pass(const float* dense, int64_t ld, const int32_t* len, int nrows, int k, int32_t* out,
                          const int32_t* list);
// How many rows took the full pass, from launch_own_topk's list (copied to the host).
int own_topk_full_rows(const std::vector<int32_t>& list);

}  // namespace dsa::gpu
