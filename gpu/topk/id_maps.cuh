#pragma once
// What a top-k kernel writes for the column it picks (device code): the column itself, or the
// sparse path's page transform (candidate column c -> position blocks[c/8]*8 + c%8). A map that
// reads a table can stage the row's table in shared memory first (kStaged), so a pick costs a
// shared load instead of a dependent global one.
#include <cstdint>

#include "core/constants.hpp"
#include "gpu/common/cp_async.cuh"

namespace dsa::gpu {

struct Identity {
  static constexpr bool kStaged = false;
  __device__ int32_t id(int, int i) const { return i; }
  __device__ void stage(int, int32_t*) const {}
  __device__ int32_t id(int, int i, const int32_t*) const { return i; }
};

struct PageTransform {
  static constexpr bool kStaged = true;
  static constexpr int kStageThreads = kTopkBlocks / 4;  // 16 bytes a thread
  const int32_t* blocks;  // [rows][2048]
  __device__ int32_t id(int row, int c) const {
    return blocks[int64_t(row) * kTopkBlocks + c / kBlockSize] * kBlockSize + c % kBlockSize;
  }
  // Starts copying the row's table into `table` (2048 ints, 16-byte aligned); the caller waits
  // (cp_async_wait<0>, then a block barrier) before the first id().
  __device__ void stage(int row, int32_t* table) const {
    if (threadIdx.x < kStageThreads)
      cp_async16(table + 4 * threadIdx.x, blocks + int64_t(row) * kTopkBlocks + 4 * threadIdx.x);
    cp_async_commit();
  }
  __device__ int32_t id(int, int c, const int32_t* table) const {
    return table[c / kBlockSize] * kBlockSize + c % kBlockSize;
  }
};

}  // namespace dsa::gpu
