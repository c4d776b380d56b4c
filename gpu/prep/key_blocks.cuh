#pragma once
// The keys as records of 8 positions (a "key block"), read by the sparse kernels (a row's
// candidate blocks, wherever they sit) and by the dense wgmma kernel (a step's 16 keys, as
// wgmma's A from registers).
#include <cstdint>
#include <vector>

namespace dsa::gpu {

// A key block in the kernels' layout: [half h][lane][16 bytes], lane = 4g + t holding key g's
// words (k-step 2h: dims 4t.., 16+4t..; k-step 2h+1: the same). One 16-byte load per lane and
// half, without bank conflicts, gives a warp the mma fragments of the block's 8 keys (mma.sync B,
// or wgmma's A rows).
constexpr int kKeyBlockBytes = 1024;
// The dense wgmma kernel's copy of the records, in pair order: key k's 16 bytes of lane t at slot
// 16 (k % 2) + 4 (k / 2) + t of each half, so that lanes (g, t) taking keys 2 (g % 4) + h of a
// record read 256 contiguous bytes for each h (and adjacent keys sit in one lane).
constexpr int pair_slot(int key, int t) { return 16 * (key & 1) + 4 * (key >> 1) + t; }
// Zero records after the last request's: the dense wgmma kernel reads up to 7 records past a
// row block's end (its scores are never stored) rather than clamp each load.
constexpr int kKeyBlockPad = 8;

// Block index of each request's position 0: requests in order, ceil(len / 8) blocks each.
// Returns the total block count.
int64_t key_block_starts(const std::vector<int32_t>& req_len, std::vector<int64_t>& req_blk);

// kbfrag (the layout above), kdfrag (pair order) and kbscale of every request's blocks from the
// key prep's shifted keys ks [cols][128] and scales kscale [cols]; positions past a request's end
// get zero keys and scale 1 (fast, never stored). kbfrag or kdfrag may be null (not written).
void launch_key_blocks(const int8_t* ks, const float* kscale, const int64_t* req_start, const int32_t* req_len,
                       const int64_t* req_blk, int nreq, int max_len, int8_t* kbfrag, int8_t* kdfrag,
                       float* kbscale);

}  // namespace dsa::gpu
