#pragma once
// Level one's selection kernel: rows of block keys streamed through shared memory, one
// persistent block per SM (select_topk.cuh holds the selection it runs on each row, sampled_cut.cuh
// the cut that narrows a row first).
#include <type_traits>
#include <utility>

#include "gpu/common/check.cuh"
#include "gpu/common/mbarrier.cuh"
#include "gpu/topk/sampled_cut.cuh"
#include "gpu/topk/select_topk.cuh"

namespace dsa::gpu {

// Rows stored contiguously, one persistent block per SM slot: while the block selects one row
// from its registers, a bulk copy (cp.async.bulk + mbarrier) brings its next row into shared
// memory, so a row's HBM read overlaps the passes over the previous one (the loads of a plain
// launch stall every warp of a block at once, and one or two blocks an SM do not hide that).
// Src, besides len(): const void* row_data(int row); unsigned row_bytes(int n) (a multiple of 16,
// at most kBufferBytes); int keys_from(const void* buf, int first, int n, uint32_t (&key)[kPer])
// (keys of columns first.. from the copied row, 0 from n on; returns rot: key[j] holds column
// first + (j + rot) % kPer, select_row's rotation); static kBufferBytes; static kSampled: the
// buffer holds the row's fp32 keys in column order, so `sampled` may take the sampled cut first
// (sampled_cut.cuh).

// A report that also wants the keys of the picks (level one's, for the own top-k's narrowing):
// bool wants_pick_keys() const; void store_pick_keys(const Src&, int row, const int32_t* picks)
// const, called by every thread of the block once the row's picks are written.
template <class K, class = void>
struct HasPickKeys : std::false_type {};
template <class K>
struct HasPickKeys<K, std::void_t<decltype(std::declval<const K&>().wants_pick_keys())>> : std::true_type {};

template <int kBits, int kPer, int kMinBlocks, class Src, class Map, class Kth>
__global__ void __launch_bounds__(kSelectThreads, kMinBlocks)
    select_topk_stream_kernel(Src src, Map map, Kth kth, int nrows, int k, int32_t pad, int32_t* out, bool sampled) {
  extern __shared__ __align__(128) unsigned char stream_buffer[];
  __shared__ SelectSmem sm;
  __shared__ SampledSmem cs;
  __shared__ uint64_t bar;
  // Thread 0 starts the copy of row r when r will be selected from keys (more than k of them).
  auto fetch = [&](int r) {
    if (r >= nrows) return;
    const int n = src.len(r);
    if (n <= k) return;
    const unsigned bytes = src.row_bytes(n);
    const char* from = static_cast<const char*>(src.row_data(r));
    mbar_expect(&bar, bytes);
    for (unsigned off = 0; off < bytes; off += kBulkChunk)
      bulk_copy(stream_buffer + off, from + off, min(kBulkChunk, bytes - off), &bar);
  };
  if (threadIdx.x == 0) {
    mbar_init(&bar, 1);
    fetch(blockIdx.x);
  }
  __syncthreads();
  unsigned parity = 0;
  const int first = threadIdx.x * kPer;
  for (int row = blockIdx.x; row < nrows; row += gridDim.x) {
    const int n = src.len(row);
    int32_t* dst = out + int64_t(row) * k;
    if (n <= k) {  // no copy was started for this row: the buffer is free
      if (threadIdx.x == 0) {
        fetch(row + gridDim.x);
        kth.took_all(row);
      }
      take_all<kSelectThreads>(map, row, n, k, pad, dst);
      continue;
    }
    mbar_wait(&bar, parity);
    parity ^= 1;
    int count = 0;
    if constexpr (Src::kSampled) {
      if (sampled && sampled_candidates(reinterpret_cast<const float*>(stream_buffer), n, k, sm, cs, &count)) {
        if (threadIdx.x == 0) fetch(row + gridDim.x);  // the candidates are in cs, the buffer is free
        uint32_t key[kSampledPer];
        candidate_keys(cs, count, key);
        select_row<kBits, kSampledPer>(key, row, count, k, threadIdx.x * kSampledPer, CandidateColumns{cs.col}, kth,
                                       dst, sm);
      }
    }
    if (count == 0) {  // the full selection
      uint32_t key[kPer];
      const int rot = src.keys_from(stream_buffer, first, n, key);
      __syncthreads();  // every thread holds its keys and is done with the last row's table
      if (threadIdx.x == 0) fetch(row + gridDim.x);
      map.stage(row, sm.table);
      select_row<kBits, kPer>(key, row, n, k, first, map, kth, dst, sm, rot);
    }
    if constexpr (HasPickKeys<Kth>::value) {
      if (kth.wants_pick_keys()) {
        __syncthreads();  // every pick of the row is in dst
        kth.store_pick_keys(src, row, dst);
      }
    }
  }
}

// kMinBlocks blocks an SM, each with Src::kBufferBytes of dynamic shared memory for the row copy.
// name: the launch check's name for this use.
template <int kBits, int kPer, int kMinBlocks, class Src, class Map, class Kth = NoKth>
void launch_select_stream(const char* name, const Src& src, const Map& map, int nrows, int k, int32_t pad,
                          int32_t* out, const Kth& kth = Kth{}, bool sampled = false) {
  auto kernel = select_topk_stream_kernel<kBits, kPer, kMinBlocks, Src, Map, Kth>;
  const int sms = current_device_sms();
  DSA_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, Src::kBufferBytes));
  kernel<<<std::min(nrows, kMinBlocks * sms), kSelectThreads, Src::kBufferBytes>>>(src, map, kth, nrows, k, pad, out, sampled);
  DSA_LAUNCH_CHECK(name);
}

}  // namespace dsa::gpu
