#include "reports/report_model.hpp"

#include <algorithm>
#include <climits>
#include <cmath>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <tuple>

#include "core/errors.hpp"
#include "core/exit_codes.hpp"
#include "core/path.hpp"

namespace dsa {

using nlohmann::json;

// ---- enums as their printed names (an unknown name is an error, never a silent default) ----

static Disposition parse_disposition(const std::string& s) {
  for (Disposition d : {Disposition::passed, Disposition::incorrect, Disposition::not_run,
                        Disposition::not_supported, Disposition::inconclusive})
    if (s == disposition_name(d)) return d;
  throw std::invalid_argument("unknown verdict '" + s + "'");
}

static Rule parse_rule(const std::string& s) {
  for (Rule r : {Rule::own_path, Rule::public_test, Rule::quality})
    if (s == rule_name(r)) return r;
  throw std::invalid_argument("unknown rule '" + s + "'");
}

void to_json(json& j, const Disposition& d) { j = disposition_name(d); }
void from_json(const json& j, Disposition& d) { d = parse_disposition(j.get<std::string>()); }
void to_json(json& j, const Rule& r) { j = rule_name(r); }
void from_json(const json& j, Rule& r) { r = parse_rule(j.get<std::string>()); }

// NaN (e.g. calc_diff over no cells) is stored as null and read back as NaN.
void to_json(json& j, const Record& r) {
  j = json{{"name", r.name}, {"unit", r.unit}, {"hint", r.hint}};
  j["value"] = std::isfinite(r.value) ? json(r.value) : json(nullptr);
}
void from_json(const json& j, Record& r) {
  r.name = j.at("name").get<std::string>();
  r.unit = j.value("unit", "");
  r.hint = j.value("hint", "");
  const json& v = j.at("value");
  r.value = v.is_null() ? std::nan("") : v.get<double>();
}

NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(Mismatch, what, row, column, expected, actual, detail)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(RowFigure, row, length, agreement, floor_margin, exact,
                                                missed, extra)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(LayerComparison, layer, role, records, disposition,
                                                failed_metric, mismatches, rows)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(EnvironmentInfo, gpu, gpu_detail, driver, cuda, sm_clock,
                                                host, os, version, commit, started_at, devices)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(InputInfo, path, batch_id, origin, requests, rows, topk,
                                                max_len, compress_ratio, layers)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(KernelFigure, kernel, layer, calls, samples, median_ms,
                                                min_ms, max_ms, flops, bytes, tflops, gbps, floor_ms,
                                                ceiling_share)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(ImplRun, batch_id, impl, device, status, reason, named,
                                                repeats, deterministic, rows, wall_s, peak_device_bytes,
                                                kernels)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(CaseComparison, rule, against, parts)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(ScoredPosition, position, score, margin)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(WorstRow, row, length, agreement, floor_margin, kth_score,
                                                around_kth, missed, extra)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(CaseResult, id, batch_id, impl, layer, role, rows, input,
                                                verdict, failed_metric, message, rerun, comparisons, worst)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(RunSettings, rows, seed, repeat, tolerance, shard, shards)

// ---- derived figures and verdicts ----

KernelFigure kernel_figure(const std::string& kernel, const std::string& layer, int calls, int samples,
                           double median_ms, double min_ms, double max_ms, double flops, double bytes) {
  KernelFigure k;
  k.kernel = kernel;
  k.layer = layer;
  k.calls = calls;
  k.samples = samples;
  k.median_ms = median_ms;
  k.min_ms = min_ms;
  k.max_ms = max_ms;
  k.flops = flops;
  k.bytes = bytes;
  const double seconds = median_ms / 1e3;
  if (seconds > 0) {
    k.tflops = flops / seconds / 1e12;
    k.gbps = bytes / seconds / 1e9;
  }
  // The floor is the slower of the two ceilings: the kernel cannot beat either.
  k.floor_ms = std::max(flops / kCeilingFlopsPerSecond, bytes / kCeilingBytesPerSecond) * 1e3;
  k.ceiling_share = median_ms > 0 ? k.floor_ms / median_ms : 0;
  return k;
}

Disposition case_verdict(const std::vector<CaseComparison>& comparisons, std::string* failed_metric,
                         std::string* message) {
  bool any_ran = false, inconclusive = false;
  for (const CaseComparison& c : comparisons) {
    for (const LayerComparison& part : c.parts) {
      if (part.disposition == Disposition::not_run || part.disposition == Disposition::not_supported)
        continue;
      any_ran = true;
      if (part.disposition == Disposition::inconclusive) inconclusive = true;
      if (part.disposition != Disposition::incorrect) continue;
      if (failed_metric) {
        *failed_metric = std::string(rule_name(c.rule)) + " vs " + c.against + ": " +
                         (part.failed_metric.empty() ? std::string("failed") : part.failed_metric);
        if (part.layer.find('/') != std::string::npos) *failed_metric += " (" + part.layer + ")";
      }
      if (message) *message = part.mismatches.empty() ? "" : mismatch_text(part.layer, part.mismatches.front());
      return Disposition::incorrect;
    }
  }
  if (!any_ran) return comparisons.empty() ? Disposition::passed : Disposition::not_run;
  return inconclusive ? Disposition::inconclusive : Disposition::passed;
}

// ---- canonical order ----

// The registry's order without depending on it: the references, then the GPU paths, each in path
// order (sparse, mask, exact); any other name after them, recorded:NAME last, in NAME's order.
static int impl_rank(const std::string& impl) {
  int family = 0;
  std::string path = impl;
  if (impl.rfind("recorded:", 0) == 0) return 7 + impl_rank(impl.substr(9));
  if (impl.rfind("reference-", 0) == 0) path = impl.substr(10);
  else if (impl.rfind("gpu-", 0) == 0) family = 1, path = impl.substr(4);
  else return 6;
  const std::optional<PathKind> kind = path_from_name(path);
  return kind ? family * 3 + int(*kind) : 6;
}

// "blocks" first (level one happens before any layer), then layers by their numeric id.
static std::pair<long, std::string> layer_rank(const std::string& layer) {
  if (layer == "blocks") return {-1, layer};
  char* end = nullptr;
  const long id = std::strtol(layer.c_str(), &end, 10);
  return {end != layer.c_str() ? id : 1L << 30, layer};
}

void finalize_report(Report& report) {
  std::sort(report.inputs.begin(), report.inputs.end(), [](const InputInfo& a, const InputInfo& b) {
    return std::tie(a.batch_id, a.path) < std::tie(b.batch_id, b.path);
  });
  std::sort(report.runs.begin(), report.runs.end(), [](const ImplRun& a, const ImplRun& b) {
    return std::make_tuple(a.batch_id, impl_rank(a.impl), a.impl) <
           std::make_tuple(b.batch_id, impl_rank(b.impl), b.impl);
  });
  std::sort(report.cases.begin(), report.cases.end(), [](const CaseResult& a, const CaseResult& b) {
    return std::make_tuple(a.batch_id, impl_rank(a.impl), a.impl, layer_rank(a.layer), a.id) <
           std::make_tuple(b.batch_id, impl_rank(b.impl), b.impl, layer_rank(b.layer), b.id);
  });
  bool incorrect = false, inconclusive = false, invalid = false;
  for (const CaseResult& c : report.cases) {
    incorrect |= c.verdict == Disposition::incorrect;
    inconclusive |= c.verdict == Disposition::inconclusive;
  }
  // An implementation named with --impl that could not run is an environment problem; one that
  // was only offered by default is reported "not run" and leaves the verdict alone.
  for (const ImplRun& r : report.runs) invalid |= r.named && r.status != Disposition::passed;
  // Nothing compared at all cannot pass (no runs, or runs that yield no case: reference-exact
  // alone), except a shard whose share of the inputs is empty.
  if (report.cases.empty() && !(report.inputs.empty() && report.settings.shards > 1))
    inconclusive = true;
  report.verdict = incorrect ? Disposition::incorrect
                   : inconclusive ? Disposition::inconclusive
                                  : Disposition::passed;
  report.exit_code = invalid ? kExitInvalid : exit_code_of(report.verdict);
}

Report merge_reports(const std::vector<Report>& shards, const std::vector<std::string>& names) {
  Report out;
  if (shards.empty()) return out;
  out.environment = shards.front().environment;
  out.settings = shards.front().settings;
  out.settings.shard = 0;
  out.settings.shards = 1;
  std::set<std::string> inputs, runs, cases;
  for (size_t i = 0; i < shards.size(); ++i) {
    const Report& s = shards[i];
    const std::string name = i < names.size() ? names[i] : std::to_string(i);
    const RunSettings& a = s.settings;
    const RunSettings& b = out.settings;
    if (a.rows != b.rows || a.seed != b.seed || a.repeat != b.repeat || a.tolerance != b.tolerance)
      throw InputError(name, "settings", "shard was run with different --rows/--seed/--repeat/--tolerance");
    if (s.environment.gpu != out.environment.gpu)
      throw InputError(name, "environment.gpu", "shards ran on different GPU models (" +
                                                    s.environment.gpu + " vs " + out.environment.gpu + ")");
    for (const InputInfo& in : s.inputs)
      if (inputs.insert(in.batch_id).second) out.inputs.push_back(in);
    for (const ImplRun& r : s.runs)
      if (runs.insert(r.batch_id + "/" + r.impl).second) out.runs.push_back(r);
    for (const CaseResult& c : s.cases)
      if (cases.insert(c.id).second) out.cases.push_back(c);
    out.shards_merged.push_back(name);
  }
  finalize_report(out);
  return out;
}

// ---- JSON ----

json impl_run_to_json(const ImplRun& run) { return json(run); }
bool json_integer_in(const json& n, long double lo, long double hi) {
  if (!n.is_number_integer()) return false;
  const long double x = n.is_number_unsigned() ? (long double)n.get<unsigned long long>() : n.get<long long>();
  return x >= lo && x <= hi;
}

// The range of the report's integer field `key` (in any struct, or an array of them); an empty
// range {1, 0} when the key is not an integer field.
static std::pair<long double, long double> integer_field(const std::string& key) {
  static const std::set<std::string> ints = {
      "schema_version", "exit_code", "devices", "requests", "rows",          "topk",     "max_len", "compress_ratio",
      "layers",         "calls",     "samples", "repeats",  "deterministic", "position", "row",     "column",
      "length",         "missed",    "extra",   "repeat",   "shard",         "shards"};
  if (key == "peak_device_bytes") return {LLONG_MIN, LLONG_MAX};
  if (key == "seed") return {0, ULLONG_MAX};
  if (ints.count(key)) return {INT_MIN, INT_MAX};
  return {1, 0};
}

struct BadInteger {
  std::string path, value;
};

// The first number in an integer field that its type cannot hold: the JSON library would cast
// it, undefined out of range (fuzz_report found 6.7e74 in `samples`). Strings, objects and arrays
// of objects under those names are left to the typed reader.
static std::optional<BadInteger> bad_integer_field(const json& j, const std::string& at) {
  if (j.is_array()) {
    for (size_t i = 0; i < j.size(); ++i)
      if (auto bad = bad_integer_field(j[i], at + "[" + std::to_string(i) + "]")) return bad;
    return std::nullopt;
  }
  if (!j.is_object()) return std::nullopt;
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string path = at.empty() ? it.key() : at + "." + it.key();
    const auto [lo, hi] = integer_field(it.key());
    const json& v = it.value();
    if (lo <= hi)
      for (const json& n : v.is_array() ? v : json::array({v}))
        if (n.is_number() && !json_integer_in(n, lo, hi)) return BadInteger{path, n.dump()};
    if (auto bad = bad_integer_field(v, path)) return bad;
  }
  return std::nullopt;
}

static const char* kNotInRange = "must be an integer in range, not ";

// For the JSONL records (case_log wraps the error with the file and line).
static void check_integer_fields(const json& j) {
  if (auto bad = bad_integer_field(j, "")) throw std::invalid_argument(bad->path + ": " + kNotInRange + bad->value);
}

ImplRun impl_run_from_json(const json& j) {
  check_integer_fields(j);
  return j.get<ImplRun>();
}
json case_to_json(const CaseResult& c) { return json(c); }
CaseResult case_from_json(const json& j) {
  check_integer_fields(j);
  return j.get<CaseResult>();
}

json report_to_json(const Report& r) {
  json j;
  j["schema_version"] = r.schema_version;
  j["environment"] = r.environment;
  j["settings"] = r.settings;
  j["inputs"] = r.inputs;
  j["runs"] = r.runs;
  j["cases"] = r.cases;
  j["verdict"] = r.verdict;
  j["exit_code"] = r.exit_code;
  j["shards_merged"] = r.shards_merged;
  return j;
}

Report report_from_json(const json& j, const std::string& file) {
  if (!j.is_object() || !j.contains("schema_version"))
    throw InputError(file, "schema_version", "missing: not a dsa-harness report.json");
  if (auto bad = bad_integer_field(j, "")) throw InputError(file, bad->path, kNotInRange + bad->value);
  if (!j["schema_version"].is_number_integer() || j["schema_version"].get<int>() != kReportSchemaVersion)
    throw InputError(file, "schema_version", "unsupported report schema " + j["schema_version"].dump() +
                                                 " (this build reads " + std::to_string(kReportSchemaVersion) + ")");
  Report r;
  const char* key = "";
  try {
    key = "environment";
    r.environment = j.at(key).get<EnvironmentInfo>();
    key = "settings";
    r.settings = j.value(key, json::object()).get<RunSettings>();
    key = "inputs";
    r.inputs = j.at(key).get<std::vector<InputInfo>>();
    key = "runs";
    r.runs = j.at(key).get<std::vector<ImplRun>>();
    key = "cases";
    r.cases = j.at(key).get<std::vector<CaseResult>>();
    key = "verdict";
    r.verdict = j.at(key).get<Disposition>();
    key = "exit_code";
    r.exit_code = j.at(key).get<int>();
    key = "shards_merged";
    r.shards_merged = j.value(key, std::vector<std::string>{});
  } catch (const std::exception& e) {
    throw InputError(file, key, std::string("malformed: ") + e.what());
  }
  return r;
}

Report read_report(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw InputError(path, "report.json", "cannot open the file");
  json j;
  try {
    in >> j;
  } catch (const std::exception& e) {
    throw InputError(path, "report.json", std::string("not valid JSON: ") + e.what());
  }
  return report_from_json(j, path);
}

json mask_volatile(json j) {
  const char* masked = "<masked>";
  if (j.contains("environment")) {
    json& env = j["environment"];
    // The machine, GPU model and CUDA version included: a snapshot must not depend on the host.
    for (const char* key : {"host", "os", "commit", "started_at", "version", "gpu", "driver", "cuda", "sm_clock",
                            "gpu_detail"})
      if (env.contains(key)) env[key] = masked;
  }
  if (j.contains("settings")) {
    j["settings"]["shard"] = 0;
    j["settings"]["shards"] = 1;
  }
  if (j.contains("runs"))
    for (json& run : j["runs"]) {
      run["wall_s"] = 0;
      // CPU stage timings are host-clock measurements whose very stages depend on what the
      // process computed before (the references share work between runs): all volatile.
      if (run.value("device", "") == "cpu") run["kernels"] = json::array();
      for (json& k : run["kernels"])
        for (const char* key : {"median_ms", "min_ms", "max_ms", "tflops", "gbps", "ceiling_share"}) k[key] = 0;
    }
  if (j.contains("shards_merged")) j["shards_merged"] = json::array();
  return j;
}

}  // namespace dsa
