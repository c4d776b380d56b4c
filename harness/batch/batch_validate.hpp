#pragma once
// The validator of batch format v1: every rule of docs/batch-format.md ("Validation rules" and the
// attribute table), on an in-memory Batch. Each broken rule throws its own
// InputError(file, dataset, rule) naming the dataset or attribute (e.g. "/requests/page_table").
#include <string>

#include "core/batch.hpp"
#include "core/results.hpp"

namespace dsa {

// Checks attributes, shapes, lengths, page tables, ue8m0 bytes, weights, layers and roles, and
// every recorded output in batch.outputs (validate_results). Needs no finalize() beforehand.
void validate_batch(const Batch& batch, const std::string& file);

// Checks one result set against a valid batch: rows_done [R] of 0/1, blocks [R, 2048] valid and
// ascending with INT32_MAX padding, positions [R, topk] in [-1, L) ascending with -1 last and
// unique, tail_positions [sum(tail_rows), topk] on consumers only, scores sized per row (dense: L
// entries on done rows; sparse: at most 16384; none on rows not done), layer ids of the batch.
// Datasets are named "/outputs/<name>/..." in messages.
void validate_results(const Batch& batch, const Results& results, const std::string& file);

// valid_len of a row of length L when all min(2048, ceil(L/8)) blocks are kept (docs/semantics.md).
int valid_len_of(int len);

}  // namespace dsa
