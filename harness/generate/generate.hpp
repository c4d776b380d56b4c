#pragma once
// Synthetic batches that look like production prefill chunks. Each preset builds
// a dsa::Batch in memory; `dsa-harness generate` writes it with write_batch. The same preset, seed
// and overrides always give the same Batch, field by field, on any platform and thread count.
//
// Presets (built in harness/generate/generate.cpp on the data model of generate_model.cpp;
// fixtures/README.md describes them):
//   smoke        tiny ratio-1 batch (source 20, consumers 24 28); one request beyond 16384 positions
//   edge         every edge case of docs/semantics.md in one ratio-1 file (source 20, consumers 24..36)
//   edge-r2      plain layers 2 8 14 at compress ratio 2 (source_layer -1)
//   sglang-test  the public kernel test's two requests (256 rows at 40000, 64 rows at 3000)
//   chunk-256k   16384 causal rows at 262144 context, one request (about 190 MB on disk)
#include <cstdint>
#include <string>
#include <vector>

#include "core/batch.hpp"

namespace dsa {

struct GenerateOptions {
  std::string preset;
  uint64_t seed = 0;
  int requests = -1;          // -1: the preset's own
  int rows_per_request = -1;  // -1: the preset's own
  int context = -1;           // -1: the preset's own (compressed length of the longest request)
  std::vector<int> layers;    // empty: the preset's own
};

// Builds the batch (finalize() already called). Throws InputError for an unknown preset or an
// override the preset cannot honour; the message names the option (e.g. "--context").
Batch generate_batch(const GenerateOptions& options);

// Names accepted by GenerateOptions::preset, in the order `generate --help` lists them.
std::vector<std::string> preset_names();

}  // namespace dsa
