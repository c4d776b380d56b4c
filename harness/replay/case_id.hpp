#pragma once
// Case IDs and the command that reruns one case.
#include <cstdint>
#include <string>
#include <vector>

namespace dsa {

// Case IDs are short, batch-id/impl/layer: the rows a case ran on travel in its rerun command
// (--rows/--seed), so a sampled run's IDs do not list every row. A fourth part, rows as ascending
// ranges "0-3,17" (the IDs of earlier versions), is still accepted by --case.
struct CaseId {
  std::string batch_id, impl, layer, rows;
};
CaseId parse_case_id(const std::string& id);  // throws InputError("--case", id, rule)
std::string format_case_id(const CaseId& id);
std::string rows_text(const std::vector<int>& rows);           // {} -> "" (all rows)
std::vector<int> parse_rows_text(const std::string& text, int row_count);  // throws InputError

// The --rows/--seed flags that select the same rows again: "" for all rows, " --rows N --seed S"
// for a sample, " --rows i,j,k" for a list.
std::string rows_flags(const std::string& rows_spec, uint64_t seed);
// `word` as one POSIX shell word: unchanged when it holds only safe characters, else in single
// quotes (a ' inside becomes '\''), so a printed command pastes and runs.
std::string shell_quote(const std::string& word);

// The command line that reruns one case (paths shell-quoted); `flags` from rows_flags.
std::string rerun_command(const std::string& input, const std::string& case_id, const std::string& flags,
                          double tolerance);

}  // namespace dsa
