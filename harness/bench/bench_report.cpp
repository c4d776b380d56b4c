#include "harness/bench/bench_report.hpp"

#include <map>
#include <sstream>

#include "harness/bench/bench_figures.hpp"
#include "reports/printers.hpp"

namespace dsa {

namespace {

using reports::format_number;

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}
// Protocol steps of untimed runs ("<impl>/step") and of a captured CUDA graph ("<impl>/graph/step").
bool is_step(const KernelFigure& k) { return ends_with(k.kernel, "/step"); }
bool is_graph_step(const KernelFigure& k) { return ends_with(k.kernel, "/graph/step"); }

// A route's share of a kernel ("gpu-mask/dense_logits.wgmma"): shown, never added to totals.
bool is_part(const KernelFigure& k) { return k.kernel.find('.', k.kernel.rfind('/')) != std::string::npos; }

std::string spread(const KernelFigure& k) { return format_number(k.min_ms) + ".." + format_number(k.max_ms); }

std::string rate(const KernelFigure& k) {
  if (k.flops > 0) return format_number(k.tflops, 4) + " TFLOP/s";
  if (k.bytes > 0) return format_number(k.gbps / 1e3, 4) + " TB/s";
  return "-";
}

const InputInfo* input_of(const Report& r, const std::string& batch_id) {
  for (const InputInfo& in : r.inputs)
    if (in.batch_id == batch_id) return &in;
  return nullptr;
}

std::string context_of(const Report& r, const std::string& batch_id) {
  const InputInfo* in = input_of(r, batch_id);
  return in ? std::to_string(in->max_len) : "?";
}

// Sum of median x calls of a run's kernels whose short name (after "impl/") is in `names` on
// `layer`; -1 when one of them is missing.
double stage_ms(const ImplRun& run, const std::vector<std::string>& names, const std::string& layer) {
  double sum = 0;
  for (const std::string& n : names) {
    bool found = false;
    for (const KernelFigure& k : run.kernels)
      if (k.layer == layer && k.kernel == run.impl + "/" + n) sum += k.median_ms * k.calls, found = true;
    if (!found) return -1;
  }
  return sum;
}

// Every timed kernel of a run (not its steps), median x calls.
double kernels_ms(const ImplRun& run) {
  double sum = 0;
  for (const KernelFigure& k : run.kernels)
    if (!is_step(k) && !is_part(k)) sum += k.median_ms * k.calls;
  return sum;
}

BenchTable ceilings_table(const Report& r) {
  BenchTable t{"Ceilings (measured in this run)", {"ceiling", "measured", "median ms", "min..max ms", "samples"}, {}, ""};
  for (const ImplRun& run : r.runs) {
    if (run.impl != kCeilingsImpl) continue;
    for (const KernelFigure& k : run.kernels)
      t.rows.push_back({k.kernel, rate(k), format_number(k.median_ms), spread(k), std::to_string(k.samples)});
    if (!run.reason.empty()) t.note = "Not measured: " + run.reason;
  }
  return t;
}

BenchTable kernels_table(const Report& r) {
  BenchTable t{"Kernels (share of ceiling: floor from the ceilings above / median)",
               {"path", "context", "rows", "kernel", "layer", "calls", "median ms", "min..max ms", "achieved", "floor ms",
                "share of ceiling"},
               {},
               "floor = max(flops / int8 wgmma rate, bytes / HBM copy rate), both measured in this run"};
  for (const ImplRun& run : r.runs) {
    if (run.impl == kCeilingsImpl || run.impl == kTorchPeerImpl) continue;
    for (const KernelFigure& k : run.kernels)
      if (!is_step(k))
        t.rows.push_back({run.impl, context_of(r, run.batch_id), std::to_string(run.rows), k.kernel, k.layer,
                          std::to_string(k.calls), format_number(k.median_ms), spread(k), rate(k),
                          is_part(k) ? "-" : format_number(k.floor_ms),
                          is_part(k) ? "(a route's share)" : format_number(100 * k.ceiling_share, 3) + " %"});
  }
  return t;
}

BenchTable paths_table(const Report& r) {
  BenchTable t{"Paths (per batch)",
               {"path", "context", "rows", "kernels ms (sum of medians)", "peak device memory", "launches per step",
                "launches per captured step (CUDA graph)", "wall ms per step (median of untimed runs)"},
               {},
               "A step is one protocol call (begin, each layer, end); launches include the engine's output checks, "
               "a captured step's are its kernels alone."};
  auto add = [](std::string& list, const KernelFigure& k, const std::string& value) {
    list += (list.empty() ? "" : ", ") + k.layer + ": " + value;
  };
  for (const ImplRun& run : r.runs) {
    if (run.impl == kCeilingsImpl || run.impl == kTorchPeerImpl) continue;
    std::string launches, captured, walls;
    for (const KernelFigure& k : run.kernels) {
      if (is_graph_step(k)) {
        add(captured, k, std::to_string(k.calls));
      } else if (is_step(k)) {
        add(launches, k, std::to_string(k.calls));
        add(walls, k, format_number(k.median_ms));
      }
    }
    const std::string peak =
        run.peak_device_bytes < 0 ? "-" : format_number(double(run.peak_device_bytes) / (1 << 30), 4) + " GiB";
    t.rows.push_back({run.impl, context_of(r, run.batch_id), std::to_string(run.rows), format_number(kernels_ms(run)),
                      peak, launches, captured.empty() ? "-" : captured, walls});
  }
  return t;
}

// A stage of the mask path as the peer times it and as our kernels do.
struct StageMap {
  const char* name;
  std::vector<std::string> torch, ours;
};

const std::vector<StageMap>& stage_maps() {
  static const std::vector<StageMap> maps = {
      {"dense logits", {"dense_scores"}, {"dense_logits"}},
      {"level one (block amax + block top-2048)", {"block_amax", "block_topk"}, {"block_amax", "block_topk"}},
      {"own top-k", {"own_topk"}, {"topk"}},
      {"masked top-k", {"mask", "mask_topk"}, {"mask_topk"}},
  };
  return maps;
}

const ImplRun* run_of(const Report& r, const std::string& batch_id, const std::string& impl) {
  for (const ImplRun& run : r.runs)
    if (run.batch_id == batch_id && run.impl == impl && run.status == Disposition::passed) return &run;
  return nullptr;
}

std::string ratio(double torch, double ours) { return ours > 0 ? format_number(torch / ours, 4) + "x" : "-"; }

void peer_rows(const Report& r, const ImplRun& peer, BenchTable& t) {
  const std::string ctx = context_of(r, peer.batch_id);
  const ImplRun* mask = run_of(r, peer.batch_id, "gpu-mask");
  const ImplRun* sparse = run_of(r, peer.batch_id, "gpu-sparse");
  std::vector<std::string> layers;
  for (const KernelFigure& k : peer.kernels)
    if (k.layer != "all" && (layers.empty() || layers.back() != k.layer)) layers.push_back(k.layer);
  for (const std::string& layer : layers)
    for (const StageMap& m : stage_maps()) {
      const double torch = stage_ms(peer, m.torch, layer);
      if (torch < 0) continue;
      const double ours = mask ? stage_ms(*mask, m.ours, layer) : -1;
      t.rows.push_back({ctx, m.name, layer, format_number(torch), ours < 0 ? "-" : format_number(ours), ratio(torch, ours)});
    }
  const double chunk = stage_ms(peer, {"chunk"}, "all");
  if (chunk < 0) return;
  if (mask) t.rows.push_back({ctx, "whole chunk, mask path", "all", format_number(chunk), format_number(kernels_ms(*mask)),
                              ratio(chunk, kernels_ms(*mask))});
  if (sparse)
    t.rows.push_back({ctx, "whole chunk, sparse path", "all", format_number(chunk), format_number(kernels_ms(*sparse)),
                      ratio(chunk, kernels_ms(*sparse))});
}

BenchTable peer_table(const Report& r) {
  BenchTable t{"PyTorch mask path (bench/torch_mask_path.py) against ours",
               {"context", "stage", "layer", "torch ms", "ours ms (gpu-mask kernels)", "ratio torch / ours"},
               {},
               "The peer is the plain PyTorch mask path on the same batch and GPU (bf16 matmul scores, not bit-exact); "
               "ours: sum of kernel medians, each timed alone with L2 flushed."};
  for (const ImplRun& run : r.runs) {
    if (run.impl != kTorchPeerImpl) continue;
    if (run.status != Disposition::passed) {
      t.note += " Not run on " + context_of(r, run.batch_id) + ": " + run.reason;
      continue;
    }
    peer_rows(r, run, t);
  }
  return t;
}

std::string cell_md(const std::string& s) {
  std::string out;
  for (char c : s) out += c == '|' ? std::string("\\|") : std::string(1, c);
  return out;
}

}  // namespace

std::vector<BenchTable> bench_tables(const Report& r) {
  std::vector<BenchTable> out = {ceilings_table(r), kernels_table(r), paths_table(r)};
  bool peer = false;
  for (const ImplRun& run : r.runs) peer |= run.impl == kTorchPeerImpl;
  if (peer) out.push_back(peer_table(r));
  return out;
}

std::string bench_markdown(const Report& r) {
  const EnvironmentInfo& e = r.environment;
  std::ostringstream m;
  m << "# dsa-harness bench\n\nGPU " << e.gpu << (e.gpu_detail.empty() ? "" : " (" + e.gpu_detail + ")") << ", driver "
    << (e.driver.empty() ? "?" : e.driver) << ", CUDA " << (e.cuda.empty() ? "?" : e.cuda) << ", SM clock "
    << (e.sm_clock.empty() ? "?" : e.sm_clock) << "; harness " << e.version << " (" << e.commit << "), "
    << e.started_at << "; " << r.settings.repeat << " samples per kernel, rows " << r.settings.rows << ", seed "
    << r.settings.seed << ".\n";
  for (const BenchTable& t : bench_tables(r)) {
    m << "\n## " << t.title << "\n\n|";
    for (const std::string& h : t.header) m << " " << cell_md(h) << " |";
    m << "\n|";
    for (size_t i = 0; i < t.header.size(); ++i) m << "---|";
    m << "\n";
    for (const std::vector<std::string>& row : t.rows) {
      m << "|";
      for (const std::string& c : row) m << " " << cell_md(c) << " |";
      m << "\n";
    }
    if (!t.note.empty()) m << "\n" << t.note << "\n";
  }
  return m.str();
}

std::string bench_html(const Report& r) {
  std::ostringstream h;
  for (const BenchTable& t : bench_tables(r)) {
    h << "<h2>" << reports::xml_escape(t.title) << "</h2>\n<table><tr>";
    for (const std::string& c : t.header) h << "<th>" << reports::xml_escape(c) << "</th>";
    h << "</tr>\n";
    for (const std::vector<std::string>& row : t.rows) {
      h << "<tr>";
      for (const std::string& c : row) h << "<td>" << reports::xml_escape(c) << "</td>";
      h << "</tr>\n";
    }
    h << "</table>\n";
    if (!t.note.empty()) h << "<p>" << reports::xml_escape(t.note) << "</p>\n";
  }
  std::string page = reports::to_html(r);
  const size_t at = page.find("<h2>Cases</h2>");
  page.insert(at == std::string::npos ? page.size() : at, h.str());
  return page;
}

void write_bench_reports(const Report& r, const std::string& dir) {
  reports::write_text_atomic(dir + "/report.json", reports::to_json_text(r));
  reports::write_text_atomic(dir + "/report.md", bench_markdown(r));
  reports::write_text_atomic(dir + "/report.html", bench_html(r));
}

}  // namespace dsa
