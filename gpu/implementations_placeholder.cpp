// Placeholder until the CUDA implementations land: both say "not supported".
#include <stdexcept>

#include "gpu/gpu_implementations.hpp"

namespace dsa::gpu {
namespace {
class Unsupported : public Implementation {
 public:
  explicit Unsupported(std::string name) : name_(std::move(name)) {}
  std::string name() const override { return name_; }
  Support supported() const override { return {false, "GPU implementations not built yet"}; }

 protected:
  void publish(const Batch&, const Layer&, const RunOptions&, Results&) override { fail(); }
  void select(const Batch&, const Layer&, const RunOptions&, Results&) override { fail(); }
  void plain(const Batch&, const Layer&, const RunOptions&, Results&) override { fail(); }

 private:
  [[noreturn]] void fail() const { throw std::logic_error(name_ + " is not supported"); }
  std::string name_;
};
}  // namespace

ImplementationPtr make_gpu_sparse() { return std::make_unique<Unsupported>("gpu-sparse"); }
ImplementationPtr make_gpu_mask() { return std::make_unique<Unsupported>("gpu-mask"); }
std::string describe_device() { return "none (GPU implementations not built yet)"; }
}  // namespace dsa::gpu
