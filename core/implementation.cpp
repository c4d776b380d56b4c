#include "core/implementation.hpp"

#include <chrono>
#include <string>

#include "core/launch_count.hpp"

namespace dsa {

namespace {

// Times one protocol step and counts the kernels it launched (Results::steps).
template <class F>
void step(Results& out, const std::string& name, F&& body) {
  const int64_t launches = kernel_launches().load();
  const auto start = std::chrono::steady_clock::now();
  body();
  const std::chrono::duration<double, std::milli> wall = std::chrono::steady_clock::now() - start;
  out.steps.push_back({name, wall.count(), kernel_launches().load() - launches});
}

}  // namespace

Results Implementation::run(const Batch& batch, const RunOptions& options) {
  Results out;
  out.name = name();
  out.implementation = name();
  out.device = device();
  const size_t rows = size_t(batch.rows());
  out.rows_done.assign(rows, options.rows.empty() ? 1 : 0);
  for (int r : options.rows) out.rows_done[size_t(r)] = 1;
  step(out, "begin", [&] { begin(batch, options, out); });
  // Layer order is the engine's: the source publishes before any consumer selects.
  if (const Layer* src = batch.source())
    step(out, std::to_string(src->id), [&] { publish(batch, *src, options, out); });
  for (const Layer* c : batch.layers_with(Role::consumer))
    step(out, std::to_string(c->id), [&] { select(batch, *c, options, out); });
  for (const Layer* p : batch.layers_with(Role::plain))
    step(out, std::to_string(p->id), [&] { plain(batch, *p, options, out); });
  step(out, "end", [&] { end(batch, options, out); });
  return out;
}

}  // namespace dsa
