#pragma once
// Model constants fixed by batch format v1 (see docs/semantics.md).
#include <cstdint>

namespace dsa {

constexpr int kHeads = 32;          // index heads H
constexpr int kHeadDim = 128;       // index head dim D
constexpr int kPackedDim = kHeadDim / 2;   // bytes of one packed e2m1 vector
constexpr int kScaleGroups = kHeadDim / 32; // ue8m0 bytes per vector
constexpr int kBlockSize = 8;       // compressed positions per block
constexpr int kTopkBlocks = 2048;   // level-one candidate blocks
constexpr int kCandidateWidth = kTopkBlocks * kBlockSize;  // level-two row width (16384)
constexpr int kSlotBytes = kPackedDim + kScaleGroups;      // 68 bytes per pool slot
constexpr int32_t kBlockPad = INT32_MAX;  // padding of block tables
constexpr int32_t kPositionPad = -1;      // padding of position lists

}  // namespace dsa
