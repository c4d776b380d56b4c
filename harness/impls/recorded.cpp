#include "harness/impls/recorded.hpp"

#include "core/errors.hpp"

namespace dsa {
namespace {

class RecordedImplementation : public Implementation {
 public:
  RecordedImplementation(std::string group, std::string device) : group_(std::move(group)), device_(std::move(device)) {}
  std::string name() const override { return "recorded:" + group_; }
  // The device the outputs were recorded on, so reports name it rather than this machine.
  std::string device() const override { return device_; }

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
    out.device = device_;
    out.notes = recorded_provenance(group_, recorded);
  }
  void publish(const Batch&, const Layer&, const RunOptions&, Results&) override {}
  void select(const Batch&, const Layer&, const RunOptions&, Results&) override {}
  void plain(const Batch&, const Layer&, const RunOptions&, Results&) override {}

 private:
  std::string group_, device_;
};

}  // namespace

std::string recorded_provenance(const std::string& group, const Results& recorded) {
  std::string text = "recorded outputs /outputs/" + group;
  if (!recorded.implementation.empty()) text += " of " + recorded.implementation;
  if (!recorded.device.empty()) text += " on " + recorded.device;
  if (!recorded.harness.empty()) text += " by " + recorded.harness;
  if (!recorded.recorded_at.empty()) text += " at " + recorded.recorded_at;
  return text;
}

ImplementationPtr make_recorded(const std::string& group, const Batch& batch) {
  const auto it = batch.outputs.find(group);
  if (it == batch.outputs.end()) {
    std::string known;
    for (const auto& [name, results] : batch.outputs) known += (known.empty() ? "" : ", ") + name;
    throw InputError(batch.path.empty() ? "batch" : batch.path, "/outputs/" + group,
                     "no recorded outputs of that name (recorded: " + (known.empty() ? "none" : known) + ")");
  }
  return std::make_unique<RecordedImplementation>(group, it->second.device.empty() ? "recorded" : it->second.device);
}

}  // namespace dsa
