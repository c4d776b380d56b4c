#pragma once
// Asynchronous global -> shared copies (cp.async, sm_80+), cached in L1 (.ca): a copy in flight
// holds no register, so loads run ahead of the math without raising register pressure.
namespace dsa::gpu {

__device__ __forceinline__ void cp_async16(void* dst, const void* src) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 16;" ::"r"(unsigned(__cvta_generic_to_shared(dst))), "l"(src));
}
__device__ __forceinline__ void cp_async4(void* dst, const void* src) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4;" ::"r"(unsigned(__cvta_generic_to_shared(dst))), "l"(src));
}
// Closes the copies issued so far by this thread into one group.
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;"); }
// Waits until at most kPending of this thread's groups are still in flight (groups complete in order).
template <int kPending>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;" ::"n"(kPending));
}

}  // namespace dsa::gpu
