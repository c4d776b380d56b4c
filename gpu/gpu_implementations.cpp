// Without CUDA in the build, both GPU implementations exist but say "not supported".
#include "gpu/gpu_implementations.hpp"

#if !DSA_HAVE_CUDA
#include <stdexcept>

#include "gpu/ceilings/ceilings.hpp"

namespace dsa::gpu {
namespace {
class Unsupported : public Implementation {
 public:
  explicit Unsupported(std::string name) : name_(std::move(name)) {}
  std::string name() const override { return name_; }
  std::string device() const override { return "none"; }
  Support supported() const override { return {false, "this build has no CUDA (configured without nvcc)"}; }

 protected:
  void publish(const Batch&, const Layer&, const RunOptions&, Results&) override { fail(); }
  void select(const Batch&, const Layer&, const RunOptions&, Results&) override { fail(); }
  void plain(const Batch&, const Layer&, const RunOptions&, Results&) override { fail(); }

 private:
  [[noreturn]] void fail() const { throw std::logic_error(name_ + " is not supported: no CUDA in this build"); }
  std::string name_;
};
}  // namespace

ImplementationPtr make_gpu_sparse() { return std::make_unique<Unsupported>("gpu-sparse"); }
ImplementationPtr make_gpu_mask() { return std::make_unique<Unsupported>("gpu-mask"); }
std::string describe_device() { return "none (this build has no CUDA)"; }
std::string unavailable_reason() { return "this build has no CUDA (configured without nvcc)"; }
int device_count() { return 0; }
CeilingRun measure_ceilings(int) {
  CeilingRun out;
  for (const char* name :
       {kCeilingHbmCopy, kCeilingL2Read, kCeilingInt8Wgmma, kCeilingFp8Wgmma, kCeilingInt8WgmmaSustained})
    out.not_supported.push_back(std::string(name) + ": this build has no CUDA (configured without nvcc)");
  return out;
}
}  // namespace dsa::gpu
#endif
