#pragma once
// The keys as records of 8 positions (a "key block"), read by the sparse kernels (a row's
// candidate blocks, wherever they sit), and, as a copy in pair order, by both wgmma kernels (a
// step's keys, as wgmma's A from registers).
#include <cstdint>
#include <vector>

namespace dsa::gpu {

// A key block in the kernels' layout: [half h][lane][16 bytes], lane = 4g + t holding key g's
// words (k-step 2h: dims 4t.., 16+4t..; k-step 2h+1: the same). One 16-byte load per lane and
// half, without bank conflicts, gives a warp the mma fragments of the block's 8 keys (mma.sync B,
// or wgmma's A rows).
constexpr int kKeyBlockBytes = 1024;
// The dense wgmma kernel's copy of the records, in pair order: 16-byte slot 16 k + pair_slot(p, t)
// holds what lane t of key pair p (keys 2p, 2p + 1) gives wgmma as A for k-step group k: words
// {dims 32k + 4t.. of key 2p, of key 2p + 1, dims 32k + 16 + 4t.. of key 2p, of key 2p + 1}.
// A warp whose lanes (g, t) take pair g % 4 of record 2 warp + g / 4 reads 256 contiguous bytes of
// each of its two records per load, and adjacent keys sit in one lane.
constexpr int pair_slot(int pair, int t) { return 4 * pair + t; }
// Zero records after the last request's: the dense wgmma kernel reads up to 15 records past a
// row block's last (the rest of its last step, and the step after it, loaded ahead) rather than
// clamp each load; their scores are never stored.
constexpr int kKeyBlockPad = 16;

// Block index of each request's position 0: requests in order, ceil(len / 8) blocks each.
// Returns the total block count.
int64_t key_block_starts(const std::vector<int32_t>& req_len, std::vector<int64_t>& req_blk);

// The layouts a launch writes; a null one is not written.
struct KeyRecordOut {
  int8_t* kbfrag;  // the layout above
  int8_t* kdfrag;  // pair order
  float* kbscale;
};
// The records and kbscale of every request's blocks from the key prep's shifted keys ks
// [cols][128] and scales kscale [cols]; positions past a request's end get zero keys and scale 1
// (fast, never stored).
void launch_key_blocks(const int8_t* ks, const float* kscale, const int64_t* req_start, const int32_t* req_len,
                       const int64_t* req_blk, int nreq, int max_len, const KeyRecordOut& out);

}  // namespace dsa::gpu
