#include "core/implementation.hpp"

namespace dsa {

Results Implementation::run(const Batch& batch, const RunOptions& options) {
  Results out;
  out.name = name();
  out.implementation = name();
  out.device = device();
  const size_t rows = size_t(batch.rows());
  out.rows_done.assign(rows, options.rows.empty() ? 1 : 0);
  for (int r : options.rows) out.rows_done[size_t(r)] = 1;
  begin(batch, options, out);
  // Layer order is the engine's: the source publishes before any consumer selects.
  if (const Layer* src = batch.source()) publish(batch, *src, options, out);
  for (const Layer* c : batch.layers_with(Role::consumer)) select(batch, *c, options, out);
  for (const Layer* p : batch.layers_with(Role::plain)) plain(batch, *p, options, out);
  end(batch, options, out);
  return out;
}

}  // namespace dsa
