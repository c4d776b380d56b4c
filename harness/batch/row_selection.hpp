#pragma once
// `--rows all|N|i,j,k`: which rows of a batch a run computes. A sampled run is cheap and, because
// rows are independent, gives the same answer for those rows as a full run.
#include <cstdint>
#include <string>
#include <vector>

#include "core/batch.hpp"

namespace dsa {

// "all"   -> empty (RunOptions: all rows).
// "N"     -> N rows drawn with `seed` (same batch, N and seed -> same rows on any platform), plus
//            the rows with the smallest and the largest L; N >= rows means all rows.
// "i,j,k" -> exactly those rows (a single row is written "i,"). Ascending, duplicates dropped.
// Throws InputError("--rows", spec, rule) for anything else or a row outside [0, rows).
std::vector<int> select_rows(const Batch& batch, const std::string& spec, uint64_t seed);

// The N-row draw on its own: ascending, unique, always holding the rows with the smallest and
// largest L (first such row) when the batch has rows.
std::vector<int> draw_rows(const Batch& batch, int n, uint64_t seed);

}  // namespace dsa
