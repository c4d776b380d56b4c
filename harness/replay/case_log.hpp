#pragma once
// The replay's JSONL log, DIR/cases.jsonl: one JSON object per line, flushed and synced as each
// implementation run finishes (its cases first, then the run), so a crash or kill keeps every
// finished run and --resume skips them. Line types: "settings" (first line), "case", "run".
#include <set>
#include <string>
#include <vector>

#include "reports/report_model.hpp"

namespace dsa {

class CaseLog {
 public:
  // Starts a new log (truncating an old one), or with `resume` reads the finished runs of an
  // earlier one. A torn last line (the kill came mid-write) is dropped. `scope` (the inputs and
  // implementations of the run) is stored with the settings. Throws InputError when the earlier
  // log was written with other settings or another scope, EnvironmentError when DIR is not
  // writable. A run or case logged twice counts once.
  CaseLog(const std::string& dir, const RunSettings& settings, bool resume,
          const nlohmann::json& scope = nlohmann::json::object());
  ~CaseLog();
  CaseLog(const CaseLog&) = delete;
  CaseLog& operator=(const CaseLog&) = delete;

  const std::string& path() const { return path_; }
  bool finished(const std::string& batch_id, const std::string& impl) const;
  // What earlier runs finished (empty without --resume).
  const std::vector<ImplRun>& earlier_runs() const { return runs_; }
  const std::vector<CaseResult>& earlier_cases() const { return cases_; }

  // Appends one finished implementation run with its cases, then flushes and syncs.
  void append(const ImplRun& run, const std::vector<CaseResult>& cases);

 private:
  void load(const RunSettings& settings, const nlohmann::json& scope);
  void write_line(const nlohmann::json& line);

  std::string path_;
  std::FILE* file_ = nullptr;
  std::set<std::string> done_;
  std::vector<ImplRun> runs_;
  std::vector<CaseResult> cases_;
};

}  // namespace dsa
