#pragma once
// wgmma's 128-byte swizzle for K-major operand tiles in shared memory: rows of 128 bytes, the
// 16-byte chunk c of row r stored at chunk c ^ (r % 8), in 8-row groups of 1024 bytes (1024-byte
// aligned). Used by every tile the kernels stage (queries as B, the sparse kernel's key records
// as A) and by the query prep's staging tiles, which borrow it to spread a warp's stores over the
// banks.
namespace dsa::gpu {

constexpr int swizzled_chunk(int chunk, int row) { return chunk ^ (row & 7); }
// The byte offset of chunk `chunk` of row `row` in such a tile.
constexpr int swizzled_offset(int row, int chunk) { return row * 128 + (swizzled_chunk(chunk, row) << 4); }

}  // namespace dsa::gpu
