// `inspect FILE`: a readable summary of one batch file. `validate FILE...`: full validation of
// each file, one line per file; exit 4 when any is invalid (after checking them all).
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "harness/batch/batch_io.hpp"
#include "harness/cli/commands.hpp"
#include "harness/batch/content_id.hpp"
#include "core/constants.hpp"
#include "core/errors.hpp"

namespace dsa::cli {
namespace {

std::string human_bytes(uintmax_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = double(bytes);
  int u = 0;
  while (v >= 1024 && u < 4) v /= 1024, ++u;
  char buf[64];
  std::snprintf(buf, sizeof buf, u ? "%.1f %s" : "%.0f %s", v, units[u]);
  return buf;
}

void print_lengths(const Batch& b) {
  std::vector<int32_t> lens = b.compress_len;
  if (lens.empty()) {
    std::printf("L:              (no rows)\n");
    return;
  }
  std::sort(lens.begin(), lens.end());
  const auto zero = std::count(lens.begin(), lens.end(), 0);
  const auto over = std::count_if(lens.begin(), lens.end(), [](int32_t l) { return l > kCandidateWidth; });
  std::printf("L:              min %d / p50 %d / max %d; L = 0: %ld rows; L > 16384: %ld rows\n", lens.front(),
              lens[(lens.size() - 1) / 2], lens.back(), long(zero), long(over));
}

void print_layers(const Batch& b) {
  std::printf("layers:        ");
  if (b.layers.empty()) std::printf(" (none)");
  for (const Layer& l : b.layers) std::printf(" %d %s;", l.id, role_name(l.role));
  std::printf("\n");
}

void print_outputs(const Batch& b) {
  if (b.outputs.empty()) {
    std::printf("outputs:        (none recorded)\n");
    return;
  }
  for (const auto& [name, res] : b.outputs) {
    const auto done = std::count(res.rows_done.begin(), res.rows_done.end(), uint8_t(1));
    std::printf("output:         %s (%s, %s): rows_done %ld/%d%s", name.c_str(), res.implementation.c_str(),
                res.device.c_str(), long(done), b.rows(), res.blocks.empty() ? "" : ", blocks");
    for (const auto& [id, lr] : res.layers) {
      std::printf("; layer %d:%s%s%s%s", id, lr.positions.empty() ? "" : " positions",
                  lr.tail_positions.empty() ? "" : " tail_positions", lr.dense_scores.empty() ? "" : " dense_scores",
                  lr.sparse_scores.empty() ? "" : " sparse_scores");
    }
    if (!res.harness.empty() || !res.recorded_at.empty())  // written by `record`
      std::printf("; recorded by %s at %s", res.harness.empty() ? "?" : res.harness.c_str(),
                  res.recorded_at.empty() ? "?" : res.recorded_at.c_str());
    std::printf("\n");
  }
}

void inspect(const std::string& file) {
  const Batch b = read_batch(file);
  std::printf("file:           %s (%s)\n", file.c_str(), human_bytes(std::filesystem::file_size(file)).c_str());
  std::printf("content ID:     %s\n", content_id(b).c_str());
  std::printf("origin:         %s: %s\n", b.origin.c_str(), b.description.c_str());
  int empty_requests = 0;
  for (int32_t n : b.num_rows) empty_requests += n == 0;
  const int lc_max = b.compressed_len.empty() ? 0 : *std::max_element(b.compressed_len.begin(), b.compressed_len.end());
  std::printf("requests:       %d (%d without rows; max compressed length %d)\n", b.requests(), empty_requests, lc_max);
  std::printf("rows:           %d\n", b.rows());
  print_lengths(b);
  print_layers(b);
  std::printf("source layer:   %d\n", b.source_layer);
  std::printf("topk:           %d (level one: %d blocks of %d)\n", b.topk, kTopkBlocks, kBlockSize);
  std::printf("page size:      %d slots; pool %ld pages; page table width %d\n", b.page_size, long(b.pages),
              b.table_width);
  std::printf("compress ratio: %d\n", b.compress_ratio);
  if (b.tail_rows.empty()) {
    std::printf("tails:          none\n");
  } else {
    int with_tail = 0;
    for (int32_t t : b.tail_rows) with_tail += t > 0;
    std::printf("tails:          %ld rows in %d requests\n", long(b.total_tail_rows), with_tail);
  }
  print_outputs(b);
}

}  // namespace

void add_inspect_command(CLI::App& app) {
  auto* ins = app.add_subcommand("inspect", "Summarise a batch file (requests, rows, L, layers, outputs, content ID)");
  static std::string inspect_file;
  ins->add_option("file", inspect_file, "batch file (HDF5, format v1)")->required();
  ins->callback([] { inspect(inspect_file); });

  auto* val = app.add_subcommand("validate", "Check batch files against every rule of format v1 (exit 4 if any is invalid)");
  static std::vector<std::string> files;
  val->add_option("files", files, "batch files")->required();
  val->callback([] {
    for (const std::string& file : files) {
      try {
        const Batch b = read_batch(file);
        std::printf("%s: valid (%s)\n", file.c_str(), content_id(b).c_str());
      } catch (const InputError& e) {
        std::fprintf(stderr, "error: %s\n", e.what());
        exit_code = kExitInvalid;
      } catch (const std::exception& e) {  // out of memory on an absurd file still names the file
        std::fprintf(stderr, "error: %s: %s\n", file.c_str(), e.what());
        exit_code = kExitInvalid;
      }
    }
  });
}

}  // namespace dsa::cli
