#include "gpu/common/check.cuh"
#include "gpu/prep/key_blocks.cuh"

// The key block records (key_blocks.cuh): one 1 KB record per 8 positions of a request, so a
// kernel fetches a block with two 16-byte loads per lane wherever it sits in a row's list, and
// reads it back without bank conflicts.
namespace dsa::gpu {
namespace {

// One thread per (block, lane) of request blockIdx.y.
__global__ void key_blocks_kernel(const int8_t* ks, const float* kscale, const int64_t* req_start,
                                  const int32_t* req_len, const int64_t* req_blk, KeyRecordOut out) {
  const int req = blockIdx.y;
  const int len = req_len[req];
  const int64_t id = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (id >= int64_t((len + 7) / 8) * 32) return;
  const int blk = int(id >> 5), lane = int(id & 31), g = lane >> 2, t = lane & 3;
  const int pos = blk * 8 + g;
  uint32_t w[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  float scale = 1.0f;
  if (pos < len) {
    const int8_t* key = ks + (req_start[req] + pos) * 128;
#pragma unroll
    for (int k = 0; k < 4; ++k)
#pragma unroll
      for (int h = 0; h < 2; ++h) w[2 * k + h] = *reinterpret_cast<const uint32_t*>(key + k * 32 + 16 * h + 4 * t);
    scale = kscale[req_start[req] + pos];
  }
  const int64_t b = req_blk[req] + blk;
  const uint4 lo = make_uint4(w[0], w[1], w[2], w[3]), hi = make_uint4(w[4], w[5], w[6], w[7]);
  if (out.kbfrag != nullptr) {
    uint4* d = reinterpret_cast<uint4*>(out.kbfrag + b * kKeyBlockBytes);
    d[lane] = lo;
    d[32 + lane] = hi;
  }
  if (out.kdfrag != nullptr) {  // word i of group k of key g: word 2 i + g % 2 of slot 16 k + pair_slot(g / 2, t)
    uint32_t* d = reinterpret_cast<uint32_t*>(out.kdfrag + b * kKeyBlockBytes);
#pragma unroll
    for (int k = 0; k < 4; ++k)
#pragma unroll
      for (int i = 0; i < 2; ++i) d[(16 * k + pair_slot(g >> 1, t)) * 4 + 2 * i + (g & 1)] = w[2 * k + i];
  }
  if (t == 0) out.kbscale[b * 8 + g] = scale;
}

}  // namespace

int64_t key_block_starts(const std::vector<int32_t>& req_len, std::vector<int64_t>& req_blk) {
  req_blk.assign(req_len.size(), 0);
  int64_t next = 0;
  for (size_t r = 0; r < req_len.size(); ++r) {
    req_blk[r] = next;
    next += (int64_t(req_len[r]) + 7) / 8;
  }
  return next;
}

void launch_key_blocks(const int8_t* ks, const float* kscale, const int64_t* req_start, const int32_t* req_len,
                       const int64_t* req_blk, int nreq, int max_len, const KeyRecordOut& out) {
  if (nreq == 0 || max_len == 0) return;
  const int64_t threads = int64_t((max_len + 7) / 8) * 32;
  key_blocks_kernel<<<dim3(unsigned((threads + 255) / 256), unsigned(nreq)), 256>>>(ks, kscale, req_start, req_len,
                                                                                  req_blk, out);
  DSA_LAUNCH_CHECK("key_blocks_kernel");
}

}  // namespace dsa::gpu
