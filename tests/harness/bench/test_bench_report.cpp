// The bench's printed forms: report.md tables (ceilings, kernels with their share of the
// ceilings, paths with peak memory, launches and step times, the peer's ratios) and report.html.
#include "harness/bench/bench_report.hpp"

#include "tests/catch.hpp"
#include "tests/harness/bench/bench_sample.hpp"

using namespace dsa;

namespace {

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// The PyTorch peer's run on the sample's batch (stage names as bench/torch_mask_path.py writes them).
ImplRun peer_run() {
  ImplRun run;
  run.batch_id = "c0ffee0123456789";
  run.impl = kTorchPeerImpl;
  run.device = "NVIDIA H200";
  for (const auto& [stage, layer, ms] : std::vector<std::tuple<std::string, std::string, double>>{
           {"dense_scores", "20", 1070}, {"dense_scores", "24", 1068}, {"mask_topk", "24", 51}, {"mask", "24", 20},
           {"chunk", "all", 5766}})
    run.kernels.push_back(kernel_figure("torch-mask/" + stage, layer, 1, 20, ms, ms * 0.98, ms * 1.02, 0, 0));
  return run;
}

}  // namespace

TEST_CASE("bench report.md: ceilings, kernels with their share, paths") {
  const std::string md = bench_markdown(test::bench_sample());
  INFO(md);
  CHECK(has(md, "## Ceilings (measured in this run)"));
  // 2 GiB in 0.505 ms = 4.252 TB/s.
  CHECK(has(md, "| ceilings/hbm_copy | 4.252 TB/s | 0.505 |"));
  CHECK(has(md, "Not measured: ceilings/fp8_wgmma: not measured in this sample"));
  // dense_logits: 3.409e13 int8 ops at the loop's 6.942e14/s = 49.11 ms of 174.6 ms = 28.1 %.
  CHECK(has(md, "| gpu-sparse | 262144 | 16384 | gpu-sparse/dense_logits | 20 | 1 | 174.6 |"));
  CHECK(has(md, "| 49.11 | 28.1 % |"));
  CHECK(has(md, "| gpu-mask | 262144 | 16384 | 362.5 | 19 GiB | 20: 9, 24: 6 | 20: 3, 24: 3 | 20: 190.5, 24: 50.2 |"));
  // A route's share is listed, without a floor, and not added to the path's sum (362.5 above).
  CHECK(has(md, "| gpu-mask/dense_logits.wgmma | 20 | 1 | 150 | 147..153 | - | - | (a route's share) |"));
  CHECK_FALSE(has(md, "| gpu-mask/graph/step"));  // captured launches only in the paths table
  CHECK_FALSE(has(md, "PyTorch"));  // no peer, no peer table
}

TEST_CASE("bench report.md: the peer's ratio per stage and for the whole chunk") {
  Report r = test::bench_sample();
  r.runs.push_back(peer_run());
  const std::string md = bench_markdown(r);
  INFO(md);
  CHECK(has(md, "## PyTorch mask path (bench/torch_mask_path.py) against ours"));
  CHECK(has(md, "| 262144 | dense logits | 20 | 1070 | 174.9 | 6.118x |"));
  CHECK(has(md, "| 262144 | masked top-k | 24 | 71 | 12.4 | 5.726x |"));
  CHECK(has(md, "| 262144 | whole chunk, mask path | all | 5766 | 362.5 | 15.91x |"));
  CHECK(has(md, "| 262144 | whole chunk, sparse path | all | 5766 | 223.9 | 25.75x |"));
  // Stages the peer did not time are left out, not shown as zero.
  CHECK_FALSE(has(md, "own top-k"));
}

TEST_CASE("bench report.md: a peer that did not run says why") {
  Report r = test::bench_sample();
  ImplRun failed;
  failed.batch_id = "c0ffee0123456789";
  failed.impl = kTorchPeerImpl;
  failed.status = Disposition::not_run;
  failed.reason = "python3 bench/torch_mask_path.py exited 3: no CUDA device for torch";
  r.runs.push_back(failed);
  CHECK(has(bench_markdown(r), "Not run on 262144: python3 bench/torch_mask_path.py exited 3: no CUDA device for torch"));
}

TEST_CASE("bench report.html: the tables before the cases, the latency plots from the replay's page") {
  const std::string html = bench_html(test::bench_sample());
  const size_t tables = html.find("<h2>Kernels (share of ceiling");
  REQUIRE(tables != std::string::npos);
  CHECK(tables < html.find("<h2>Cases</h2>"));
  CHECK(has(html, "<td>28.1 %</td>"));
  CHECK(has(html, "data-plot=\"kernel-latency\""));
}
