#pragma once
// RAII device memory. Every allocation goes through here so the implementation can report its
// peak device memory (Results::peak_device_bytes).
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "gpu/common/check.cuh"

namespace dsa::gpu {

// Bytes currently held by DeviceBuffers of this process, and the peak since the last reset; and
// running totals (never reset) of what they did: bytes allocated, host<->device copies, memsets.
// A test takes the difference over a step: a step of the same shape allocates nothing.
struct DeviceMemoryMeter {
  static int64_t& current() { static int64_t v = 0; return v; }
  static int64_t& peak() { static int64_t v = 0; return v; }
  static void reset_peak() { peak() = current(); }
  static int64_t& allocated_bytes() { static int64_t v = 0; return v; }
  static int64_t& allocations() { static int64_t v = 0; return v; }
  static int64_t& copies() { static int64_t v = 0; return v; }
  static int64_t& memsets() { static int64_t v = 0; return v; }
};

template <class T>
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(size_t count) { resize(count); }
  ~DeviceBuffer() { release(); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  DeviceBuffer(DeviceBuffer&& o) noexcept : ptr_(o.ptr_), count_(o.count_) { o.ptr_ = nullptr; o.count_ = 0; }
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    if (this != &o) { release(); std::swap(ptr_, o.ptr_); std::swap(count_, o.count_); }
    return *this;
  }

  // Reallocates only when growing; contents are not preserved.
  void resize(size_t count) {
    if (count <= count_ && ptr_) return;
    release();
    if (count == 0) return;
    DSA_CUDA_CHECK(cudaMalloc(&ptr_, count * sizeof(T)));
    count_ = count;
    DeviceMemoryMeter::allocated_bytes() += int64_t(bytes());
    ++DeviceMemoryMeter::allocations();
    DeviceMemoryMeter::current() += int64_t(bytes());
    if (DeviceMemoryMeter::current() > DeviceMemoryMeter::peak())
      DeviceMemoryMeter::peak() = DeviceMemoryMeter::current();
  }
  void upload(const T* host, size_t count) {
    resize(count);
    if (!count) return;
    ++DeviceMemoryMeter::copies();
    DSA_CUDA_CHECK(cudaMemcpy(ptr_, host, count * sizeof(T), cudaMemcpyHostToDevice));
  }
  void upload(const std::vector<T>& host) { upload(host.data(), host.size()); }
  void download(T* host, size_t count, size_t offset = 0) const {
    if (!count) return;
    ++DeviceMemoryMeter::copies();
    DSA_CUDA_CHECK(cudaMemcpy(host, ptr_ + offset, count * sizeof(T), cudaMemcpyDeviceToHost));
  }
  std::vector<T> to_host(size_t count) const { std::vector<T> h(count); download(h.data(), count); return h; }
  // Fills the first `count` elements' bytes with `byte` (poisoning outputs before a launch), in
  // order on the default stream (per-thread in dsa_gpu), so a stream capture records it too.
  // Elements [first, first + count) set to bytes `byte`.
  void fill_bytes(int byte, size_t count, size_t first = 0) {
    if (!count) return;
    ++DeviceMemoryMeter::memsets();
    DSA_CUDA_CHECK(cudaMemsetAsync(ptr_ + first, byte, count * sizeof(T), 0));
  }

  T* get() const { return ptr_; }
  size_t size() const { return count_; }
  size_t bytes() const { return count_ * sizeof(T); }

 private:
  void release() {
    if (!ptr_) return;
    cudaFree(ptr_);  // no throw from a destructor path; errors surface at the next checked call
    DeviceMemoryMeter::current() -= int64_t(bytes());
    ptr_ = nullptr;
    count_ = 0;
  }
  T* ptr_ = nullptr;
  size_t count_ = 0;
};

}  // namespace dsa::gpu
