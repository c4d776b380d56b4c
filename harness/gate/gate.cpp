#include "harness/gate/gate.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "core/errors.hpp"
#include "core/exit_codes.hpp"

namespace dsa {

namespace {

using nlohmann::json;

bool name_is(const std::string& name, const std::string& key) {
  return name == key || (name.size() > key.size() && name.compare(name.size() - key.size(), key.size(), key) == 0 &&
                         name[name.size() - key.size() - 1] == '.');
}

std::string pct(double fraction) {
  std::ostringstream s;
  s.precision(3);
  s << 100 * fraction << "%";
  return s.str();
}

void add(GateResult& out, GateKind kind, const std::string& subject, const std::string& detail,
         const std::string& rerun = "") {
  out.findings.push_back({kind, subject, detail, rerun});
}

// The rerun command of the current run's case of one kernel: its own layer's case, else any case
// of that implementation on that batch (a kernel may span layers).
std::string rerun_of(const Report& cur, const ImplRun& run, const KernelFigure& k) {
  const CaseResult* any = nullptr;
  for (const CaseResult& c : cur.cases) {
    if (c.batch_id != run.batch_id || c.impl != run.impl) continue;
    if (c.layer == k.layer) return c.rerun;
    if (!any) any = &c;
  }
  return any ? any->rerun : "";
}

// Correctness of one case of the current run on its own terms.
void check_thresholds(const CaseResult& c, const GateConfig& cfg, GateResult& out) {
  if (c.verdict == Disposition::incorrect)
    add(out, GateKind::correctness, c.id, "incorrect: " + c.failed_metric + (c.message.empty() ? "" : "; " + c.message),
        c.rerun);
  for (const CaseComparison& cmp : c.comparisons) {
    if (cmp.rule == Rule::quality) continue;  // quality against fp64 is informational
    for (const LayerComparison& part : cmp.parts) {
      // Which comparison: one case is checked against several references.
      const std::string where = std::string(rule_name(cmp.rule)) + " vs " + cmp.against + ", " + part.layer + ": ";
      for (const Record& r : part.records) {
        if (name_is(r.name, "validity") && r.value < cfg.validity_min)
          add(out, GateKind::correctness, c.id, where + r.name + " " + pct(r.value) + " < " + pct(cfg.validity_min),
              c.rerun);
        if (name_is(r.name, "floor.violating_rows") && r.value > cfg.max_floor_violations)
          add(out, GateKind::correctness, c.id,
              where + std::to_string(int64_t(r.value)) + " row(s) violate the selection floor", c.rerun);
      }
    }
  }
}

// Agreement of a case against the same case of the baseline.
void check_agreement(const CaseResult& base, const CaseResult& cur, const GateConfig& cfg, GateResult& out) {
  std::map<std::string, double> before;
  auto key = [](const CaseComparison& cmp, const LayerComparison& part, const Record& r) {
    return std::string(rule_name(cmp.rule)) + "|" + cmp.against + "|" + part.layer + "|" + r.name;
  };
  for (const CaseComparison& cmp : base.comparisons)
    for (const LayerComparison& part : cmp.parts)
      for (const Record& r : part.records) before[key(cmp, part, r)] = r.value;
  for (const CaseComparison& cmp : cur.comparisons)
    for (const LayerComparison& part : cmp.parts)
      for (const Record& r : part.records) {
        if (!name_is(r.name, "agreement.mean") && !name_is(r.name, "agreement.min")) continue;
        auto it = before.find(key(cmp, part, r));
        if (it == before.end() || !std::isfinite(it->second) || !std::isfinite(r.value)) continue;
        if (r.value < it->second - cfg.agreement_margin)
          add(out, GateKind::correctness, cur.id,
              std::string(rule_name(cmp.rule)) + " " + part.layer + " " + r.name + " fell from " + pct(it->second) +
                  " to " + pct(r.value) + " (margin " + pct(cfg.agreement_margin) + ")",
              cur.rerun);
      }
}

void check_cases(const Report& base, const Report& cur, const GateConfig& cfg, GateResult& out) {
  std::map<std::string, const CaseResult*> current;
  for (const CaseResult& c : cur.cases) {
    current[c.id] = &c;
    check_thresholds(c, cfg, out);
  }
  for (const CaseResult& b : base.cases) {
    auto it = current.find(b.id);
    if (it == current.end()) {
      add(out, GateKind::inconclusive, b.id, "in the baseline but not in the current run");
      continue;
    }
    ++out.cases_compared;
    check_agreement(b, *it->second, cfg, out);
  }
}

// Latency: judged against the spread of both runs, never on medians alone.
void check_kernel(const std::string& subject, const KernelFigure& b, const KernelFigure& c, const GateConfig& cfg,
                  const std::string& rerun, GateResult& out) {
  ++out.kernels_compared;
  const double ratio = b.median_ms > 0 ? c.median_ms / b.median_ms : 1.0;
  std::ostringstream d;
  d.precision(4);
  d << "median " << b.median_ms << " -> " << c.median_ms << " ms (" << (ratio >= 1 ? "+" : "") << pct(ratio - 1)
    << "); spread " << b.min_ms << ".." << b.max_ms << " vs " << c.min_ms << ".." << c.max_ms << " ms";
  const double delta = c.median_ms - b.median_ms;
  if (std::fabs(ratio - 1) <= cfg.min_effect || std::fabs(delta) <= cfg.min_abs_ms)
    add(out, GateKind::ok, subject, d.str() + ": no change");
  else if (c.min_ms > b.max_ms) {
    // How far beyond the noise: the fastest sample now against the slowest sample before.
    d << ": slower beyond the noise (fastest now " << c.min_ms - b.max_ms << " ms above the baseline's slowest)";
    add(out, GateKind::regression, subject, d.str(), rerun);
  } else if (c.max_ms < b.min_ms) add(out, GateKind::ok, subject, d.str() + ": faster beyond the noise");
  // Inside the noise: a possible regression cannot be told apart from noise; a lower median
  // cannot be a regression, and is not called faster either.
  else if (delta > 0) add(out, GateKind::inconclusive, subject, d.str() + ": inside the noise of the two runs", rerun);
  else add(out, GateKind::ok, subject, d.str() + ": inside the noise of the two runs, not a regression");
}

void check_latency(const Report& base, const Report& cur, const GateConfig& cfg, GateResult& out) {
  std::map<std::string, std::pair<const ImplRun*, const KernelFigure*>> current;
  auto name = [](const ImplRun& run, const KernelFigure& k) {
    return run.impl + " " + k.kernel + " @" + k.layer + " [" + run.batch_id + "]";
  };
  for (const ImplRun& run : cur.runs)
    for (const KernelFigure& k : run.kernels) current[name(run, k)] = {&run, &k};
  for (const ImplRun& run : base.runs)
    for (const KernelFigure& k : run.kernels) {
      const std::string subject = name(run, k);
      auto it = current.find(subject);
      if (it == current.end()) add(out, GateKind::inconclusive, subject, "timed in the baseline but not in the current run");
      // One sample has no spread to judge a change against (CPU stage timings): not judged.
      else if (k.samples < 2 || it->second.second->samples < 2) add(out, GateKind::ok, subject, "one sample: not judged");
      else check_kernel(subject, k, *it->second.second, cfg, rerun_of(cur, *it->second.first, k), out);
    }
  // A kernel timed only now has nothing to be judged against: a 10x slower one must not pass.
  std::set<std::string> before;
  for (const ImplRun& run : base.runs)
    for (const KernelFigure& k : run.kernels) before.insert(name(run, k));
  for (const ImplRun& run : cur.runs)
    for (const KernelFigure& k : run.kernels)
      if (k.samples >= 2 && !before.count(name(run, k)))
        add(out, GateKind::inconclusive, name(run, k), "timed in the current run but not in the baseline",
            rerun_of(cur, run, k));
}

// Whole implementation runs present on one side only (a GPU run missing from the baseline).
void check_runs(const Report& base, const Report& cur, GateResult& out) {
  auto ran = [](const Report& r) {
    std::set<std::string> keys;
    for (const ImplRun& run : r.runs)
      if (run.status == Disposition::passed) keys.insert(run.impl + " [" + run.batch_id + "]");
    return keys;
  };
  const std::set<std::string> b = ran(base), c = ran(cur);
  for (const std::string& k : b)
    if (!c.count(k)) add(out, GateKind::inconclusive, k, "ran in the baseline but not in the current run");
  for (const std::string& k : c)
    if (!b.count(k)) add(out, GateKind::inconclusive, k, "ran in the current run but not in the baseline");
}

ExitCode exit_code_of(GateKind kind) {
  switch (kind) {
    case GateKind::ok: return kExitPass;
    case GateKind::correctness: return kExitIncorrect;
    case GateKind::regression: return kExitRegression;
    case GateKind::inconclusive: return kExitInconclusive;
    case GateKind::environment: return kExitInvalid;
  }
  return kExitInvalid;
}

// The most severe finding decides (core/exit_codes.hpp orders them).
ExitCode exit_code_of(const std::vector<GateFinding>& findings) {
  ExitCode code = kExitPass;
  for (const GateFinding& f : findings) code = worse(code, exit_code_of(f.kind));
  return code;
}

}  // namespace

const char* gate_kind_name(GateKind kind) {
  switch (kind) {
    case GateKind::ok: return "ok";
    case GateKind::correctness: return "correctness failure";
    case GateKind::regression: return "regression";
    case GateKind::inconclusive: return "inconclusive";
    case GateKind::environment: return "environment";
  }
  return "?";
}

GateConfig read_gate_config(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw InputError(path, "gate config", "cannot open the file");
  json j;
  try {
    in >> j;
  } catch (const std::exception& e) {
    throw InputError(path, "gate config", std::string("not valid JSON: ") + e.what());
  }
  if (!j.is_object()) throw InputError(path, "gate config", "must be a JSON object");
  GateConfig cfg;
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string& key = it.key();
    const bool number = it->is_number();
    if (key == "allow_different_gpu") {
      if (!it->is_boolean()) throw InputError(path, key, "must be true or false");
      cfg.allow_different_gpu = it->get<bool>();
      continue;
    }
    if (!number) throw InputError(path, key, "must be a number");
    const double v = it->get<double>();
    if (key == "validity_min") cfg.validity_min = v;
    else if (key == "max_floor_violations") cfg.max_floor_violations = v;
    else if (key == "agreement_margin") cfg.agreement_margin = v;
    else if (key == "min_effect") cfg.min_effect = v;
    else if (key == "min_abs_ms") cfg.min_abs_ms = v;
    else throw InputError(path, key, "unknown key (validity_min, max_floor_violations, agreement_margin, min_effect, min_abs_ms, "
                                    "allow_different_gpu)");
    if (!(v >= 0)) throw InputError(path, key, "must be >= 0");
    if ((key == "validity_min" || key == "agreement_margin" || key == "min_effect") && v > 1)
      throw InputError(path, key, "is a fraction: must be in [0, 1] (got " + std::to_string(v) + ")");
  }
  return cfg;
}

GateResult run_gate(const Report& baseline, const Report& current, const GateConfig& config) {
  GateResult out;
  const bool same_gpu = baseline.environment.gpu == current.environment.gpu;
  if (!same_gpu && !config.allow_different_gpu)
    add(out, GateKind::environment, "environment.gpu",
        "baseline ran on " + baseline.environment.gpu + ", current on " + current.environment.gpu +
            " (pass --allow-different-gpu to compare correctness anyway)");
  check_cases(baseline, current, config, out);
  check_runs(baseline, current, out);
  // Latencies from different GPU models say nothing about the code; only correctness is judged.
  if (same_gpu) check_latency(baseline, current, config, out);
  std::stable_sort(out.findings.begin(), out.findings.end(),
                   [](const GateFinding& a, const GateFinding& b) { return (a.kind == GateKind::ok) < (b.kind == GateKind::ok); });
  out.exit_code = exit_code_of(out.findings);
  return out;
}

std::string gate_text(const GateResult& result) {
  std::ostringstream s;
  int ok = 0;
  for (const GateFinding& f : result.findings) {
    if (f.kind == GateKind::ok) {
      ++ok;
      continue;
    }
    s << gate_kind_name(f.kind) << ": " << f.subject << ": " << f.detail << "\n";
    if (!f.rerun.empty()) s << "  rerun: " << f.rerun << "\n";
  }
  const char* verdict = exit_code_name(ExitCode(result.exit_code));
  s << "gate: " << verdict << " (exit " << result.exit_code << "): " << result.cases_compared << " case(s) and "
    << result.kernels_compared << " kernel(s) compared, " << ok << " judgement(s) ok, "
    << result.findings.size() - size_t(ok) << " not\n";
  return s.str();
}

}  // namespace dsa
