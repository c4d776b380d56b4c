#include <stdexcept>

#include "gpu/common/check.cuh"
#include "gpu/common/device_buffer.cuh"
#include "gpu/common/poison.cuh"

namespace dsa::gpu {
namespace {

template <class T>
__global__ void count_poison_kernel(const T* data, int64_t ld, const int32_t* lens, int len_div, int width,
                                    T poison, unsigned long long* count) {
  const int row = blockIdx.y;
  const int n = lens ? (lens[row] + len_div - 1) / len_div : width;
  unsigned long long local = 0;
  for (int64_t c = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; c < n; c += int64_t(gridDim.x) * blockDim.x)
    local += data[int64_t(row) * ld + c] == poison;
  if (local) atomicAdd(count, local);
}

template <class T>
int64_t count_poison(const T* data, int64_t ld, int nrows, const int32_t* lens, int len_div, int width, T poison) {
  if (nrows == 0) return 0;
  DeviceBuffer<unsigned long long> count(1);
  count.fill_bytes(0, 1);
  for_row_pieces(nrows, [&](int first, int n) {
    count_poison_kernel<T><<<dim3(16, n), 256>>>(data + int64_t(first) * ld, ld, lens ? lens + first : nullptr,
                                                 len_div, width, poison, count.get());
    DSA_LAUNCH_CHECK("count_poison_kernel");
  });
  return int64_t(count.to_host(1)[0]);
}

}  // namespace

int64_t count_poison_u32(const uint32_t* data, int64_t ld, int nrows, const int32_t* lens, int len_div,
                         int width, uint32_t poison) {
  return count_poison<uint32_t>(data, ld, nrows, lens, len_div, width, poison);
}
int64_t count_poison_u16(const uint16_t* data, int64_t ld, int nrows, const int32_t* lens, int len_div,
                         int width, uint16_t poison) {
  return count_poison<uint16_t>(data, ld, nrows, lens, len_div, width, poison);
}

void require_written(int64_t count, const std::string& what) {
  if (count != 0) throw std::runtime_error(what + ": " + std::to_string(count) + " output slots not written");
}

}  // namespace dsa::gpu
