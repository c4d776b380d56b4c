#include "harness/impls/recorded.hpp"

#include "core/errors.hpp"

namespace dsa {
namespace {

class RecordedImplementation : public Implementation {
 public:
  explicit RecordedImplementation(std::string group) : group_(std::move(group)) {}
  std::string name() const override { return "recorded:" + group_; }

 protected:
  // The recorded group replaces everything but the run's identity; a row counts as done only
  // where it was both requested and recorded.
  void begin(const Batch& batch, const RunOptions&, Results& out) override {
    const Results& recorded = batch.outputs.at(group_);
    std::vector<uint8_t> requested = out.rows_done;
    out.rows_done = recorded.rows_done;
    out.rows_done.resize(requested.size(), 0);
    for (size_t r = 0; r < requested.size(); ++r) out.rows_done[r] = out.rows_done[r] == 1 && requested[r] == 1;
    out.blocks = recorded.blocks;
    out.layers = recorded.layers;
    out.device = recorded.device.empty() ? "recorded" : recorded.device;
    out.notes = "recorded outputs /outputs/" + group_ + (recorded.implementation.empty() ? "" : " of " + recorded.implementation);
  }
  void publish(const Batch&, const Layer&, const RunOptions&, Results&) override {}
  void select(const Batch&, const Layer&, const RunOptions&, Results&) override {}
  void plain(const Batch&, const Layer&, const RunOptions&, Results&) override {}

 private:
  std::string group_;
};

}  // namespace

ImplementationPtr make_recorded(const std::string& group, const Batch& batch) {
  if (batch.outputs.count(group) == 0) {
    std::string known;
    for (const auto& [name, results] : batch.outputs) known += (known.empty() ? "" : ", ") + name;
    throw InputError(batch.path.empty() ? "batch" : batch.path, "/outputs/" + group,
                     "no recorded outputs of that name (recorded: " + (known.empty() ? "none" : known) + ")");
  }
  return std::make_unique<RecordedImplementation>(group);
}

}  // namespace dsa
