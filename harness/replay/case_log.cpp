#include "harness/replay/case_log.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>

#include <unistd.h>

#include "core/errors.hpp"

namespace dsa {

using nlohmann::json;

namespace {

json settings_json(const RunSettings& s) {
  return {{"rows", s.rows}, {"seed", s.seed}, {"repeat", s.repeat}, {"tolerance", s.tolerance},
          {"shard", s.shard}, {"shards", s.shards}};
}

std::string key(const std::string& batch_id, const std::string& impl) { return batch_id + "/" + impl; }

}  // namespace

CaseLog::CaseLog(const std::string& dir, const RunSettings& settings, bool resume, const json& scope)
    : path_(dir + "/cases.jsonl") {
  const json first = {{"type", "settings"}, {"settings", settings_json(settings)}, {"scope", scope}};
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw EnvironmentError(dir + ": cannot create the report folder (" + ec.message() + ")");
  if (resume && std::filesystem::exists(path_)) {
    load(settings, scope);
    file_ = std::fopen(path_.c_str(), "ab");
    if (file_ && std::filesystem::file_size(path_, ec) == 0) write_line(first);
  } else {
    file_ = std::fopen(path_.c_str(), "wb");
    if (file_) write_line(first);
  }
  if (!file_) throw EnvironmentError(path_ + ": cannot write (" + std::strerror(errno) + ")");
}

CaseLog::~CaseLog() {
  if (file_) std::fclose(file_);
}

bool CaseLog::finished(const std::string& batch_id, const std::string& impl) const {
  return done_.count(key(batch_id, impl)) != 0;
}

// Reads the earlier log. Cases count only once the run line that closes them was written.
void CaseLog::load(const RunSettings& settings, const json& scope) {
  std::ifstream in(path_, std::ios::binary);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::map<std::string, std::vector<CaseResult>> pending;
  std::set<std::string> case_ids;
  size_t start = 0, good_bytes = 0, number = 0;
  // Every record is written with its newline in one write: a last piece without one is torn.
  for (size_t end; (end = text.find('\n', start)) != std::string::npos; start = end + 1) {
    ++number;
    const std::string line = text.substr(start, end - start);
    if (line.empty()) continue;
    const std::string where = "line " + std::to_string(number);
    json j;
    try {
      j = json::parse(line);
    } catch (const std::exception&) {
      if (text.find('\n', end + 1) == std::string::npos) break;  // torn last line of a killed run
      throw InputError(path_, where, "not JSON (the log is damaged; rerun without --resume)");
    }
    const std::string type = j.value("type", "");
    if (type == "settings" && j.value("settings", json()) != settings_json(settings))
      throw InputError(path_, "settings", "written by a run with other --rows/--seed/--repeat/--tolerance/--shard: " +
                                              j.value("settings", json()).dump() + "; rerun without --resume");
    // Another batch's cases would join this run's verdict: refuse rather than mix them.
    if (type == "settings" && j.value("scope", json::object()) != scope)
      throw InputError(path_, "scope", "written by a run of other inputs or implementations: " +
                                           j.value("scope", json::object()).dump() +
                                           "; rerun without --resume or pick another -o folder");
    try {
      if (type == "case") {
        CaseResult c = case_from_json(j.at("case"));
        pending[key(c.batch_id, c.impl)].push_back(std::move(c));
      } else if (type == "run") {
        ImplRun r = impl_run_from_json(j.at("run"));
        const std::string k = key(r.batch_id, r.impl);
        if (done_.insert(k).second) {  // a run logged twice (lines copied, a log appended to itself) counts once
          for (CaseResult& c : pending[k])
            if (case_ids.insert(c.id).second) cases_.push_back(std::move(c));
          runs_.push_back(std::move(r));
        }
        pending.erase(k);
        good_bytes = end + 1;
      } else if (type == "settings") {
        good_bytes = end + 1;
      }
    } catch (const std::exception& e) {
      throw InputError(path_, where, std::string("malformed record: ") + e.what());
    }
  }
  // Drop what follows the last finished run (the cases of a run that was killed, a torn line):
  // that run starts over and appends its lines after the finished ones.
  std::error_code ec;
  std::filesystem::resize_file(path_, good_bytes, ec);
}

void CaseLog::write_line(const json& line) {
  const std::string text = line.dump() + "\n";
  if (std::fwrite(text.data(), 1, text.size(), file_) != text.size() || std::fflush(file_) != 0)
    throw EnvironmentError(path_ + ": cannot append (" + std::strerror(errno) + ")");
}

void CaseLog::append(const ImplRun& run, const std::vector<CaseResult>& cases) {
  for (const CaseResult& c : cases) write_line({{"type", "case"}, {"case", case_to_json(c)}});
  write_line({{"type", "run"}, {"run", impl_run_to_json(run)}});
  ::fsync(::fileno(file_));
  done_.insert(key(run.batch_id, run.impl));
}

}  // namespace dsa
