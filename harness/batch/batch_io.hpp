#pragma once
// HDF5 reader and writer of batch format v1 and of result files (docs/batch-format.md).
// Nothing outside harness/batch_io*, harness/h5_util* touches HDF5.
#include <string>
#include <vector>

#include "core/batch.hpp"
#include "core/results.hpp"

namespace dsa {

// Reads a v1 batch file, recorded outputs included (into batch.outputs), validates every rule of
// docs/batch-format.md (validate_batch) and calls batch.finalize(). Sets batch.path = path.
// Throws InputError("<file>: <dataset>: <rule>") for broken rules and for HDF5 failures
// (missing/unreadable file, not HDF5, missing dataset, wrong dtype or shape).
Batch read_batch(const std::string& path);

// Writes exactly the v1 layout, recorded outputs included (group name = the key in batch.outputs;
// Results::name is not used there, and reading sets it to the group name). The batch must pass validate_batch
// (checked first; InputError names `path`). Deterministic (no object timestamps, fixed chunking
// and deflate level: the same Batch gives a byte-identical file) and atomic (writes
// "<path>.tmp-<pid>" in the same folder, then renames). HDF5 failures throw EnvironmentError.
void write_batch(const std::string& path, const Batch& batch);

// Result files: /outputs/<name>/... only, plus the root attribute `batch` = content_id(batch).
// Each Results is validated against the batch first (validate_results). Deterministic, atomic.
void write_results(const std::string& path, const Batch& batch, const std::vector<Results>& results);

// Reads a result file back, validated against `batch`; refuses a file whose `batch` attribute is
// not content_id(batch). Results come back sorted by name.
// Scores: dense_scores[r] gets L entries and sparse_scores[r] gets valid_len(L) entries
// (8*(min(2048, ceil(L/8))-1) + (L-1)%8 + 1; 0 for L = 0) for every row with rows_done = 1 when
// the dataset exists; other rows stay empty.
std::vector<Results> read_results(const std::string& path, const Batch& batch);

}  // namespace dsa
