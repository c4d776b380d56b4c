#pragma once
// The replay's plan: which implementations run, in which order, and what each is compared with.
#include <string>
#include <vector>

#include "core/batch.hpp"
#include "core/records.hpp"

namespace dsa {

// The names replay runs: `impls` as given (--impl; unknown names throw InputError before any
// work), or the references and every GPU implementation; the references first.
std::vector<std::string> target_names(const std::vector<std::string>& impls);

// The names replay runs on one batch: `targets`, plus recorded:NAME for every output group the
// batch holds when --impl named nothing (`impls` empty), so a batch that carries recorded outputs
// (a capture, fixtures/recorded/) is checked without naming them.
std::vector<std::string> batch_targets(const std::vector<std::string>& targets, const std::vector<std::string>& impls,
                                       const Batch& batch);

struct Against {
  std::string name;
  Rule rule;
};

// What an implementation is compared with: the reference of its own path, the mask path when it
// is a sparse path (gpu-sparse with gpu-mask when that runs here, as the public test does), and
// reference-exact for the quality figures. `runnable`: the names that run on this machine.
std::vector<Against> comparisons_for(const std::string& impl, const std::vector<std::string>& runnable);

// The implementations replay runs by default and those it can name, with why one cannot run.
struct ImplAvailability {
  std::string name, description, reason;  // reason empty when it runs here
};
std::vector<ImplAvailability> list_implementations();

}  // namespace dsa
