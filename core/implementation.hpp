#pragma once
// One interface for every implementation (reference, GPU paths, recorded outputs, later
// plugins): it mirrors the serving engine's protocol. run() drives publish on the source layer,
// select on each consumer (full table and tail table) and plain layers, in layer order.
#include <memory>
#include <string>
#include <vector>

#include "core/batch.hpp"
#include "core/results.hpp"

namespace dsa {

struct RunOptions {
  std::vector<int> rows;     // global rows to compute, ascending; empty = all rows
  bool scores = false;       // record dense/sparse scores
  bool timing = false;       // measure kernel timings (GPU implementations)
  int timing_samples = 20;
};

// Whether this machine can run an implementation on a batch.
struct Support {
  bool ok = true;
  std::string reason;  // why not, when !ok ("no CUDA device", "kernels not built for sm_80"...)
};

class Implementation {
 public:
  virtual ~Implementation() = default;
  virtual std::string name() const = 0;
  virtual std::string device() const { return "cpu"; }
  virtual Support supported() const { return {}; }

  // Template method: prepares `Results`, then calls the protocol steps below.
  Results run(const Batch& batch, const RunOptions& options);
  // The protocol steps (begin, each layer, end) of one step captured as a CUDA graph, each with
  // the kernels it launched: what a serving engine replays per decode step. Empty where the
  // implementation captures no graphs (the CPU ones).
  virtual std::vector<StepRecord> captured_steps(const Batch&, const RunOptions&) { return {}; }

 protected:
  virtual void begin(const Batch&, const RunOptions&, Results&) {}
  // Source layer: dense scores, its own top-k, level one (blocks).
  virtual void publish(const Batch& batch, const Layer& source, const RunOptions& options, Results& out) = 0;
  // Consumer: level two on the published table, plus the tail table's picks.
  virtual void select(const Batch& batch, const Layer& consumer, const RunOptions& options, Results& out) = 0;
  // Plain layer: top-k over dense scores.
  virtual void plain(const Batch& batch, const Layer& layer, const RunOptions& options, Results& out) = 0;
  virtual void end(const Batch&, const RunOptions&, Results&) {}
};

using ImplementationPtr = std::unique_ptr<Implementation>;

}  // namespace dsa
