#include "harness/impls/plugin_host.hpp"

#include <dlfcn.h>

#include <cmath>
#include <limits>

#include "dsa_harness/plugin.h"
#include "harness/impls/plugin.hpp"

namespace dsa {
namespace {

// What the harness puts in every output entry before a call: an entry still holding it after
// the call was not written.
constexpr int32_t kUnwritten = std::numeric_limits<int32_t>::min();
constexpr int kTimingCapacity = 256;

class Host {
 public:
  Host(const std::string& library, const Batch& batch, const RunOptions& options, std::FILE* progress)
      : library_(library), batch_(batch), progress_(progress) {
    wanted_.assign(size_t(batch.rows()), options.rows.empty() ? 1 : 0);
    for (int r : options.rows) wanted_[size_t(r)] = 1;
  }

  Results run() {
    load();
    view_batch();
    step("create");
    char error[DSA_PLUGIN_ERROR_BYTES] = {0};
    void* state = table_->create(&view_, error);
    if (!state) fail("create failed: " + reason(error));
    Results out;
    try {
      run_steps(state, out);
    } catch (...) {
      table_->destroy(state);  // a failed step too: create .. destroy is the plugin's whole lifetime
      throw;
    }
    step("destroy");
    table_->destroy(state);
    return out;
  }

 private:
  void run_steps(void* state, Results& out) {
    out.implementation = table_->name ? table_->name : library_;
    out.device = table_->device ? table_->device : "";
    out.rows_done = wanted_;
    if (const Layer* source = batch_.source()) publish(state, *source, out);
    for (const Layer* c : batch_.layers_with(Role::consumer)) select(state, *c, out);
    for (const Layer* p : batch_.layers_with(Role::plain)) plain(state, *p, out);
    read_timings(state, out);
  }

  [[noreturn]] void fail(const std::string& what) const { throw PluginError("plugin " + library_ + ": " + what); }
  static std::string reason(const char* error) { return error[0] ? std::string(error) : "(no reason given)"; }

  void step(const std::string& what) const {
    std::fprintf(progress_, "plugin-host: %s\n", what.c_str());
    std::fflush(progress_);
  }

  void load() {
    // RTLD_LOCAL: the plugin's symbols (it may carry its own copy of a library) stay its own.
    void* handle = ::dlopen(library_.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle) fail(std::string("cannot be loaded: ") + ::dlerror());
    auto entry = reinterpret_cast<dsa_plugin_entry_fn>(::dlsym(handle, "dsa_plugin_entry"));
    if (!entry) fail("exports no dsa_plugin_entry (include/dsa_harness/plugin.h)");
    step("dsa_plugin_entry");
    table_ = entry();
    if (!table_) fail("dsa_plugin_entry returned NULL");
    if (table_->abi_version != DSA_PLUGIN_ABI_VERSION)
      fail("ABI version " + std::to_string(table_->abi_version) + ", but this harness loads version " +
           std::to_string(DSA_PLUGIN_ABI_VERSION) + " (rebuild it against this include/dsa_harness/plugin.h)");
    const std::pair<const void*, const char*> needed[] = {
        {reinterpret_cast<const void*>(table_->create), "create"}, {reinterpret_cast<const void*>(table_->publish), "publish"},
        {reinterpret_cast<const void*>(table_->select), "select"}, {reinterpret_cast<const void*>(table_->plain), "plain"},
        {reinterpret_cast<const void*>(table_->destroy), "destroy"}};
    for (const auto& [fn, name] : needed)
      if (!fn) fail(std::string("its table has no ") + name + " function");
  }

  void view_batch() {
    const Batch& b = batch_;
    for (const Layer& l : b.layers)
      layers_.push_back({l.id, int32_t(l.role), l.q.data(), l.q_scale.data(), l.weights.data()});
    view_ = dsa_plugin_batch{b.requests(), b.rows(), b.topk, b.page_size, b.table_width, b.compress_ratio,
                             b.pages, b.total_tail_rows, b.num_rows.data(), b.compressed_len.data(),
                             b.page_table.data(), b.tail_rows.empty() ? nullptr : b.tail_rows.data(),
                             b.compress_len.data(), b.pool.data(), wanted_.data(), int32_t(layers_.size()),
                             layers_.data()};
  }

  const dsa_plugin_layer* layer_view(const Layer& layer) const {
    for (const dsa_plugin_layer& l : layers_)
      if (l.id == layer.id) return &l;
    return nullptr;
  }

  void publish(void* state, const Layer& source, Results& out) {
    out.blocks.assign(size_t(batch_.rows()) * kTopkBlocks, kUnwritten);
    LayerResult& lr = out.layers[source.id];
    lr.positions.assign(size_t(batch_.rows()) * size_t(batch_.topk), kUnwritten);
    call("publish on layer " + std::to_string(source.id), [&](char* error) {
      return table_->publish(state, layer_view(source), out.blocks.data(), lr.positions.data(), error);
    });
    check_blocks(out.blocks);
    check_positions("layer " + std::to_string(source.id), lr.positions, false);
  }

  void select(void* state, const Layer& consumer, Results& out) {
    LayerResult& lr = out.layers[consumer.id];
    lr.positions.assign(size_t(batch_.rows()) * size_t(batch_.topk), kUnwritten);
    if (batch_.total_tail_rows > 0) lr.tail_positions.assign(size_t(batch_.total_tail_rows) * size_t(batch_.topk), kUnwritten);
    call("select on layer " + std::to_string(consumer.id), [&](char* error) {
      return table_->select(state, layer_view(consumer), out.blocks.data(), lr.positions.data(),
                            lr.tail_positions.empty() ? nullptr : lr.tail_positions.data(), error);
    });
    check_positions("layer " + std::to_string(consumer.id), lr.positions, false);
    if (!lr.tail_positions.empty()) check_positions("layer " + std::to_string(consumer.id), lr.tail_positions, true);
  }

  void plain(void* state, const Layer& layer, Results& out) {
    LayerResult& lr = out.layers[layer.id];
    lr.positions.assign(size_t(batch_.rows()) * size_t(batch_.topk), kUnwritten);
    call("plain on layer " + std::to_string(layer.id), [&](char* error) {
      return table_->plain(state, layer_view(layer), lr.positions.data(), error);
    });
    check_positions("layer " + std::to_string(layer.id), lr.positions, false);
  }

  template <class Fn>
  void call(const std::string& what, Fn fn) {
    step(what);
    char error[DSA_PLUGIN_ERROR_BYTES] = {0};
    const int rc = fn(error);
    error[DSA_PLUGIN_ERROR_BYTES - 1] = 0;
    if (rc != 0) fail(what + " failed (returned " + std::to_string(rc) + "): " + reason(error));
  }

  // Rows not wanted get padding; a wanted row's entries must be written and in range.
  void check_blocks(std::vector<int32_t>& blocks) const {
    for (int r = 0; r < batch_.rows(); ++r) {
      int32_t* row = blocks.data() + size_t(r) * kTopkBlocks;
      if (!wanted_[size_t(r)]) {
        std::fill(row, row + kTopkBlocks, kBlockPad);
        continue;
      }
      const int32_t nblocks = (batch_.compress_len[size_t(r)] + kBlockSize - 1) / kBlockSize;
      for (int s = 0; s < kTopkBlocks; ++s)
        if (row[s] != kBlockPad && (row[s] < 0 || row[s] >= nblocks))
          malformed("blocks row " + std::to_string(r) + " slot " + std::to_string(s), row[s],
                    "outside [0, " + std::to_string(nblocks) + ") and not the padding INT32_MAX");
    }
  }

  void check_positions(const std::string& layer, std::vector<int32_t>& positions, bool tails) const {
    const int k = batch_.topk;
    for (int r = 0; r < batch_.rows(); ++r) {
      const int64_t index = tails ? batch_.tail_index(r) : r;
      if (index < 0) continue;
      int32_t* row = positions.data() + size_t(index) * size_t(k);
      if (!wanted_[size_t(r)]) {
        std::fill(row, row + k, kPositionPad);
        continue;
      }
      const int32_t len = batch_.compress_len[size_t(r)];
      for (int s = 0; s < k; ++s)
        if (row[s] < -1 || row[s] >= len)
          malformed(layer + (tails ? " tail" : "") + " row " + std::to_string(r) + " slot " + std::to_string(s), row[s],
                    "outside [-1, L = " + std::to_string(len) + ")");
    }
  }

  [[noreturn]] void malformed(const std::string& where, int32_t value, const std::string& rule) const {
    if (value == kUnwritten) fail("malformed outputs: " + where + " was not written");
    fail("malformed outputs: " + where + ": " + std::to_string(value) + " " + rule);
  }

  void read_timings(void* state, Results& out) {
    if (!table_->timings) return;
    step("timings");
    std::vector<dsa_plugin_timing> t(kTimingCapacity);
    const int32_t n = table_->timings(state, t.data(), kTimingCapacity);
    if (n < 0 || n > kTimingCapacity)
      fail("malformed timings: returned " + std::to_string(n) + " for room of " + std::to_string(kTimingCapacity));
    for (int32_t i = 0; i < n; ++i) out.timings.push_back(timing_of(t[size_t(i)], i));
  }

  KernelTiming timing_of(dsa_plugin_timing& t, int index) const {
    t.kernel[sizeof t.kernel - 1] = 0;
    t.layer[sizeof t.layer - 1] = 0;
    const bool finite = std::isfinite(t.median_ms) && std::isfinite(t.min_ms) && std::isfinite(t.max_ms);
    if (!t.kernel[0] || t.samples < 1 || t.calls < 0 || !finite || t.min_ms < 0 || t.min_ms > t.median_ms ||
        t.median_ms > t.max_ms)
      fail("malformed timings: entry " + std::to_string(index) + " ('" + t.kernel +
           "') needs a name, samples >= 1 and 0 <= min_ms <= median_ms <= max_ms");
    return {t.kernel, t.layer[0] ? t.layer : "all", t.calls, t.samples, t.median_ms, t.min_ms, t.max_ms, t.flops, t.bytes};
  }

  const std::string library_;
  const Batch& batch_;
  std::FILE* progress_;
  std::vector<uint8_t> wanted_;
  const dsa_plugin_v1* table_ = nullptr;
  std::vector<dsa_plugin_layer> layers_;
  dsa_plugin_batch view_{};
};

}  // namespace

Results run_plugin_here(const std::string& library, const Batch& batch, const RunOptions& options, std::FILE* progress) {
  return Host(library, batch, options, progress).run();
}

}  // namespace dsa
